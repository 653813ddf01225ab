package localstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"walletsync/wallet"
)

// Snapshot lifetimes.
const (
	DefaultSnapshotLifetime = 5 * time.Minute
	MinSnapshotLifetime     = time.Millisecond
	MaxSnapshotLifetime     = time.Hour
)

// Clock reads the two clocks a snapshot's lifetime is enforced on. The monotonic clock
// cannot jump; the wall clock can (NTP, sleep, a person changing it), and a view must not
// outlive its lifetime on either. Tests inject both.
type Clock struct {
	Mono func() time.Duration // time since an arbitrary fixed origin; never goes back
	Wall func() time.Time     // wall-clock time without a monotonic reading
}

// SystemClock returns the process's real clocks.
func SystemClock() Clock {
	origin := time.Now()
	return Clock{
		Mono: func() time.Duration { return time.Since(origin) },
		Wall: func() time.Time { return time.Now().Round(0) },
	}
}

// SnapshotOptions tune OpenSnapshot. The zero value is the defaults.
type SnapshotOptions struct {
	// Lifetime, counted from the open request: DefaultSnapshotLifetime when zero, accepted
	// from MinSnapshotLifetime to MaxSnapshotLifetime.
	Lifetime time.Duration
	// Wait makes OpenSnapshot wait for the store's open view to close instead of failing
	// at once with wallet.ErrSnapshotBusy.
	Wait bool
	// Clock overrides SystemClock.
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
	id       string
	store    *Store
	clock    Clock
	lifetime time.Duration
	monoOpen time.Duration
	wallOpen time.Time

	// ctx is cancelled when the view ends; queries run under it so that an expiry or a
	// close interrupts a read in flight.
	ctx    context.Context
	cancel context.CancelFunc

	reading atomic.Bool // set for the duration of one read: refuses a concurrent one
	readMu  sync.Mutex  // held during a read and by close, so close waits for a read to drain

	mu       sync.Mutex // guards the fields below
	conn     *sql.Conn
	tx       *sql.Tx
	ended    error // nil while open, then ErrSnapshotClosed or ErrSnapshotExpired
	users    map[string]int64
	stmts    map[string]*sql.Stmt // prepared on tx, used only inside a read
	journal  *JournalState        // nil when the file has no walletsync journal
	stopTime func() bool
	stopCtx  func() bool

	afterQuery func() // test seam: runs inside a read, after its queries
}

// OpenSnapshot pins a read transaction on a dedicated connection. Only one view per store is
// open at a time: a second OpenSnapshot fails with wallet.ErrSnapshotBusy, or waits when
// opts.Wait is set. The lifetime counts from this call, not from when the view was granted.
// A store that holds part of an unfinished merge opens no view (*wallet.ImportInProgressError).
func (s *Store) OpenSnapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	if opts.Clock.Mono == nil || opts.Clock.Wall == nil {
		opts.Clock = SystemClock()
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = DefaultSnapshotLifetime
	}
	if opts.Lifetime < MinSnapshotLifetime || opts.Lifetime > MaxSnapshotLifetime {
		return nil, fmt.Errorf("open snapshot: lifetime %v outside %v..%v: %w", opts.Lifetime, MinSnapshotLifetime, MaxSnapshotLifetime, wallet.ErrInvalidArgument)
	}
	v := &Snapshot{store: s, clock: opts.Clock, lifetime: opts.Lifetime,
		monoOpen: opts.Clock.Mono(), wallOpen: opts.Clock.Wall(), users: map[string]int64{}, stmts: map[string]*sql.Stmt{}}

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
	remaining := v.remaining()
	if remaining <= 0 {
		<-s.viewSlot
		return nil, fmt.Errorf("open snapshot: %w", wallet.ErrSnapshotExpired)
	}
	b := make([]byte, 8)
	rand.Read(b)
	v.id = hex.EncodeToString(b)
	v.ctx, v.cancel = context.WithCancel(context.Background())

	if err := v.pin(ctx); err != nil {
		v.cancel()
		<-s.viewSlot
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	// Release the connection and the WAL it pins as soon as the view ends, even if nobody
	// reads again: an abandoned view must not hold back checkpoints for an hour.
	// Under mu: a timer that fires at once must find stopTime and stopCtx set.
	v.mu.Lock()
	t := time.AfterFunc(remaining, func() { v.end(wallet.ErrSnapshotExpired) })
	v.stopTime = t.Stop
	v.stopCtx = context.AfterFunc(ctx, func() { v.end(wallet.ErrSnapshotClosed) })
	v.mu.Unlock()
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

// remaining is the lifetime left on the stricter of the two clocks.
func (v *Snapshot) remaining() time.Duration {
	mono := v.lifetime - (v.clock.Mono() - v.monoOpen)
	wall := v.lifetime - v.clock.Wall().Sub(v.wallOpen)
	return min(mono, wall)
}

// check returns nil while the view may serve reads, else why not. It has no side effects,
// so it is safe under readMu; callers end an expired view after releasing it.
func (v *Snapshot) check() error {
	v.mu.Lock()
	ended := v.ended
	v.mu.Unlock()
	if ended != nil {
		return ended
	}
	if v.remaining() <= 0 {
		return wallet.ErrSnapshotExpired
	}
	return nil
}

// Close ends the view and releases its connection and the store's view slot. It waits for a
// read in flight to drain (its result is discarded). Closing twice is harmless.
func (v *Snapshot) Close() error {
	v.end(wallet.ErrSnapshotClosed)
	return nil
}

// end records why the view ended (the first reason wins), interrupts a read in flight,
// waits for it, then releases everything.
func (v *Snapshot) end(reason error) {
	v.mu.Lock()
	if v.ended != nil {
		v.mu.Unlock()
		return
	}
	v.ended = reason
	stopTime, stopCtx := v.stopTime, v.stopCtx
	v.mu.Unlock()

	v.cancel()
	v.readMu.Lock() // wait for the read in flight, if any
	defer v.readMu.Unlock()
	stopTime()
	stopCtx()
	for _, st := range v.stmts {
		st.Close()
	}
	v.tx.Rollback()
	v.conn.Close()
	<-v.store.viewSlot
}

// read runs fn as the view's one read. It refuses a concurrent read at once, refuses a
// read on an ended view, and discards fn's result when the view ended while fn ran (a late
// result must never be used).
func (v *Snapshot) read(fn func() error) error {
	if !v.reading.CompareAndSwap(false, true) {
		return wallet.ErrConcurrentRead
	}
	defer v.reading.Store(false)
	v.readMu.Lock()
	err := v.check()
	if err == nil {
		err = fn()
		if v.afterQuery != nil {
			v.afterQuery()
		}
		if ended := v.check(); ended != nil {
			err = ended
		}
	}
	v.readMu.Unlock()
	if err == wallet.ErrSnapshotExpired {
		v.end(err)
	}
	return err
}
