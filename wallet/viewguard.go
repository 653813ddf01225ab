package wallet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Snapshot view lifetimes, counted from the open request.
const (
	DefaultViewLifetime = 5 * time.Minute
	MinViewLifetime     = time.Millisecond
	MaxViewLifetime     = time.Hour
)

// Clock reads the two clocks a view's lifetime is enforced on. The monotonic clock cannot
// jump; the wall clock can (NTP, sleep, a person changing it), and a view must not outlive
// its lifetime on either. Tests inject both.
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

// ViewGuard enforces the rules every snapshot view shares, whatever holds its snapshot: a
// lifetime counted from the open request on both clocks, one read at a time (a concurrent
// read is refused at once with ErrConcurrentRead), and an end (Close, the open context
// done, the lifetime run out) after which every read fails with ErrSnapshotClosed or
// ErrSnapshotExpired and a read that was in flight has its result discarded. The end
// interrupts a read in flight (Context), waits for it to drain, then releases the view's
// resources exactly once.
type ViewGuard struct {
	clock    Clock
	lifetime time.Duration
	monoOpen time.Duration
	wallOpen time.Time

	// ctx is cancelled when the view ends; reads run under it so that an expiry or a
	// close interrupts a read in flight.
	ctx    context.Context
	cancel context.CancelFunc

	reading atomic.Bool // set for the duration of one read: refuses a concurrent one
	readMu  sync.Mutex  // held during a read and by end, so end waits for a read to drain

	mu       sync.Mutex // guards the fields below
	ended    error      // nil while open, then ErrSnapshotClosed or ErrSnapshotExpired
	release  func()
	stopTime func() bool
	stopCtx  func() bool

	// AfterRead, when set, runs inside every read after its work (a test seam: it holds a
	// read in flight). Set it before the first read.
	AfterRead func()
}

// NewViewGuard starts a view's lifetime: lifetime 0 means DefaultViewLifetime, anything
// outside MinViewLifetime..MaxViewLifetime is ErrInvalidArgument. A zero clock means
// SystemClock. Call Arm once the view holds its snapshot.
func NewViewGuard(lifetime time.Duration, clock Clock) (*ViewGuard, error) {
	if clock.Mono == nil || clock.Wall == nil {
		clock = SystemClock()
	}
	if lifetime == 0 {
		lifetime = DefaultViewLifetime
	}
	if lifetime < MinViewLifetime || lifetime > MaxViewLifetime {
		return nil, fmt.Errorf("view lifetime %v outside %v..%v: %w", lifetime, MinViewLifetime, MaxViewLifetime, ErrInvalidArgument)
	}
	g := &ViewGuard{clock: clock, lifetime: lifetime, monoOpen: clock.Mono(), wallOpen: clock.Wall()}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

// Remaining is the lifetime left on the stricter of the two clocks.
func (g *ViewGuard) Remaining() time.Duration {
	mono := g.lifetime - (g.clock.Mono() - g.monoOpen)
	wall := g.lifetime - g.clock.Wall().Sub(g.wallOpen)
	return min(mono, wall)
}

// Context is done once the view ends. A view pins its snapshot and runs its queries under
// it, so that the end interrupts them.
func (g *ViewGuard) Context() context.Context { return g.ctx }

// Arm starts enforcing the lifetime and ctx (the open request's context: when it is done
// the view ends as closed), and registers release, which runs exactly once when the view
// ends, after a read in flight drained. The timer frees what the view holds even when
// nobody reads again: an abandoned view must not pin a snapshot for an hour.
func (g *ViewGuard) Arm(ctx context.Context, release func()) {
	// Under mu: a timer that fires at once must find everything set.
	g.mu.Lock()
	g.release = release
	t := time.AfterFunc(max(g.Remaining(), 0), func() { g.End(ErrSnapshotExpired) })
	g.stopTime = t.Stop
	g.stopCtx = context.AfterFunc(ctx, func() { g.End(ErrSnapshotClosed) })
	g.mu.Unlock()
}

// check returns nil while the view may serve reads, else why not. It has no side effects,
// so it is safe under readMu; callers end an expired view after releasing it.
func (g *ViewGuard) check() error {
	g.mu.Lock()
	ended := g.ended
	g.mu.Unlock()
	if ended != nil {
		return ended
	}
	if g.Remaining() <= 0 {
		return ErrSnapshotExpired
	}
	return nil
}

// End ends the view for reason (the first reason wins; later calls do nothing),
// interrupts a read in flight, waits for it, then runs release.
func (g *ViewGuard) End(reason error) {
	g.mu.Lock()
	if g.ended != nil {
		g.mu.Unlock()
		return
	}
	g.ended = reason
	release, stopTime, stopCtx := g.release, g.stopTime, g.stopCtx
	g.mu.Unlock()

	g.cancel()
	g.readMu.Lock() // wait for the read in flight, if any
	defer g.readMu.Unlock()
	if stopTime != nil {
		stopTime()
		stopCtx()
	}
	if release != nil {
		release()
	}
}

// Read runs fn as the view's one read. It refuses a concurrent read at once
// (ErrConcurrentRead), refuses a read on an ended view, and discards fn's result when the
// view ended while fn ran (a late result must never be used). ctx is the caller's; fn gets
// a context that is also done when the view ends.
func (g *ViewGuard) Read(ctx context.Context, fn func(ctx context.Context) error) error {
	if !g.reading.CompareAndSwap(false, true) {
		return ErrConcurrentRead
	}
	defer g.reading.Store(false)
	g.readMu.Lock()
	err := g.check()
	if err == nil {
		qctx, stop := context.WithCancel(ctx)
		unwatch := context.AfterFunc(g.ctx, stop)
		err = fn(qctx)
		unwatch()
		stop()
		if g.AfterRead != nil {
			g.AfterRead()
		}
		if ended := g.check(); ended != nil {
			err = ended
		}
	}
	g.readMu.Unlock()
	if err == ErrSnapshotExpired {
		g.End(err)
	}
	return err
}
