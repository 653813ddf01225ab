package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// HoldReads makes every read of v run fn after its queries, while it still holds the read.
func HoldReads(v *View, fn func()) { v.guard.AfterRead = fn }

// PoolOf returns the store's pool, for tests that look at its connections.
func PoolOf(s *Store) *pgxpool.Pool { return s.pool }

// Ending is closed once v began to end (its reads are interrupted).
func Ending(v *View) <-chan struct{} { return v.guard.Context().Done() }

// Migrations is the number of steps in this binary's schema history.
var Migrations = len(migrations)

// FailStatement runs a failing statement in v's transaction, which aborts it.
func FailStatement(ctx context.Context, v *View) error {
	_, err := v.tx.Exec(ctx, "SELECT 1/0")
	return err
}
