package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/wallet"
)

var _ wallet.Destination = (*Store)(nil)

// Begin describes the store as a destination and returns the session's durable
// checkpoint, writing nothing.
func (s *Store) Begin(ctx context.Context, session wallet.SessionKey) (wallet.DestinationState, error) {
	var st wallet.DestinationState
	var err error
	if st.Settings, err = s.Settings(ctx); err != nil {
		return st, err
	}
	st.Capabilities = s.destinationCapabilities()
	st.Checkpoint, err = s.Checkpoint(ctx, session)
	return st, err
}

// destinationCapabilities is what the store promises as a destination: as many reads at
// once as its pool has connections, each beside any writer, seeing every commit whole
// (PostgreSQL's MVCC).
func (s *Store) destinationCapabilities() wallet.Capabilities {
	return wallet.Capabilities{ConcurrentReads: int(s.pool.Config().MaxConns), ReadsBesideWriter: true}
}

// Commit applies one batch and its checkpoint in one transaction (see wallet.Destination),
// with localstore's semantics: a malformed batch (wallet.Batch.Check) or a row whose text
// PostgreSQL cannot hold (a *wallet.UnstorableError) is refused before any work, a batch of
// another chain is wallet.ErrWrongChain, and the compare-and-set on the session's durable
// checkpoint (wallet.Batch.Against) refuses a stale batch with
// wallet.ErrCheckpointConflict and acknowledges the batch committed last again as a
// Duplicate, applying nothing. The page merges with BRC-40's rules (merger), its ids mapped
// through walletsync_idmaps per source storage; the user is created the way the toolbox's
// findOrInsertUser does when the store has never seen it.
//
// Several server processes may commit over one database at once: each commit holds its
// session's advisory lock from before it reads the checkpoint (lockSession), so two
// commits of one session take turns and the second sees the first's checkpoint. A commit
// that loses a race on a row (a unique key another session inserted first, a deadlock)
// runs again from the start (Store.tx).
func (s *Store) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	t, refs, err := checkBatch(b)
	if err != nil {
		return wallet.Ack{}, fmt.Errorf("commit: %w", err)
	}
	var ack wallet.Ack
	session := b.Checkpoint.Session
	err = s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var chain string
		if err := tx.QueryRow(ctx, "SELECT chain FROM settings").Scan(&chain); err != nil {
			return fmt.Errorf("read settings: %w", classify(err))
		}
		if err := wallet.CheckSameChain(b.Chain, wallet.Chain(chain)); err != nil {
			return err
		}
		if err := lockSession(ctx, tx, session); err != nil {
			return err
		}
		cur, err := readCheckpoint(ctx, tx, session)
		if err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
		if dup, err := b.Against(cur); dup || err != nil {
			ack = wallet.Ack{Checkpoint: cur, Duplicate: dup}
			return err
		}
		userID, _, err := ensureUser(ctx, tx, session.IdentityKey)
		if err != nil {
			return err
		}
		ids := newTableIDs(session.SourceStorage)
		if err := ids.load(ctx, tx, refs); err != nil {
			return err
		}
		m := &merger{ctx: ctx, tx: tx, userID: userID, ids: ids, active: b.Active, mirror: b.Mirror}
		if err := m.mergeRows(t, b.Page.Rows); err != nil {
			return err
		}
		if err := ids.flush(ctx, tx); err != nil {
			return err
		}
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
	return ack, nil
}

// checkBatch refuses what Commit must refuse before any work, and returns the page's table
// and the source ids it refers to.
func checkBatch(b wallet.Batch) (*wallet.Table, map[wallet.TableName][]int64, error) {
	if err := b.Check(); err != nil {
		return nil, nil, err
	}
	if err := checkCheckpoint(b.Checkpoint); err != nil {
		return nil, nil, err
	}
	t, _ := wallet.LookupTable(b.Page.Table)
	if err := checkText(t, b.Page.Rows); err != nil {
		return nil, nil, err
	}
	refs, err := brc40.ReferencedIDs(t, b.Page.Rows)
	return t, refs, err
}

// checkSession refuses a session key that PostgreSQL's text cannot hold.
func checkSession(k wallet.SessionKey) error {
	return checkCheckpoint(wallet.Checkpoint{Session: k})
}

// checkCheckpoint refuses a checkpoint whose text PostgreSQL cannot hold (a
// *wallet.UnstorableError naming its column in walletsync_checkpoints).
func checkCheckpoint(cp wallet.Checkpoint) error {
	for _, f := range []struct{ column, value string }{
		{"source_storage", cp.Session.SourceStorage}, {"identity_key", cp.Session.IdentityKey}, {"mode", string(cp.Mode)},
		{"cursor", string(cp.Cursor)}, {"view", cp.View}, {"catch_up_cursor", string(cp.CatchUpCursor)},
	} {
		if reason := unstorable(f.value); reason != "" {
			return &wallet.UnstorableError{Table: checkpointTable, Column: f.column, Key: []any{wallet.ShortKey(cp.Session.IdentityKey, 16)}, Reason: reason}
		}
	}
	return nil
}
