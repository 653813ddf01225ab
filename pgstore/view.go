package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"walletsync/wallet"
)

// SnapshotOptions tune OpenSnapshot. The zero value is the defaults.
type SnapshotOptions struct {
	// Lifetime, counted from the open request: wallet.DefaultViewLifetime when zero,
	// accepted from wallet.MinViewLifetime to wallet.MaxViewLifetime.
	Lifetime time.Duration
	// Clock overrides wallet.SystemClock.
	Clock wallet.Clock
}

// View is a consistent read-only view of the store: a REPEATABLE READ, READ ONLY
// transaction held for the view's lifetime on a pooled connection of its own. Writers,
// on this process's pool or any other process's, keep committing while it is open
// (PostgreSQL's MVCC) and the view never sees their commits. Its snapshot is exported
// (SnapshotID), so that a transaction of another connection or process can read in exactly
// the same snapshot (SET TRANSACTION SNAPSHOT) while this view stays open.
//
// It follows localstore's Snapshot rules (wallet.ViewGuard): one read at a time (a
// concurrent read is wallet.ErrConcurrentRead), and an end (Close, the open request's
// context done, the lifetime run out on either clock) after which every read fails with
// wallet.ErrSnapshotClosed or wallet.ErrSnapshotExpired and a read in flight is
// interrupted and its result discarded. Close is idempotent and safe while a read is in
// flight. Ending releases the connection and the store's view slot.
type View struct {
	id       string
	snapshot string
	journal  wallet.JournalBounds
	guard    *wallet.ViewGuard
	conn     *pgxpool.Conn
	pg       *pgconn.PgConn // conn's, kept: a released pgxpool.Conn must not be touched
	tx       pgx.Tx
}

// OpenView opens a view with the given lifetime (see OpenSnapshot); it is wallet.Source's
// OpenView.
func (s *Store) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	v, err := s.OpenSnapshot(ctx, SnapshotOptions{Lifetime: lifetime})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// OpenSnapshot pins a snapshot on a connection of its own and exports it. A store holds at
// most Options.MaxViews views open at once, so that views never take the whole pool from
// the writers: one more is refused at once with wallet.ErrSnapshotBusy, which a server
// passes on as "busy, retry" rather than queueing a request for minutes. The lifetime
// counts from this call.
func (s *Store) OpenSnapshot(ctx context.Context, opts SnapshotOptions) (*View, error) {
	guard, err := wallet.NewViewGuard(opts.Lifetime, opts.Clock)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	select {
	case s.views <- struct{}{}:
	default:
		return nil, fmt.Errorf("open snapshot: %d views open: %w", cap(s.views), wallet.ErrSnapshotBusy)
	}
	if guard.Remaining() <= 0 {
		<-s.views
		return nil, fmt.Errorf("open snapshot: %w", wallet.ErrSnapshotExpired)
	}
	b := make([]byte, 8)
	rand.Read(b)
	v := &View{id: hex.EncodeToString(b), guard: guard}
	if err := v.pin(ctx, s.pool); err != nil {
		guard.End(wallet.ErrSnapshotClosed) // nothing to release yet
		<-s.views
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	guard.Arm(ctx, func() {
		// A bounded rollback: a connection that does not answer is closed by the pool
		// (Release destroys a connection still inside a transaction).
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v.tx.Rollback(rctx)
		v.conn.Release()
		<-s.views
	})
	return v, nil
}

// pin begins the view's transaction, fixes its snapshot with the first statement (which
// exports it), and reads the journal's bounds in that snapshot.
func (v *View) pin(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err == nil {
		err = tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&v.snapshot)
		if err == nil {
			v.journal, err = ReadJournal(ctx, tx)
		}
		if err != nil {
			tx.Rollback(context.Background())
		}
	}
	if err != nil {
		conn.Release()
		return classify(err)
	}
	v.conn, v.pg, v.tx = conn, conn.Conn().PgConn(), tx
	return nil
}

// ID identifies the view; cursors carry it.
func (v *View) ID() string { return v.id }

// SnapshotID is the exported snapshot's identifier (pg_export_snapshot). A REPEATABLE
// READ transaction on any connection to the same database that runs
// SET TRANSACTION SNAPSHOT '<id>' first sees exactly what this view sees, for as long as
// this view is open (PostgreSQL drops the export when the exporting transaction ends).
func (v *View) SnapshotID() string { return v.snapshot }

// Journal returns the view's journal high-water mark, and whether the journal holds every
// change above since (wallet.JournalBounds.CoversSince).
func (v *View) Journal(since int64) (highWater int64, covered bool) {
	return v.journal.HighWater, v.journal.CoversSince(since)
}

// Resume returns this view's cursor for the key of c, a cursor another view of this store
// issued for table (wallet.ResumeCursor).
func (v *View) Resume(table wallet.TableName, c wallet.Cursor) (wallet.Cursor, error) {
	return wallet.ResumeCursor(v.id, table, c)
}

// ReadPage reads the next page (see the package function ReadPage) in the view's
// transaction, as the view's one read.
func (v *View) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	var page wallet.Page
	var readErr error
	err := v.guard.Read(ctx, func(ctx context.Context) error {
		page, readErr = ReadPage(ctx, v.tx, v.id, req)
		return readErr
	})
	switch {
	case err == nil:
		return page, nil
	case err == readErr:
		if v.pg.IsClosed() || v.pg.TxStatus() == 'E' {
			// A failed statement aborts PostgreSQL's transaction (an interrupted one may
			// close the connection too), and the snapshot goes with it: the view cannot
			// serve another read, and says so with ErrSnapshotClosed from now on, so that
			// its session opens a new one.
			v.guard.End(wallet.ErrSnapshotClosed)
		}
		return wallet.Page{}, err
	}
	return wallet.Page{}, fmt.Errorf("read page %s: %w", req.Table, err) // the guard's refusal
}

// Close ends the view and releases its connection and the store's view slot. It waits for
// a read in flight to drain (its result is discarded). Closing twice is harmless.
func (v *View) Close() error {
	v.guard.End(wallet.ErrSnapshotClosed)
	return nil
}

// Describe returns the store's settings and capabilities (wallet.Source).
func (s *Store) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	settings, err := s.Settings(ctx)
	if err != nil {
		return settings, wallet.Capabilities{}, err
	}
	return settings, s.Capabilities(), nil
}

// Capabilities returns what the store promises: snapshot views, the change journal,
// Options.MaxViews concurrent reads (one per view), and reads beside a writer: PostgreSQL's
// MVCC shows every snapshot the database before or after a transaction, never part of it.
func (s *Store) Capabilities() wallet.Capabilities {
	return wallet.Capabilities{Snapshots: true, Journal: true, ConcurrentReads: cap(s.views), ReadsBesideWriter: true}
}

var (
	_ wallet.Source = (*Store)(nil)
	_ wallet.View   = (*View)(nil)
)
