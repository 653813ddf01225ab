package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"walletsync/brc40"
	"walletsync/wallet"
)

// Store is both ends of a sync: a wallet.Source (its snapshot views) and a
// wallet.Destination (page commits with their checkpoints).
var (
	_ wallet.Source      = (*Store)(nil)
	_ wallet.Destination = (*Store)(nil)
	_ wallet.View        = (*Snapshot)(nil)
)

// Commit boundaries reported to Options.CommitHook.
const (
	// HookRowsWritten: the page's rows are written inside the transaction, not committed.
	HookRowsWritten = "rows-written"
	// HookCommitted: the transaction is durable; the acknowledgement is not yet returned.
	HookCommitted = "committed"
)

// Describe returns the store's settings and what it offers as a sync peer (Capabilities).
func (s *Store) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	settings, err := s.Settings(ctx)
	if err != nil {
		return settings, wallet.Capabilities{}, err
	}
	caps, err := s.Capabilities(ctx)
	return settings, caps, err
}

// Capabilities returns what the store promises: snapshot views, its change journal when it
// keeps one, MaxReaders concurrent reads, and reads beside a writer when the file is in WAL
// mode. The journal mode is the one SQLite reports in force now, not the one Open asked
// for: SQLite keeps a file's old mode, without an error, where WAL cannot work (a file
// system without shared memory), and in a rollback journal a commit waits for every reader
// instead of running beside them.
func (s *Store) Capabilities(ctx context.Context) (wallet.Capabilities, error) {
	var mode string
	if err := s.readDB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return wallet.Capabilities{}, fmt.Errorf("read journal mode: %w", classify(err))
	}
	_, journalErr := s.JournalState(ctx)
	return wallet.Capabilities{Snapshots: true, Journal: journalErr == nil, ConcurrentReads: MaxReaders,
		ReadsBesideWriter: strings.EqualFold(mode, "wal")}, nil
}

// Begin describes the store as a destination and returns the session's durable checkpoint.
func (s *Store) Begin(ctx context.Context, session wallet.SessionKey) (wallet.DestinationState, error) {
	var st wallet.DestinationState
	var err error
	if st.Settings, st.Capabilities, err = s.Describe(ctx); err != nil {
		return st, err
	}
	if err := importInProgress(ctx, s.readDB, s.path, session.SourceStorage); err != nil {
		return st, err
	}
	st.Checkpoint, err = s.Checkpoint(ctx, session)
	return st, err
}

// OpenView opens a snapshot view for a sync session, waiting for the store's view slot.
func (s *Store) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	v, err := s.OpenSnapshot(ctx, SnapshotOptions{Lifetime: lifetime, Wait: true})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Commit applies one batch and its checkpoint in one transaction (see wallet.Destination).
// The merge follows BRC-40; id maps are kept per source storage in walletsync's own table.
// The user is created the way the toolbox's findOrInsertUser does when the store has never
// seen it, so a fresh destination file can receive a first page of any table.
func (s *Store) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	if err := b.Check(); err != nil {
		return wallet.Ack{}, fmt.Errorf("commit: %w", err)
	}
	var ack wallet.Ack
	s.walCP.pageCommit() // defers background WAL checkpoints while pages stream in
	defer s.walCP.pageCommit()
	// A page committed into a wallet the app has open can fail an app transaction that read
	// before it and writes after it; each page first waits a while for the app (awaitQuiet),
	// and stays one short transaction.
	if err := s.awaitQuiet(ctx); err != nil {
		return wallet.Ack{}, fmt.Errorf("commit: %w", err)
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var chain string
		if err := tx.QueryRowContext(ctx, "SELECT chain FROM settings LIMIT 1").Scan(&chain); err != nil {
			return classify(err)
		}
		if err := wallet.CheckSameChain(b.Chain, wallet.Chain(chain)); err != nil {
			return err
		}
		cur, err := readCheckpoint(ctx, tx, b.Checkpoint.Session)
		if err != nil {
			return err
		}
		if dup, err := b.Against(cur); dup || err != nil {
			ack = wallet.Ack{Checkpoint: cur, Duplicate: dup}
			return err
		}
		// The page of an import's merge is recorded in its undo log; while a merge is
		// unfinished, no other session writes to the store.
		if err := importInProgress(ctx, tx, s.path, b.Checkpoint.Session.SourceStorage); err != nil {
			return err
		}
		undo, err := mergingImport(ctx, tx, b.Checkpoint.Session.SourceStorage)
		if err != nil {
			return err
		}
		if err := undo.begin(ctx, tx); err != nil {
			return err
		}
		userID, created, err := ensureUser(ctx, tx, b.Checkpoint.Session.IdentityKey)
		if err != nil {
			return err
		}
		if created {
			if err := undo.insertedUser(ctx, tx, userID); err != nil {
				return err
			}
		}
		ids := newTableIDs(b.Checkpoint.Session.SourceStorage)
		m := newMerger(ctx, tx, userID, ids, b.Active)
		m.mirror = b.Mirror
		m.undo = undo
		defer m.close()
		t, _ := wallet.LookupTable(b.Page.Table)
		refs, err := brc40.ReferencedIDs(t, b.Page.Rows)
		if err != nil {
			return err
		}
		if err := ids.load(ctx, m.stmt, refs); err != nil {
			return err
		}
		if err := m.mergePage(t, b.Page.Rows); err != nil {
			return err
		}
		if err := ids.flush(ctx, m.stmt); err != nil {
			return err
		}
		if err := undo.journalled(ctx, tx); err != nil {
			return err
		}
		s.hook(HookRowsWritten)
		cp := b.Checkpoint
		cp.UpdatedAt = wallet.Now()
		if err := writeCheckpoint(ctx, tx, cp); err != nil {
			return err
		}
		ack = wallet.Ack{Checkpoint: cp, Inserts: m.inserts, Updates: m.updates}
		return nil
	})
	if err != nil {
		return wallet.Ack{}, fmt.Errorf("commit %s page %d: %w", b.Page.Table, b.Checkpoint.Seq, err)
	}
	if !ack.Duplicate {
		s.hook(HookCommitted)
	}
	return ack, nil
}

func (s *Store) hook(point string) {
	if s.opts.CommitHook != nil {
		s.opts.CommitHook(point)
	}
}
