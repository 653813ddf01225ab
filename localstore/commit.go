package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

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
	if err := checkBatch(b); err != nil {
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
		if cur.Seq == b.Checkpoint.Seq && samePosition(cur, b.Checkpoint) {
			ack = wallet.Ack{Checkpoint: cur, Duplicate: true}
			return nil
		}
		if cur.Seq != b.Expect {
			return fmt.Errorf("session %s: expected sequence %d, the destination holds %d: %w", b.Checkpoint.Session, b.Expect, cur.Seq, wallet.ErrCheckpointConflict)
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
		m.undo = undo
		defer m.close()
		t, _ := wallet.LookupTable(b.Page.Table)
		if err := ids.load(ctx, m.stmt, referencedIDs(t, b.Page.Rows)); err != nil {
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

// checkBatch refuses a malformed batch before any work.
func checkBatch(b wallet.Batch) error {
	cp := b.Checkpoint
	switch {
	case cp.Session.SourceStorage == "" || cp.Session.IdentityKey == "":
		return fmt.Errorf("batch without a session: %w", wallet.ErrInvalidArgument)
	case cp.Seq != b.Expect+1:
		return fmt.Errorf("batch sequence %d does not follow %d: %w", cp.Seq, b.Expect, wallet.ErrInvalidArgument)
	case cp.Table < 0 || cp.Table >= len(wallet.SyncOrder):
		return fmt.Errorf("batch table position %d: %w", cp.Table, wallet.ErrInvalidArgument)
	}
	t, err := wallet.LookupTable(b.Page.Table)
	if err != nil {
		return err
	}
	// A catch-up page belongs to a table before the traversal's position; no page belongs
	// to a table after it.
	if pos := slices.Index(wallet.SyncOrder, t); len(b.Page.Rows) > 0 && pos > cp.Table {
		return fmt.Errorf("batch of %s rows at table position %d: %w", t.Name, cp.Table, wallet.ErrInvalidArgument)
	}
	if cp.CatchUpTable < 0 || cp.CatchUpTable > cp.Table {
		return fmt.Errorf("batch catch-up table %d beyond its position %d: %w", cp.CatchUpTable, cp.Table, wallet.ErrInvalidArgument)
	}
	for _, r := range b.Page.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("%s row of %d values: %w", t.Name, len(r), wallet.ErrInvalidArgument)
		}
	}
	return nil
}

// referencedIDs collects the source ids a page of t refers to, by the table they belong to:
// its own ids, its foreign keys, and a proof request's notify ids.
func referencedIDs(t *wallet.Table, rows []wallet.Row) map[wallet.TableName][]int64 {
	seen := map[wallet.TableName]map[int64]bool{}
	add := func(table wallet.TableName, v any) {
		id, ok := v.(int64)
		if !ok {
			return
		}
		if seen[table] == nil {
			seen[table] = map[int64]bool{}
		}
		seen[table][id] = true
	}
	for _, r := range rows {
		if t.ID != "" {
			add(t.Name, r[t.Col(t.ID)])
		}
		for _, ref := range t.Refs {
			add(ref.Target, r[t.Col(ref.Column)])
		}
		if t == wallet.ProvenTxReqs {
			ids, _ := wallet.NotifyTransactionIDs(r[t.Col("notify")].(string))
			for _, id := range ids {
				add(wallet.TableTransactions, id)
			}
		}
	}
	out := map[wallet.TableName][]int64{}
	for table, ids := range seen {
		for id := range ids {
			out[table] = append(out[table], id)
		}
	}
	return out
}
