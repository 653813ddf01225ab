package localstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	"walletsync/wallet"
)

// Snapshot lifetimes (wallet's, which every store's views share).
const (
	DefaultSnapshotLifetime = wallet.DefaultViewLifetime
	MinSnapshotLifetime     = wallet.MinViewLifetime
	MaxSnapshotLifetime     = wallet.MaxViewLifetime
)

// Clock reads the two clocks a snapshot's lifetime is enforced on (see wallet.Clock).
type Clock = wallet.Clock

// SnapshotOptions tune OpenSnapshot. The zero value is the defaults.
type SnapshotOptions struct {
	// Lifetime, counted from the open request: DefaultSnapshotLifetime when zero, accepted
	// from MinSnapshotLifetime to MaxSnapshotLifetime.
	Lifetime time.Duration
	// Wait makes OpenSnapshot wait for one of the store's open views to close instead of
	// failing at once with wallet.ErrSnapshotBusy.
	Wait bool
	// Clock overrides wallet.SystemClock.
	Clock Clock
}

// Snapshot is a consistent read-only view of a store: a read transaction pinned on a
// dedicated connection. Writers keep committing while it is open (WAL) and the view never
// sees their commits. It serves one read at a time; a concurrent read is refused at once
// with wallet.ErrConcurrentRead. It ends on Close, when the context given to OpenSnapshot is
// done, or when its lifetime runs out on the monotonic or the wall clock; after that every
// read fails with wallet.ErrSnapshotClosed or wallet.ErrSnapshotExpired, and a read that was
// in flight has its result discarded. The caller owns Close, which is always safe to call.
type Snapshot struct {
	id    string
	store *Store
	// guard enforces the lifetime and the one-read rule, and ends the view.
	guard *wallet.ViewGuard
	// ctx is the guard's: done when the view ends; queries run under it so that an expiry
	// or a close interrupts a read in flight.
	ctx context.Context

	conn    *sql.Conn
	tx      *sql.Tx
	users   map[string]int64     // used only inside a read
	stmts   map[string]*sql.Stmt // prepared on tx, used only inside a read
	journal *JournalState        // nil when the file has no walletsync journal
}

// OpenSnapshot pins a read transaction on a dedicated connection. At most Options.MaxViews
// views per store (one by default) are open at a time: one more OpenSnapshot fails with
// wallet.ErrSnapshotBusy, or waits when opts.Wait is set. The lifetime counts from this call, not from when the view was granted.
// A store that holds part of an unfinished merge opens no view (*wallet.ImportInProgressError).
func (s *Store) OpenSnapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	guard, err := wallet.NewViewGuard(opts.Lifetime, opts.Clock)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	v := &Snapshot{store: s, guard: guard, ctx: guard.Context(), users: map[string]int64{}, stmts: map[string]*sql.Stmt{}}

	if opts.Wait {
		select {
		case s.viewSlot <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("open snapshot: %w", ctx.Err())
		}
	} else {
		select {
		case s.viewSlot <- struct{}{}:
		default:
			return nil, fmt.Errorf("open snapshot: %w", wallet.ErrSnapshotBusy)
		}
	}
	if guard.Remaining() <= 0 {
		<-s.viewSlot
		return nil, fmt.Errorf("open snapshot: %w", wallet.ErrSnapshotExpired)
	}
	b := make([]byte, 8)
	rand.Read(b)
	v.id = hex.EncodeToString(b)

	if err := v.pin(ctx); err != nil {
		guard.End(wallet.ErrSnapshotClosed)
		<-s.viewSlot
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	// Release the connection and the WAL it pins as soon as the view ends, even if nobody
	// reads again: an abandoned view must not hold back checkpoints for an hour.
	guard.Arm(ctx, func() {
		for _, st := range v.stmts {
			st.Close()
		}
		v.tx.Rollback()
		v.conn.Close()
		<-s.viewSlot
	})
	// A wallet that holds part of an unfinished merge is read by no sync and no export.
	// (Checked after the pin, so that it never delays the lifetime checks above.)
	if err := s.ImportInProgress(ctx); err != nil {
		v.Close()
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	return v, nil
}

// pin begins the read transaction and performs its first read, which is the moment WAL
// fixes the snapshot; it reads the journal's bounds as of that moment.
func (v *Snapshot) pin(ctx context.Context) error {
	conn, err := v.store.viewDB.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	tx, err := conn.BeginTx(v.ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return classify(err)
	}
	var hasJournal int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = ?", journalStateTable).Scan(&hasJournal); err != nil {
		tx.Rollback()
		conn.Close()
		return classify(err)
	}
	if hasJournal == 1 {
		j, err := readJournalState(ctx, tx)
		if err != nil {
			tx.Rollback()
			conn.Close()
			return err
		}
		v.journal = &j
	}
	v.conn, v.tx = conn, tx
	return nil
}

// ID identifies the view; cursors carry it.
func (v *Snapshot) ID() string { return v.id }

// Journal returns the change journal's high-water mark as of the snapshot, and whether the
// journal holds every change above since. Without a walletsync journal (a file opened
// read-only that walletsync never wrote to) it returns 0, false.
func (v *Snapshot) Journal(since int64) (highWater int64, covered bool) {
	if v.journal == nil {
		return 0, false
	}
	return v.journal.HighWater, v.journal.CoversSince(since)
}

// Close ends the view and releases its connection and its view slot. It waits for a
// read in flight to drain (its result is discarded). Closing twice is harmless.
func (v *Snapshot) Close() error {
	v.guard.End(wallet.ErrSnapshotClosed)
	return nil
}

// read runs fn as the view's one read (wallet.ViewGuard.Read): it refuses a concurrent
// read at once, refuses a read on an ended view, and discards fn's result when the view
// ended while fn ran.
func (v *Snapshot) read(fn func() error) error {
	return v.guard.Read(context.Background(), func(context.Context) error { return fn() })
}
