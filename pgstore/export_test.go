package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// HoldReads makes every read of v run fn after its queries, while it still holds the read.
func HoldReads(v *View, fn func()) { v.guard.AfterRead = fn }

// PoolOf returns the store's pool, for tests that look at its connections.
func PoolOf(s *Store) *pgxpool.Pool { return s.pool }

// Ending is closed once v began to end (its reads are interrupted).
func Ending(v *View) <-chan struct{} { return v.guard.Context().Done() }

// HeldLocks is the advisory lock space of the owners' connections, for tests that find
// an owner's backend in pg_locks.
const HeldLocks = heldLocks

// OpenPlainView opens a shared view whose state is nothing: the sharing mechanics, without
// a source's pages.
func (s *Store) OpenPlainView(ctx context.Context, identity string, lifetime time.Duration, admit func(identityViews, allViews int) error) (string, error) {
	handle, _, err := s.openShared(ctx, identity, time.Now(), lifetime, 0, admit, func(context.Context, pgx.Tx) (string, []byte, error) {
		return "plain", []byte{}, nil
	})
	return handle, err
}

// ReadPlainView runs fn in the snapshot of identity's view under handle, as a page read
// does on whichever process serves it.
func (s *Store) ReadPlainView(ctx context.Context, identity, handle string, fn func(pgx.Tx) error) error {
	row, err := s.lookupShared(ctx, identity, handle)
	if err != nil {
		return err
	}
	return s.inSnapshot(ctx, row, fn)
}

// ClosePlainView closes identity's view under handle from this process.
func (s *Store) ClosePlainView(ctx context.Context, identity, handle string) error {
	return s.closeShared(ctx, identity, handle)
}

// Migrations is the number of steps in this binary's schema history.
var Migrations = len(migrations)

// FailStatement runs a failing statement in v's transaction, which aborts it.
func FailStatement(ctx context.Context, v *View) error {
	_, err := v.tx.Exec(ctx, "SELECT 1/0")
	return err
}

// IdentityJournalWalk is how many journal entries of a table IdentityHighWater looks at.
const IdentityJournalWalk = identityJournalWalk
