package wire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"walletsync/wallet"
)

// Retained views. A client's view of a server's store lives on the server between
// requests: a wallet.View the backend opened, addressed by a random handle, owned by the
// identity that opened it. It lives at most its lifetime, counted from the open request
// (the backend's view enforces the same lifetime on its own clocks), at most
// ViewOptions.IdleTimeout after the last request that used it, and at most
// ViewOptions.EmptyLifetime when the store holds no user for its identity; it is released
// exactly once: by the client's close, by expiry (a timer reaps it even when nobody asks
// again), or by the server's Close. A pinned view holds a connection, a quota slot and, on
// SQLite, the WAL checkpoints behind it, so one that nobody reads must not outlive its use. Views live in memory only, so a restart forgets them;
// the client then gets wallet.ErrSnapshotClosed and opens a new one, resuming from the
// destination's checkpoint as the page session does for any view that ends.
//
// Shared views. Several server processes over one database (pgstore) serve one
// client whose requests a load balancer spreads across them, so the process that serves a
// page is not always the one that opened its view. A Backend that implements SharedViews
// keeps its views in its store instead: the handle, the identity, the lifetime and the
// quota counts live where every process finds them, the process that opened a view holds
// what pins it, and any process reads a page of it, consistent with the view's opening
// (how pgstore does it: pgstore/shared.go). The Handler then keeps no view of its
// own: it checks lifetimes and identities as for local views, asks the backend for every
// handle, and lets the backend count views against the quotas (admit) under a lock that
// all processes share. What stays per process is what is per process: the memory budget
// of the reads in flight on this process.
//
// Quotas bound what views cost the server. Open views are counted globally and per
// identity. Memory is counted as the byte limit of each read in flight, reserved before the
// backend reads and freed once the answer is encoded: a page's byte limit (its charge, see
// wallet.CellCharge) is at least twice the bytes its rows hold in memory, so the budget
// bounds the pages a server holds at once. A read over a budget is admitted only while
// nothing else is reserved under it, so that a one-row page of a row near the 64 MiB frame
// ceiling can always be served, alone. A refusal is a *wallet.BusyError with a retry hint.

// SharedViews is implemented by a Backend whose retained views live in its store, shared by
// every server process over that store, so that a client's next page may be served by
// another process than the one that opened its view. The Handler then resolves every
// handle through it and retains nothing itself.
//
// OpenSharedView opens a view of identity's source that lives lifetime (counted from the
// call, on the store's clock), and at most idle after the last SharedView of it on any
// process (0: no idle timeout), under a new handle that nobody can guess, and returns the
// handle and the view. Before anything stays open it counts, under a lock that all the
// processes share, the views open for identity and on all of them (closed, expired and
// dead views not counted) and calls admit with the two counts: an error from admit (the
// Handler's quota refusal) is returned as it is and nothing stays open. The view outlives
// ctx: only its close, its deadline or the end of this process ends it.
//
// SharedView returns identity's view under handle for one request, from any process: its
// pages are exactly what the view saw when it opened, its ID, Journal and Resume those of
// the opening. A handle that is unknown, closed or another identity's is refused with
// wallet.ErrSnapshotClosed (one answer for the three, so that no identity learns of
// another's views); a view past its deadline, or whose opening process is gone, with
// wallet.ErrSnapshotExpired, after which the client opens a new view and resumes from its
// checkpoint. Its ReadPage refuses a read while another read of the same view is in flight
// on any process (wallet.ErrConcurrentRead). The Handler never calls its Close.
//
// CloseSharedView ends identity's view under handle from any process: from its return every
// process refuses the handle, its quota is free, and the process that holds the view
// releases what pins it. A handle that is gone or another identity's is closed already: nil.
//
// HeldViews is how many views this process holds open now (a gauge; summed over the
// processes it is the views open on the store); IdleReleasedViews how many it released so
// far because no request used them for their idle timeout (a counter).
type SharedViews interface {
	OpenSharedView(ctx context.Context, identity string, lifetime, idle time.Duration, admit func(identityViews, allViews int) error) (handle string, v wallet.View, err error)
	SharedView(ctx context.Context, identity, handle string) (wallet.View, error)
	CloseSharedView(ctx context.Context, identity, handle string) error
	HeldViews() int
	IdleReleasedViews() int64
}

// ViewOptions are the lifetimes and quotas of retained views. Zero fields take the defaults.
type ViewOptions struct {
	DefaultLifetime time.Duration // 5 minutes
	MaxLifetime     time.Duration // 1 hour
	// IdleTimeout releases a view that no request has used for this long, whatever its
	// lifetime (1 minute; never more than the lifetime).
	IdleTimeout time.Duration
	// EmptyLifetime bounds the lifetime of a view of an identity that the store holds no
	// user for (10 seconds): such a view can answer nothing but "not found" for as long as
	// it lives, since a user made after it opened is not in its snapshot.
	EmptyLifetime       time.Duration
	MaxViews            int   // 8 open views on the server
	MaxBytes            int64 // 128 MiB of reads in flight on the server
	MaxViewsPerIdentity int   // 1 open view per identity
	MaxBytesPerIdentity int64 // 32 MiB of reads in flight per identity
}

// Defaults of ViewOptions.
const (
	DefaultViewLifetime        = 5 * time.Minute
	MaxViewLifetime            = time.Hour
	DefaultMaxViews            = 8
	DefaultMaxBytes            = 128 << 20
	DefaultMaxViewsPerIdentity = 1
	DefaultMaxBytesPerIdentity = 32 << 20
	// DefaultViewIdleTimeout is a twelfth of the 1-hour longest lifetime and a fifth of the
	// default: a sync reads its pages back to back (a page and its destination commit take
	// well under a second on the benchmarks), so a minute without a request is a client
	// that stopped or one that holds a view to hold it. A client whose view was released
	// gets wallet.ErrSnapshotClosed and resumes from its checkpoint in a new view.
	DefaultViewIdleTimeout = time.Minute
	// DefaultEmptyViewLifetime covers the one or two requests (describe, the users page)
	// after which a sync of an identity the server does not know stops.
	DefaultEmptyViewLifetime = 10 * time.Second
)

// busyRetryAfter is the retry hint of a quota refusal. Views are held for one sync and
// closed at its end, usually within seconds, so a second is the useful granularity; the
// hint never promises that the retry succeeds.
const busyRetryAfter = time.Second

// Normalized returns o with its zero fields set to the defaults and its lifetimes bounded,
// as a Handler uses them.
func (o ViewOptions) Normalized() ViewOptions { return o.withDefaults() }

func (o ViewOptions) withDefaults() ViewOptions {
	if o.DefaultLifetime <= 0 {
		o.DefaultLifetime = DefaultViewLifetime
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = MaxViewLifetime
	}
	o.MaxLifetime = min(o.MaxLifetime, MaxViewLifetime)
	o.DefaultLifetime = min(o.DefaultLifetime, o.MaxLifetime)
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultViewIdleTimeout
	}
	if o.EmptyLifetime <= 0 {
		o.EmptyLifetime = DefaultEmptyViewLifetime
	}
	if o.MaxViews <= 0 {
		o.MaxViews = DefaultMaxViews
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxViewsPerIdentity <= 0 {
		o.MaxViewsPerIdentity = DefaultMaxViewsPerIdentity
	}
	if o.MaxBytesPerIdentity <= 0 {
		o.MaxBytesPerIdentity = DefaultMaxBytesPerIdentity
	}
	return o
}

// usage is what one identity, or the whole server, holds.
type usage struct {
	views int
	bytes int64
}

// views is the registry of retained views.
type views struct {
	opts ViewOptions

	mu       sync.Mutex
	byHandle map[string]*retained
	total    usage
	identity map[string]*usage
	// idleReleases counts the views released because no request used them for
	// IdleTimeout (a counter, for metrics).
	idleReleases int64
}

// retained is one view on the server.
type retained struct {
	handle   string
	identity string
	view     wallet.View
	deadline time.Time
	timer    *time.Timer
	lastUsed time.Time // the last request on the handle began or ended (guarded by views.mu)
	reading  bool      // a read is in flight (guarded by views.mu)
	released bool      // guarded by views.mu: set once, by the one release that closes the view
}

func newViews(opts ViewOptions) *views {
	return &views{opts: opts.withDefaults(), byHandle: map[string]*retained{}, identity: map[string]*usage{}}
}

// ViewStats is a snapshot of the retained views, for metrics.
type ViewStats struct {
	Open          int   // views open now
	ReservedBytes int64 // byte limits of the reads in flight
	IdleReleases  int64 // views released so far because no request used them for IdleTimeout
}

func (vs *views) stats() ViewStats {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return ViewStats{Open: vs.total.views, ReservedBytes: vs.total.bytes, IdleReleases: vs.idleReleases}
}

// lifetime checks a requested lifetime: 0 takes the default.
func (vs *views) lifetime(ms int64) (time.Duration, error) {
	d := time.Duration(ms) * time.Millisecond
	if ms == 0 {
		d = vs.opts.DefaultLifetime
	}
	if ms < 0 || ms > int64(vs.opts.MaxLifetime/time.Millisecond) {
		return 0, fmt.Errorf("view lifetime %dms outside 1ms..%v: %w", ms, vs.opts.MaxLifetime, wallet.ErrInvalidArgument)
	}
	return d, nil
}

// open opens a view through open for identity, within the quotas.
func (vs *views) open(ctx context.Context, identity string, lifetime time.Duration, open func(context.Context, time.Duration) (wallet.View, error)) (*retained, error) {
	start := time.Now()
	vs.mu.Lock()
	u := vs.usage(identity)
	// The refusal's reason reads the counts under mu: a release may change them at once.
	if refused := vs.admit(u.views, vs.total.views); refused != nil {
		vs.mu.Unlock()
		return nil, refused
	}
	u.views++ // reserved while the backend opens, so that concurrent opens cannot overshoot
	vs.total.views++
	vs.mu.Unlock()

	// The view outlives the request that opens it: only its release ends it.
	v, err := open(context.WithoutCancel(ctx), lifetime)
	if err != nil {
		vs.unreserveView(identity)
		if errors.Is(err, wallet.ErrSnapshotBusy) {
			// The backend's own view slots are taken (a localstore file has localstore.Options.MaxViews).
			return nil, &quotaError{busy: &wallet.BusyError{Reason: "the store's snapshot views are all open", RetryAfter: busyRetryAfter}}
		}
		return nil, err
	}
	if lifetime > vs.opts.EmptyLifetime && unknownIdentity(ctx, v, identity) {
		lifetime = vs.opts.EmptyLifetime
	}
	r := &retained{handle: newHandle(), identity: identity, view: v, deadline: start.Add(lifetime), lastUsed: time.Now()}
	vs.mu.Lock()
	vs.byHandle[r.handle] = r
	// Under mu: a timer that fires at once finds the view registered.
	r.timer = time.AfterFunc(vs.untilExpiry(r), func() { vs.expire(r) })
	vs.mu.Unlock()
	return r, nil
}

// unknownIdentity reports whether v holds no user for identity: its users page is
// wallet.ErrNotFound. Any other answer, an error included, counts as known, so that a
// failing probe never shortens a view.
func unknownIdentity(ctx context.Context, v wallet.View, identity string) bool {
	_, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: identity, Limits: wallet.Limits{Rows: 1}})
	return errors.Is(err, wallet.ErrNotFound)
}

// untilExpiry is how long r has before its timer must look at it: its idle timeout or its
// deadline, whichever comes first; mu must be held.
func (vs *views) untilExpiry(r *retained) time.Duration {
	return min(time.Until(r.deadline), time.Until(r.lastUsed.Add(vs.opts.IdleTimeout)))
}

// touch records a request on r and pushes its idle expiry back; mu must be held.
func (vs *views) touch(r *retained) {
	r.lastUsed = time.Now()
	if r.timer != nil && !r.released {
		r.timer.Reset(vs.untilExpiry(r))
	}
}

// expire is r's timer: it releases r at its deadline, or once no request used it for
// IdleTimeout. A read in flight is never cut by the idle timeout (its end touches r
// again); a timer that fires early (a request touched r meanwhile) is armed again.
func (vs *views) expire(r *retained) {
	vs.mu.Lock()
	now := time.Now()
	switch {
	case r.released:
		vs.mu.Unlock()
		return
	case now.Before(r.deadline) && r.reading:
		vs.mu.Unlock()
		return
	case now.Before(r.deadline) && now.Before(r.lastUsed.Add(vs.opts.IdleTimeout)):
		r.timer.Reset(vs.untilExpiry(r))
		vs.mu.Unlock()
		return
	}
	if now.Before(r.deadline) {
		vs.idleReleases++
	}
	vs.mu.Unlock()
	vs.release(r)
}

// newHandle returns a new view handle: 128 random bits in hex, which nobody can guess.
func newHandle() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// admit is the view-count quota: it refuses one more view when the identity already holds
// identityViews or the server allViews. Local views count in the registry; shared views
// count in their store, which calls admit with its counts (SharedViews).
func (vs *views) admit(identityViews, allViews int) error {
	switch {
	case identityViews >= vs.opts.MaxViewsPerIdentity:
		return vs.busy(fmt.Sprintf("this identity holds %d open views, its quota", identityViews), true)
	case allViews >= vs.opts.MaxViews:
		return vs.busy(fmt.Sprintf("the server holds %d open views, its quota", allViews), false)
	}
	return nil
}

func (vs *views) busy(reason string, identity bool) error {
	return &quotaError{busy: &wallet.BusyError{Reason: reason, RetryAfter: busyRetryAfter}, identity: identity}
}

// usage returns identity's usage, creating it; mu must be held.
func (vs *views) usage(identity string) *usage {
	u := vs.identity[identity]
	if u == nil {
		u = &usage{}
		vs.identity[identity] = u
	}
	return u
}

func (vs *views) unreserveView(identity string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	u := vs.identity[identity]
	u.views--
	vs.total.views--
	vs.forget(identity, u)
}

// forget drops an identity's usage once it holds nothing; mu must be held.
func (vs *views) forget(identity string, u *usage) {
	if u.views == 0 && u.bytes == 0 {
		delete(vs.identity, identity)
	}
}

// get returns identity's view by handle. A handle that is unknown, released or another
// identity's gets the same wallet.ErrSnapshotClosed, so that no answer tells another
// identity's views from views that never existed.
func (vs *views) get(identity, handle string) (*retained, error) {
	vs.mu.Lock()
	r := vs.byHandle[handle]
	if r != nil && r.identity == identity {
		vs.touch(r)
	}
	vs.mu.Unlock()
	if r == nil || r.identity != identity {
		return nil, fmt.Errorf("view %.16s: %w", handle, wallet.ErrSnapshotClosed)
	}
	if !time.Now().Before(r.deadline) {
		vs.release(r)
		return nil, fmt.Errorf("view %.16s: %w", handle, wallet.ErrSnapshotExpired)
	}
	return r, nil
}

// read runs fn as r's one read, with bytes reserved under the memory budgets; done frees
// them and must be called once the answer is encoded.
func (vs *views) read(r *retained, bytes int64, fn func(wallet.View) error) (done func(), err error) {
	vs.mu.Lock()
	if r.released {
		vs.mu.Unlock()
		return nil, fmt.Errorf("view %.16s: %w", r.handle, wallet.ErrSnapshotClosed)
	}
	if r.reading {
		vs.mu.Unlock()
		return nil, wallet.ErrConcurrentRead
	}
	done, err = vs.reserveLocked(r.identity, bytes)
	if err != nil {
		vs.mu.Unlock()
		return nil, err
	}
	r.reading = true
	vs.mu.Unlock()

	err = fn(r.view)
	vs.mu.Lock()
	r.reading = false
	vs.touch(r)
	vs.mu.Unlock()
	return done, err
}

// reserve reserves bytes of a read for identity under the memory budgets, which stay this
// process's own whether its views are or not; done frees them.
func (vs *views) reserve(identity string, bytes int64) (done func(), err error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.reserveLocked(identity, bytes)
}

// reserveLocked is reserve with mu held.
func (vs *views) reserveLocked(identity string, bytes int64) (done func(), err error) {
	u := vs.usage(identity)
	// The refusal's reason reads the counts under mu, as in open.
	switch {
	case u.bytes > 0 && u.bytes+bytes > vs.opts.MaxBytesPerIdentity:
		err = vs.busy(fmt.Sprintf("this identity's reads in flight hold %d bytes of its %d", u.bytes, vs.opts.MaxBytesPerIdentity), true)
	case vs.total.bytes > 0 && vs.total.bytes+bytes > vs.opts.MaxBytes:
		err = vs.busy(fmt.Sprintf("reads in flight hold %d bytes of the server's %d", vs.total.bytes, vs.opts.MaxBytes), false)
	}
	if err != nil {
		vs.forget(identity, u)
		return nil, err
	}
	u.bytes += bytes
	vs.total.bytes += bytes
	return func() {
		vs.mu.Lock()
		defer vs.mu.Unlock()
		vs.total.bytes -= bytes
		// A read of no bytes (a view/open describing its view) holds no entry up: the
		// view's release may have forgotten the identity meanwhile.
		if u := vs.identity[identity]; u != nil {
			u.bytes -= bytes
			vs.forget(identity, u)
		}
	}, nil
}

// release closes r's view exactly once, whoever asks first (its client, its timer, the
// server's Close); the view's quota is freed only after the backend's Close returned, which
// waits for a read in flight to drain.
func (vs *views) release(r *retained) {
	vs.mu.Lock()
	if r.released {
		vs.mu.Unlock()
		return
	}
	r.released = true
	delete(vs.byHandle, r.handle)
	if r.timer != nil {
		r.timer.Stop()
	}
	vs.mu.Unlock()
	r.view.Close()
	vs.unreserveView(r.identity)
}

// closeAll releases every view (a server shutting down).
func (vs *views) closeAll() {
	vs.mu.Lock()
	all := make([]*retained, 0, len(vs.byHandle))
	for _, r := range vs.byHandle {
		all = append(all, r)
	}
	vs.mu.Unlock()
	for _, r := range all {
		vs.release(r)
	}
}
