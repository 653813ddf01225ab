package scheduler

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"walletsync/wallet"
)

// Class is a request's priority. The zero value is invalid, so that a caller who forgets to
// choose never lands in the foreground by accident.
type Class uint8

// Classes.
const (
	// Foreground is work a person is waiting for: it is granted first.
	Foreground Class = iota + 1
	// Background is sync, backup and restore work: it waits for foreground work, within
	// the bounds Options.BypassGrants and Options.MaxBackgroundWait.
	Background
)

// String returns the stable wire name: "foreground" or "background".
func (c Class) String() string {
	switch c {
	case Foreground:
		return "foreground"
	case Background:
		return "background"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// MarshalText writes the wire name, so that metrics read as words in the dashboard's JSON.
// An invalid class is an error.
func (c Class) MarshalText() ([]byte, error) {
	if !c.valid() {
		return nil, fmt.Errorf("marshal %s: %w", c, wallet.ErrInvalidArgument)
	}
	return []byte(c.String()), nil
}

func (c Class) valid() bool { return c == Foreground || c == Background }

// Mode is what a request does to the store. The zero value is invalid.
type Mode uint8

// Modes.
const (
	// Read is shared: up to the queue's reader limit at once, and beside a writer only on
	// a store that advertises wallet.Capabilities.ReadsBesideWriter.
	Read Mode = iota + 1
	// Write is exclusive among writers, and alone (no reader either) on a store that does
	// not advertise wallet.Capabilities.ReadsBesideWriter.
	Write
)

// String returns the stable wire name: "read" or "write".
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// MarshalText writes the wire name; an invalid mode is an error.
func (m Mode) MarshalText() ([]byte, error) {
	if !m.valid() {
		return nil, fmt.Errorf("marshal %s: %w", m, wallet.ErrInvalidArgument)
	}
	return []byte(m.String()), nil
}

func (m Mode) valid() bool { return m == Read || m == Write }

// Options tune a Queue. Zero fields take the defaults; negative ones are refused by New.
type Options struct {
	// MaxReaders caps concurrent read grants below the store's advertised ConcurrentReads;
	// default 8.
	MaxReaders int
	// BypassGrants is how many foreground grants may overtake the oldest waiting background
	// request before it goes next; default 8.
	BypassGrants int
	// MaxBackgroundWait is how long the oldest background request may wait behind
	// foreground work before it goes next; default 1 s.
	MaxBackgroundWait time.Duration
	// RecentSamples is the length of the ring of recent grants in Metrics; default 256.
	RecentSamples int
	// ForegroundGrace is how long, after a foreground grant is released, a background
	// request that is not yet due waits for the foreground to ask again; default 1 ms. See
	// rule 1 on Queue.
	ForegroundGrace time.Duration
}

// defaultForegroundGrace is ForegroundGrace's default. A foreground caller that is behind
// asks again within microseconds of its release; 1 ms covers that with room for a busy Go
// scheduler, and costs a background job at most 1 ms of idle store per commit when the
// foreground does not come back.
const defaultForegroundGrace = time.Millisecond

func (o Options) withDefaults() Options {
	if o.MaxReaders == 0 {
		o.MaxReaders = 8
	}
	if o.BypassGrants == 0 {
		o.BypassGrants = 8
	}
	if o.MaxBackgroundWait == 0 {
		o.MaxBackgroundWait = time.Second
	}
	if o.RecentSamples == 0 {
		o.RecentSamples = 256
	}
	if o.ForegroundGrace == 0 {
		o.ForegroundGrace = defaultForegroundGrace
	}
	return o
}

// Queue is the fair access queue in front of one store. Every access to the store goes
// through a Session of the queue (see NewSession and Session.Acquire).
//
// The queue never grants more concurrency than the store promised in the capabilities it was
// made with:
//   - ConcurrentReads of 0 or 1 (a store that promises nothing): every grant is exclusive.
//   - ConcurrentReads above 1: up to that many readers (and Options.MaxReaders) share the
//     store; a writer holds it alone.
//   - ReadsBesideWriter (SQLite in WAL mode): readers (as many as above, one at least) are
//     granted while one writer holds its grant, and a writer is granted while readers hold
//     theirs. Writers stay exclusive among writers.
//
// Requests wait in lanes: one lane for every request, except on a store with
// ReadsBesideWriter, where readers and writers wait in two lanes, because there they never
// wait for each other. Every lane keeps its own fairness counts (below), so that readers
// granted beside a waiting background writer neither count as bypassing it nor restart its
// clock.
//
// The rules, applied in each lane whenever something changes (a request arrives, is
// released, is cancelled or fenced, or a background deadline or the foreground grace
// passes):
//
//  1. The next request in the lane is the oldest background request if it is due, else the
//     oldest foreground request, else the oldest background request, but not within
//     ForegroundGrace of the last foreground release. The grace is what makes "foreground
//     first" hold for a foreground caller that runs one request after another: between its
//     release and its next request the foreground line is empty for a moment, and without
//     the grace a waiting background commit would take the store in that moment, every
//     time. Such a caller that has fallen behind would then wait for one background commit
//     per request instead of at most one in all, and never catch up. The grace never delays
//     a due request, so the bounds below still hold. A background request is due once
//     BypassGrants foreground grants were made while it waited, or it has waited
//     MaxBackgroundWait; both are counted from the later of its arrival and the previous
//     background grant. Counting from the previous background grant is deliberate: with
//     several background requests queued under a steady foreground load, the literal rule
//     ("waited 1 s") would make all of them due at once and grant them back to back, and a
//     foreground request would wait for several commits instead of one.
//  2. The next request is granted if it fits beside the current holders. On a store without
//     ReadsBesideWriter: a writer (or, on a store without concurrent reads, anyone) only
//     when nobody holds a grant; a reader when no writer holds one and fewer than the reader
//     limit do. With it: a writer when no other writer holds one; a reader when fewer than
//     the reader limit do.
//  3. If it does not fit, nobody behind it in its lane is granted either. A waiting writer
//     therefore stops new readers from overtaking it where it waits for readers, so writers
//     are never starved by a reader stream; where readers and writers never wait for each
//     other, they are in different lanes and neither holds up the other.
//
// A Queue is safe for concurrent use. It owns a timer for deadlines and graces and nothing
// else; there is nothing to close.
type Queue struct {
	maxReaders int  // 1 means every grant is exclusive
	beside     bool // readers may hold beside one writer: two lanes
	bypass     uint64
	maxBgWait  time.Duration
	grace      time.Duration

	mu         sync.Mutex
	foreground []*Grant // waiting, oldest first
	background []*Grant // waiting, oldest first
	holders    int      // grants held right now
	writers    int      // write grants held right now
	exclusive  bool     // the (only) holder holds exclusively
	lanes      [2]laneState
	graceEnd   time.Time   // the last foreground release plus the grace (rule 1)
	wake       *time.Timer // re-runs the scheduler when time alone changes rule 1 (see armLocked)
	gens       map[string]uint64
	active     string
	switches   []chan struct{} // pending switches in call order; the first one runs
	metrics    metrics
}

// laneState is one lane's fairness counts (rule 1 on Queue).
type laneState struct {
	fgGranted uint64 // foreground grants ever made in the lane: the clock bypasses are counted on
	lastBgAt  time.Time
	lastBgFg  uint64 // fgGranted at the lane's last background grant
}

// New returns an empty queue for a store with the given capabilities; only ConcurrentReads
// and ReadsBesideWriter matter here. Options outside their documented range are refused
// with an error wrapping wallet.ErrInvalidArgument.
func New(c wallet.Capabilities, opts Options) (*Queue, error) {
	opts = opts.withDefaults()
	switch {
	case c.ConcurrentReads < 0:
		return nil, fmt.Errorf("new queue: concurrent reads %d below 0: %w", c.ConcurrentReads, wallet.ErrInvalidArgument)
	case opts.MaxReaders < 0, opts.BypassGrants < 0, opts.MaxBackgroundWait < 0, opts.RecentSamples < 0, opts.ForegroundGrace < 0:
		return nil, fmt.Errorf("new queue: negative option in %+v: %w", opts, wallet.ErrInvalidArgument)
	}
	return &Queue{
		maxReaders: max(1, min(c.ConcurrentReads, opts.MaxReaders)),
		beside:     c.ReadsBesideWriter,
		bypass:     uint64(opts.BypassGrants),
		maxBgWait:  opts.MaxBackgroundWait,
		grace:      opts.ForegroundGrace,
		gens:       make(map[string]uint64),
		metrics:    newMetrics(opts.RecentSamples),
	}, nil
}

// line returns the waiting list of a class.
func (q *Queue) line(c Class) *[]*Grant {
	if c == Foreground {
		return &q.foreground
	}
	return &q.background
}

// isExclusive reports whether g must hold the store alone.
func (q *Queue) isExclusive(g *Grant) bool {
	return !q.beside && (g.mode == Write || q.maxReaders == 1)
}

// laneOf returns the index of the lane g waits in: 0, or 1 for a reader on a store with
// ReadsBesideWriter.
func (q *Queue) laneOf(g *Grant) int {
	if q.beside && g.mode == Read {
		return 1
	}
	return 0
}

// headsLocked returns the oldest waiting foreground and background requests of lane l (nil
// where none waits).
func (q *Queue) headsLocked(l int) (fg, bg *Grant) {
	first := func(line []*Grant) *Grant {
		for _, g := range line {
			if q.laneOf(g) == l {
				return g
			}
		}
		return nil
	}
	return first(q.foreground), first(q.background)
}

// scheduleLocked grants waiting requests by the rules on Queue, then arms the background
// deadline timer. Every change of state ends with a call to it.
func (q *Queue) scheduleLocked(now time.Time) {
	// A grant in one lane moves rule 1's grace for neither lane and fits nothing more in the
	// other (a reader takes no writer's place there), so one pass per lane is enough.
	for l := range q.laneCount() {
		for {
			g := q.nextLocked(now, l)
			if g == nil || !q.fitsLocked(g) {
				break
			}
			q.grantLocked(g, now)
		}
	}
	q.armLocked(now)
}

func (q *Queue) laneCount() int {
	if q.beside {
		return 2
	}
	return 1
}

func (q *Queue) nextLocked(now time.Time, l int) *Grant {
	fg, bg := q.headsLocked(l)
	switch {
	case bg != nil && q.dueLocked(bg, now):
		return bg
	case fg != nil:
		return fg
	case bg != nil && !now.Before(q.graceEnd):
		return bg
	}
	return nil
}

// bgSinceLocked returns when and at which foreground count of its lane a background request
// started waiting, for the purpose of rule 1: its arrival, or the lane's previous background
// grant if later.
func (q *Queue) bgSinceLocked(g *Grant) (time.Time, uint64) {
	ln := &q.lanes[q.laneOf(g)]
	since := g.asked
	if ln.lastBgAt.After(since) {
		since = ln.lastBgAt
	}
	// Each measure takes its own later value: a clock too coarse to order the arrival and
	// the previous grant must not undo the count.
	return since, max(g.fgAtAsk, ln.lastBgFg)
}

func (q *Queue) dueLocked(g *Grant, now time.Time) bool {
	since, fg := q.bgSinceLocked(g)
	return q.lanes[q.laneOf(g)].fgGranted-fg >= q.bypass || now.Sub(since) >= q.maxBgWait
}

func (q *Queue) fitsLocked(g *Grant) bool {
	switch {
	case q.beside && g.mode == Write:
		return q.writers == 0
	case q.beside:
		return q.holders-q.writers < q.maxReaders
	case q.isExclusive(g):
		return q.holders == 0
	}
	return !q.exclusive && q.holders < q.maxReaders
}

// grantLocked hands g, the next request of its lane, its grant.
func (q *Queue) grantLocked(g *Grant, now time.Time) {
	q.removeLocked(g)
	g.state = held
	g.granted = now
	q.holders++
	if g.mode == Write {
		q.writers++
	}
	q.exclusive = q.isExclusive(g)
	ln := &q.lanes[q.laneOf(g)]
	if g.class == Foreground {
		ln.fgGranted++
	} else {
		ln.lastBgAt, ln.lastBgFg = now, ln.fgGranted
	}
	close(g.decided)
}

// removeLocked takes a waiting request out of its class's line.
func (q *Queue) removeLocked(g *Grant) {
	line := q.line(g.class)
	if i := slices.Index(*line, g); i >= 0 {
		*line = slices.Delete(*line, i, i+1)
	}
}

// armLocked makes sure the scheduler runs again when time alone changes what rule 1 picks,
// even if nothing else happens by then: when the oldest background request becomes due (a
// due background reader may fit beside the current readers at once, ahead of a waiting
// foreground writer), and when the foreground grace ends with the foreground line still
// empty. The bypass count changes only with an event, so it needs no timer.
func (q *Queue) armLocked(now time.Time) {
	var at time.Time // zero: nothing waits on time alone
	for l := range q.laneCount() {
		fg, bg := q.headsLocked(l)
		if bg == nil || q.dueLocked(bg, now) {
			continue
		}
		since, _ := q.bgSinceLocked(bg)
		wake := time.Time{}
		switch {
		case fg != nil:
			wake = since.Add(q.maxBgWait) // foreground goes first until then
		case now.Before(q.graceEnd):
			wake = since.Add(q.maxBgWait)
			if q.graceEnd.Before(wake) {
				wake = q.graceEnd
			}
		}
		// Otherwise the background request is next and waits only for a release.
		if !wake.IsZero() && (at.IsZero() || wake.Before(at)) {
			at = wake
		}
	}
	if at.IsZero() {
		if q.wake != nil {
			q.wake.Stop()
		}
		return
	}
	d := at.Sub(now)
	if q.wake == nil {
		q.wake = time.AfterFunc(d, q.onWake)
		return
	}
	q.wake.Reset(d)
}

func (q *Queue) onWake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.scheduleLocked(time.Now())
}

// freeLocked gives back g's place among the holders and lets the next requests in.
func (q *Queue) freeLocked(g *Grant, now time.Time) {
	g.state = done
	g.sess.grant = nil
	if g.class == Foreground {
		q.graceEnd = now.Add(q.grace)
	}
	q.holders--
	if g.mode == Write {
		q.writers--
	}
	if q.isExclusive(g) {
		q.exclusive = false
	}
	q.scheduleLocked(now)
}

// dropLocked removes a waiting request from its line and decides it with err (nil for a
// cancellation, which the waiter already knows about). The caller reschedules afterwards:
// the requests behind a dropped writer may fit now.
func (q *Queue) dropLocked(g *Grant, err error) {
	q.removeLocked(g)
	g.state = done
	g.err = err
	g.sess.grant = nil
	close(g.decided)
}
