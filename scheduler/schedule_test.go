package scheduler

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"walletsync/wallet"
)

// minSchedules is how many random schedules TestQueue_RandomSchedules must run for each kind
// of store: the issue asks for at least 300, rapid's own default is 100 checks.
const minSchedules = 300

// rapidChecksGiven is true when -rapid.checks was on the command line; then it wins.
var rapidChecksGiven bool

func TestMain(m *testing.M) {
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { rapidChecksGiven = rapidChecksGiven || f.Name == "rapid.checks" })
	if !rapidChecksGiven {
		if err := flag.Set("rapid.checks", strconv.Itoa(minSchedules)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// TestQueue_RandomSchedules runs random schedules of foreground and background readers and
// writers, cancellations, fences, releases and the passing of time against one queue, for
// each kind of store (with and without wallet.Capabilities.ReadsBesideWriter), and checks
// after every step:
//   - never two writers hold at once;
//   - on a store without ReadsBesideWriter, a writer (or, on a store without concurrent
//     reads, anyone) never holds beside anyone, readers included;
//   - never more readers hold than the reader limit (at most 8);
//   - a session is never granted after its destination was fenced, and only fenced sessions
//     are refused as stale;
//   - a cancelled request is never granted, and only cancelled requests fail with the
//     context's error;
//   - the queue's own count of holders matches the grants the schedule holds (no leak).
//
// At the end every grant is released, round after round, until nobody waits: every request
// that was neither cancelled nor fenced must have been granted.
//
// Each schedule runs in its own synctest bubble, and every step ends with synctest.Wait, so
// a step's outcome does not depend on goroutine timing and rapid can shrink a failure.
func TestQueue_RandomSchedules(t *testing.T) {
	for _, beside := range []bool{false, true} {
		t.Run(fmt.Sprintf("readsBesideWriter=%v", beside), func(t *testing.T) {
			var st scheduleStats
			rapid.Check(t, func(rt *rapid.T) {
				rapid.SyncTest(rt, func(rt *rapid.T) {
					st.schedules.Add(1)
					newSchedule(rt, &st, beside).run(rt)
				})
			})
			t.Logf("ran %d random schedules: %d grants, %d cancelled waiters (%d raced a grant), %d stale refusals, %d reentrant refusals, %d steps with readers beside a writer",
				st.schedules.Load(), st.granted.Load(), st.cancelled.Load(), st.raced.Load(), st.stale.Load(), st.reentrant.Load(), st.beside.Load())
			if rapidChecksGiven || testing.Short() {
				return
			}
			if n := st.schedules.Load(); n < minSchedules {
				t.Fatalf("ran %d random schedules, want at least %d", n, minSchedules)
			}
			// A generator that stopped producing one of these would leave its invariant untested.
			exercised := map[string]int64{"grants": st.granted.Load(), "cancellations": st.cancelled.Load(),
				"cancellations racing a grant": st.raced.Load(), "stale refusals": st.stale.Load(), "reentrant refusals": st.reentrant.Load()}
			if beside {
				exercised["readers beside a writer"] = st.beside.Load()
			}
			for name, n := range exercised {
				if n == 0 {
					t.Errorf("no %s in %d schedules", name, st.schedules.Load())
				}
			}
		})
	}
}

// scheduleStats counts what the schedules exercised, across all of them.
type scheduleStats struct {
	schedules, granted, cancelled, raced, stale, reentrant atomic.Int64 // raced: a cancellation in the same step as a release
	beside                                                 atomic.Int64 // steps that ended with readers holding beside a writer
}

var destinations = []string{"d0", "d1", "d2"}

type schedule struct {
	stats    *scheduleStats
	q        *Queue
	readers  int           // the reader limit the queue must keep
	beside   bool          // the store advertises ReadsBesideWriter
	grace    time.Duration // the queue's foreground grace
	step     int
	sessions []*simSession
	requests []*simRequest
	fences   map[string][]int // the steps at which each destination was fenced
}

type simSession struct {
	s    *Session
	dest string
	made int         // the step it was made in
	busy *simRequest // its request while queued or held
}

type simRequest struct {
	sess      *simSession
	class     Class
	mode      Mode
	cancel    context.CancelFunc
	done      chan struct{}
	grant     *Grant
	err       error
	cancelled bool // the schedule cancelled it while it waited
	seen      bool // its outcome was checked
	released  bool
}

func (r *simRequest) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *simRequest) held() bool { return r.finished() && r.err == nil && !r.released }

func newSchedule(rt *rapid.T, stats *scheduleStats, beside bool) *schedule {
	reads := rapid.IntRange(0, 10).Draw(rt, "concurrentReads")
	opts := Options{
		MaxReaders:        rapid.IntRange(0, 10).Draw(rt, "maxReaders"), // 0: the default, 8
		BypassGrants:      rapid.IntRange(0, 4).Draw(rt, "bypassGrants"),
		MaxBackgroundWait: time.Duration(rapid.IntRange(1, 2000).Draw(rt, "maxBackgroundWaitMs")) * time.Millisecond,
		ForegroundGrace:   time.Duration(rapid.IntRange(0, 50).Draw(rt, "foregroundGraceMs")) * time.Millisecond, // 0: the default, 1 ms
	}
	q, err := New(wallet.Capabilities{ConcurrentReads: reads, ReadsBesideWriter: beside}, opts)
	if err != nil {
		rt.Fatal(err)
	}
	opts = opts.withDefaults()
	return &schedule{stats: stats, q: q, readers: max(1, min(reads, opts.MaxReaders)), beside: beside, grace: opts.ForegroundGrace, fences: map[string][]int{}}
}

// stale reports whether sess's destination was fenced after sess was made, by step.
func (s *schedule) stale(sess *simSession, step int) bool {
	for _, f := range s.fences[sess.dest] {
		if f > sess.made && f <= step {
			return true
		}
	}
	return false
}

func (s *schedule) run(rt *rapid.T) {
	steps := rapid.IntRange(1, 80).Draw(rt, "steps")
	for s.step = 1; s.step <= steps; s.step++ {
		// Weighted so that queues build up: of 20 steps, 8 acquire, 5 release, 2 cancel,
		// 1 races a cancellation with a release, 1 fences, 3 let time pass.
		switch op := rapid.IntRange(0, 19).Draw(rt, "op"); {
		case op < 8:
			s.acquire(rt)
		case op < 13:
			if r := s.pick(rt, "release", (*simRequest).held); r != nil {
				s.release(rt, r)
			}
		case op < 15:
			if r := s.pick(rt, "cancel", s.waiting); r != nil {
				r.cancel()
				r.cancelled = true
			}
		case op < 16:
			// A cancellation racing a grant: the release hands the grant to a waiter whose
			// context ends in the same instant.
			h := s.pick(rt, "race release", (*simRequest).held)
			w := s.pick(rt, "race cancel", s.waiting)
			if h != nil && w != nil {
				s.stats.raced.Add(1)
				w.cancel()
				w.cancelled = true
				s.release(rt, h)
			}
		case op < 17:
			d := rapid.SampledFrom(destinations).Draw(rt, "fence")
			s.q.Fence(d)
			s.fences[d] = append(s.fences[d], s.step)
		default:
			time.Sleep(time.Duration(rapid.IntRange(1, 1500).Draw(rt, "sleepMs")) * time.Millisecond)
		}
		synctest.Wait()
		s.check(rt)
	}
	s.drain(rt)
}

func (s *schedule) waiting(r *simRequest) bool { return !r.finished() }

// pick draws one request that satisfies ok, or returns nil when there is none.
func (s *schedule) pick(rt *rapid.T, label string, ok func(*simRequest) bool) *simRequest {
	var candidates []*simRequest
	for _, r := range s.requests {
		if ok(r) {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	return rapid.SampledFrom(candidates).Draw(rt, label)
}

func (s *schedule) acquire(rt *rapid.T) {
	i := rapid.IntRange(0, len(s.sessions)).Draw(rt, "session") // len: a new session
	if i == len(s.sessions) {
		d := rapid.SampledFrom(destinations).Draw(rt, "destination")
		s.sessions = append(s.sessions, &simSession{s: s.q.NewSession("wallet", d), dest: d, made: s.step})
	}
	sess := s.sessions[i]
	class := rapid.SampledFrom([]Class{Foreground, Background}).Draw(rt, "class")
	mode := rapid.SampledFrom([]Mode{Read, Write}).Draw(rt, "mode")
	if sess.busy != nil {
		// Asked on this goroutine: a deadlock would hang the bubble and fail the test.
		if g, err := sess.s.Acquire(context.Background(), class, mode); !errors.Is(err, ErrReentrant) || g != nil {
			rt.Fatalf("step %d: Acquire on a busy session = %v, %v; want ErrReentrant", s.step, g, err)
		}
		s.stats.reentrant.Add(1)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &simRequest{sess: sess, class: class, mode: mode, cancel: cancel, done: make(chan struct{})}
	sess.busy = r
	s.requests = append(s.requests, r)
	go func() {
		defer close(r.done)
		r.grant, r.err = sess.s.Acquire(ctx, class, mode)
	}()
}

func (s *schedule) release(rt *rapid.T, r *simRequest) {
	if err := r.sess.s.Release(r.grant); err != nil {
		rt.Fatalf("step %d: Release of a held grant: %v", s.step, err)
	}
	r.released = true
	r.sess.busy = nil
	r.cancel()
	if err := r.sess.s.Release(r.grant); !errors.Is(err, ErrReleased) {
		rt.Fatalf("step %d: second Release = %v, want ErrReleased", s.step, err)
	}
}

// check runs after every step, with every goroutine of the bubble blocked.
func (s *schedule) check(rt *rapid.T) {
	var readers, writers, waiting int
	for _, r := range s.requests {
		if !r.finished() {
			waiting++
			continue
		}
		if !r.seen {
			r.seen = true
			s.checkOutcome(rt, r)
		}
		if r.held() {
			if r.mode == Write {
				writers++
			} else {
				readers++
			}
		}
	}
	exclusive := !s.beside && (writers > 0 || (s.readers == 1 && readers > 0))
	switch {
	case writers > 1:
		rt.Fatalf("step %d: %d writers hold at once", s.step, writers)
	case exclusive && readers+writers > 1:
		rt.Fatalf("step %d: %d writers and %d readers hold at once on a store without reads beside a writer (reader limit %d)", s.step, writers, readers, s.readers)
	case readers > s.readers || readers > 8:
		rt.Fatalf("step %d: %d readers hold, limit %d", s.step, readers, s.readers)
	case writers > 0 && readers > 0:
		s.stats.beside.Add(1)
	}
	s.q.mu.Lock()
	holders, queued := s.q.holders, len(s.q.foreground)+len(s.q.background)
	s.q.mu.Unlock()
	if holders != readers+writers || queued != waiting {
		rt.Fatalf("step %d: queue counts %d holders and %d waiting, schedule %d and %d", s.step, holders, queued, readers+writers, waiting)
	}
}

func (s *schedule) checkOutcome(rt *rapid.T, r *simRequest) {
	switch {
	case r.err == nil && r.cancelled:
		rt.Fatalf("step %d: a cancelled request was granted", s.step)
	case r.err == nil && s.stale(r.sess, s.step):
		rt.Fatalf("step %d: a session of %s made at step %d was granted after a fence at %v", s.step, r.sess.dest, r.sess.made, s.fences[r.sess.dest])
	case r.err == nil:
		s.stats.granted.Add(1)
		return // a grant; release frees the session
	case errors.Is(r.err, context.Canceled) && !r.cancelled:
		rt.Fatalf("step %d: a request nobody cancelled failed with %v", s.step, r.err)
	case errors.Is(r.err, wallet.ErrStaleSession) && !s.stale(r.sess, s.step):
		rt.Fatalf("step %d: a current session was refused: %v", s.step, r.err)
	case !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, wallet.ErrStaleSession):
		rt.Fatalf("step %d: unexpected error %v", s.step, r.err)
	case errors.Is(r.err, context.Canceled):
		s.stats.cancelled.Add(1)
	default:
		s.stats.stale.Add(1)
	}
	r.sess.busy = nil
	r.cancel()
}

// drain releases every held grant, round after round, until nobody waits. Somebody waiting
// while nobody holds a grant, even once the foreground grace has passed (a background
// request waits it out after a foreground release), means a request was lost.
func (s *schedule) drain(rt *rapid.T) {
	for {
		s.step++
		for _, r := range s.requests {
			if r.held() {
				s.release(rt, r)
			}
		}
		synctest.Wait()
		s.check(rt)
		if s.count((*simRequest).held) == 0 {
			time.Sleep(s.grace)
			synctest.Wait()
			s.check(rt)
		}
		waiting := s.count(s.waiting)
		if waiting == 0 {
			return
		}
		if s.count((*simRequest).held) == 0 {
			rt.Fatalf("drain: %d requests wait on a queue nobody holds", waiting)
		}
	}
}

// count returns how many requests satisfy ok.
func (s *schedule) count(ok func(*simRequest) bool) int {
	n := 0
	for _, r := range s.requests {
		if ok(r) {
			n++
		}
	}
	return n
}
