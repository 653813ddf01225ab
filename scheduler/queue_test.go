package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"walletsync/wallet"
)

// Every test that waits runs in a synctest bubble: synctest.Wait returns once every
// goroutine of the test is blocked, so "is it granted yet" has one answer, and time moves only
// when the test sleeps, so the 1-second bound is tested exactly, without wall-clock time.

var (
	// wal is what SQLite in WAL mode advertises to the queue.
	wal = wallet.Capabilities{ConcurrentReads: 8, ReadsBesideWriter: true}
	// sharedReads is a store whose readers share but never run beside a writer.
	sharedReads = wallet.Capabilities{ConcurrentReads: 8}
)

func mustQueue(t testing.TB, c wallet.Capabilities, o Options) *Queue {
	t.Helper()
	q, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// request is one Acquire running in its own goroutine.
type request struct {
	name   string
	sess   *Session
	cancel context.CancelFunc
	done   chan struct{} // closed when Acquire returned
	grant  *Grant
	err    error
}

// order records the names of requests in the order they were granted.
type order struct {
	mu    sync.Mutex
	names []string
}

func (o *order) add(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.names = append(o.names, name)
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.names)
}

// start calls Acquire on a new session of q in a goroutine and waits until it is granted or
// queued, so that requests started one after another arrive in that order.
func start(t *testing.T, q *Queue, o *order, name string, class Class, mode Mode) *request {
	t.Helper()
	return startSession(t, q.NewSession("wallet", "dest"), o, name, class, mode)
}

func startSession(t *testing.T, s *Session, o *order, name string, class Class, mode Mode) *request {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &request{name: name, sess: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.grant, r.err = s.Acquire(ctx, class, mode)
		if r.err == nil && o != nil {
			o.add(name)
		}
	}()
	synctest.Wait()
	return r
}

// finished reports whether Acquire has returned; call after synctest.Wait.
func (r *request) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *request) granted() bool { return r.finished() && r.err == nil }

func (r *request) release(t *testing.T) {
	t.Helper()
	if !r.granted() {
		t.Fatalf("%s: release before grant (err %v)", r.name, r.err)
	}
	if err := r.sess.Release(r.grant); err != nil {
		t.Fatalf("%s: release: %v", r.name, err)
	}
	synctest.Wait()
}

// drain releases every request as soon as it is granted until all have finished, and
// returns the grant order. When nothing finished in a round it lets the foreground grace
// (of a queue made with the default) pass once: a background request waits it out after a
// foreground release. Still nothing after that means a request was lost.
func drain(t *testing.T, o *order, rs ...*request) []string {
	t.Helper()
	released := map[*request]bool{}
	graceWaited := false
	for len(released) < len(rs) {
		progress := false
		for _, r := range rs {
			if !released[r] && r.finished() {
				if r.err == nil {
					r.release(t)
				}
				released[r] = true
				progress = true
			}
		}
		switch {
		case progress:
			graceWaited = false
		case !graceWaited:
			time.Sleep(defaultForegroundGrace)
			synctest.Wait()
			graceWaited = true
		default:
			t.Fatalf("drain: requests wait with nobody holding a grant; granted so far %v", o.get())
		}
	}
	return o.get()
}

// passGrace lets the default foreground grace pass: after a foreground release, a background
// request that is not yet due waits it out before it is granted.
func passGrace() {
	time.Sleep(defaultForegroundGrace)
	synctest.Wait()
}

func wantGranted(t *testing.T, want bool, rs ...*request) {
	t.Helper()
	for _, r := range rs {
		if r.granted() != want {
			t.Fatalf("%s: granted %v, want %v (err %v)", r.name, r.granted(), want, r.err)
		}
	}
}

func TestQueue_ForegroundFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, sharedReads, Options{})
		o := &order{}
		holder := start(t, q, o, "holder", Foreground, Write)
		// Background arrives first, then foreground; foreground still goes first.
		bg := start(t, q, o, "bg", Background, Write)
		fg1 := start(t, q, o, "fg1", Foreground, Write)
		fg2 := start(t, q, o, "fg2", Foreground, Read)
		got := drain(t, o, holder, bg, fg1, fg2)
		if want := []string{"holder", "fg1", "fg2", "bg"}; !slices.Equal(got, want) {
			t.Fatalf("grant order %v, want %v", got, want)
		}
	})
}

func TestQueue_BackgroundAfterBypassGrants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		bypass int
	}{
		{"default", Options{}, 8},
		{"option", Options{BypassGrants: 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := mustQueue(t, wal, tc.opts)
				o := &order{}
				rs := []*request{start(t, q, o, "holder", Foreground, Write), start(t, q, o, "bg", Background, Write)}
				for range tc.bypass + 2 {
					rs = append(rs, start(t, q, o, "fg", Foreground, Write))
				}
				got := drain(t, o, rs...)
				// After the holder, bypass foreground grants overtake bg, then bg goes.
				if i := slices.Index(got, "bg"); i != tc.bypass+1 {
					t.Fatalf("bg granted at position %d, want %d: %v", i, tc.bypass+1, got)
				}
			})
		})
	}
}

func TestQueue_BackgroundAfterMaxWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		wait   time.Duration
		wantBg bool // bg goes before the waiting foreground request
	}{
		{"default 1s reached", Options{}, time.Second, true},
		{"default 1s not reached", Options{}, time.Second - time.Millisecond, false},
		{"option 50ms reached", Options{MaxBackgroundWait: 50 * time.Millisecond}, 50 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := mustQueue(t, wal, tc.opts)
				o := &order{}
				holder := start(t, q, o, "holder", Foreground, Write)
				bg := start(t, q, o, "bg", Background, Write)
				time.Sleep(tc.wait)
				fg := start(t, q, o, "fg", Foreground, Write)
				got := drain(t, o, holder, bg, fg)
				want := []string{"holder", "fg", "bg"}
				if tc.wantBg {
					want = []string{"holder", "bg", "fg"}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("grant order %v, want %v", got, want)
				}
			})
		})
	}
}

func TestQueue_BackgroundBacklogDoesNotBurst(t *testing.T) {
	// Two background requests wait under a foreground load. Once the first is granted, the
	// second counts its bypasses and its wait from that grant, not from its arrival: the
	// foreground requests get their 8 grants (or 1 s) again before it, instead of waiting for
	// two background commits in a row.
	t.Run("bypass grants", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, wal, Options{})
			o := &order{}
			rs := []*request{start(t, q, o, "holder", Foreground, Write),
				start(t, q, o, "bg1", Background, Write), start(t, q, o, "bg2", Background, Write)}
			for range 12 {
				rs = append(rs, start(t, q, o, "fg", Foreground, Write))
			}
			got := drain(t, o, rs...)
			if i, j := slices.Index(got, "bg1"), slices.Index(got, "bg2"); i != 9 || j != len(got)-1 {
				t.Fatalf("bg1 at %d, bg2 at %d, want 9 and last (after the remaining 4 foreground): %v", i, j, got)
			}
		})
	})
	t.Run("wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, wal, Options{})
			o := &order{}
			holder := start(t, q, o, "holder", Foreground, Write)
			bg1 := start(t, q, o, "bg1", Background, Write)
			bg2 := start(t, q, o, "bg2", Background, Write)
			time.Sleep(2 * time.Second) // both have waited over 1 s
			fg := start(t, q, o, "fg", Foreground, Write)
			got := drain(t, o, holder, bg1, bg2, fg)
			if want := []string{"holder", "bg1", "fg", "bg2"}; !slices.Equal(got, want) {
				t.Fatalf("grant order %v, want %v", got, want)
			}
		})
	})
}

func TestQueue_BackgroundDeadlineGrantsWithoutAnEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, sharedReads, Options{})
		reader := start(t, q, nil, "reader", Foreground, Read)
		writer := start(t, q, nil, "fg writer", Foreground, Write) // waits for reader
		bg := start(t, q, nil, "bg reader", Background, Read)      // waits behind the writer
		wantGranted(t, false, writer, bg)
		// Nothing is released; once bg has waited 1 s it goes next, and a reader fits
		// beside the reader at once.
		time.Sleep(time.Second)
		synctest.Wait()
		wantGranted(t, true, bg)
		wantGranted(t, false, writer)
		reader.release(t)
		bg.release(t)
		wantGranted(t, true, writer)
		writer.release(t)
	})
}

func TestQueue_ForegroundGrace(t *testing.T) {
	t.Run("a foreground caller asking again at once goes first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, sharedReads, Options{})
			fg := q.NewSession("wallet", "dest")
			cur := startSession(t, fg, nil, "fg", Foreground, Write)
			bg := start(t, q, nil, "bg", Background, Write)
			// Between a release and the next request the foreground line is empty; the
			// background must not slip in there (no time passes in the bubble).
			for range 3 {
				cur.release(t)
				wantGranted(t, false, bg)
				cur = startSession(t, fg, nil, "fg again", Foreground, Write)
				wantGranted(t, true, cur)
			}
			cur.release(t)
			passGrace()
			wantGranted(t, true, bg)
			bg.release(t)
		})
	})
	t.Run("the bypass bound still holds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, sharedReads, Options{})
			o := &order{}
			fg := q.NewSession("wallet", "dest")
			cur := startSession(t, fg, o, "holder", Foreground, Write)
			bg := start(t, q, o, "bg", Background, Write)
			for range 8 {
				cur.release(t)
				cur = startSession(t, fg, o, "fg", Foreground, Write)
			}
			// Eight foreground grants overtook bg: it is due, grace or not.
			cur.release(t)
			wantGranted(t, true, bg)
			next := startSession(t, fg, o, "fg after bg", Foreground, Write)
			bg.release(t)
			wantGranted(t, true, next)
			next.release(t)
			if got := o.get(); slices.Index(got, "bg") != 9 {
				t.Fatalf("bg granted at position %d, want 9: %v", slices.Index(got, "bg"), got)
			}
		})
	})
	for _, tc := range []struct {
		name  string
		opts  Options
		grace time.Duration
	}{
		{"default 1ms ends without an event", Options{}, time.Millisecond},
		{"option 10ms", Options{ForegroundGrace: 10 * time.Millisecond}, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := mustQueue(t, sharedReads, tc.opts)
				holder := start(t, q, nil, "holder", Foreground, Read)
				bg := start(t, q, nil, "bg", Background, Write)
				holder.release(t)
				time.Sleep(tc.grace - time.Nanosecond)
				synctest.Wait()
				wantGranted(t, false, bg)
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				wantGranted(t, true, bg)
				if w := bg.grant.Wait(); w != tc.grace {
					t.Fatalf("bg waited %v, want the grace %v", w, tc.grace)
				}
				bg.release(t)
			})
		})
	}
	t.Run("no grace after a background release", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, sharedReads, Options{})
			bg1 := start(t, q, nil, "bg1", Background, Write)
			bg2 := start(t, q, nil, "bg2", Background, Write)
			bg1.release(t)
			wantGranted(t, true, bg2)
			bg2.release(t)
		})
	})
}

// TestQueue_SequentialForegroundCatchesUp is the wallet front end against a background copy,
// in fake time: a foreground caller due every 5 ms, running one 2 ms request after another
// (so it falls behind whenever it waits), and a background job that reads a page for 3 ms and
// commits it for 10 ms under a write grant, again and again. The foreground waits for at most
// one commit and then catches up: no request finishes later than one commit plus two of its
// own after it was due. Without the grace the copy took the store between every two
// foreground requests, each request waited for a commit, and the lateness grew without
// bound (to some 800 ms in this schedule).
func TestQueue_SequentialForegroundCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, service, read, commit = 5 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond
		q := mustQueue(t, wal, Options{})
		ctx, stop := context.WithCancel(t.Context())
		var commits atomic.Int64
		bgDone := make(chan struct{})
		go func() {
			defer close(bgDone)
			s := q.NewSession("wallet", "dest")
			for ctx.Err() == nil {
				time.Sleep(read)
				g, err := s.Acquire(ctx, Background, Write)
				if err != nil {
					return
				}
				time.Sleep(commit)
				s.Release(g)
				commits.Add(1)
			}
		}()
		fg := q.NewSession("wallet", "dest")
		begin := time.Now()
		var worst time.Duration
		for i := range 400 { // 2 s
			due := begin.Add(time.Duration(i) * interval)
			time.Sleep(time.Until(due))
			g, err := fg.Acquire(t.Context(), Foreground, Write)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(service)
			if err := fg.Release(g); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, time.Since(due))
		}
		stop()
		<-bgDone
		if limit := commit + 2*service; worst > limit {
			t.Fatalf("a foreground request finished %v after it was due, want at most %v", worst, limit)
		}
		// The copy still gets what the foreground leaves: 60% of the store here, less the
		// graces and the reads it does not overlap. A fraction of that is enough to show it
		// is not starved.
		if n := commits.Load(); n < 40 {
			t.Fatalf("%d background commits in 2 s, want at least 40", n)
		}
		t.Logf("worst foreground lateness %v, %d background commits in 2 s", worst, commits.Load())
	})
}

func TestQueue_ReadersShareWritersExclusive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cap     wallet.Capabilities
		opts    Options
		readers int
	}{
		{"store with shared reads, 8 readers", sharedReads, Options{}, 8},
		{"MaxReaders below the capability", sharedReads, Options{MaxReaders: 3}, 3},
		{"capability below MaxReaders", wallet.Capabilities{ConcurrentReads: 2}, Options{}, 2},
		{"store without the capability", wallet.Capabilities{}, Options{}, 1},
		{"store promising one reader", wallet.Capabilities{ConcurrentReads: 1}, Options{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := mustQueue(t, tc.cap, tc.opts)
				var readers []*request
				for range tc.readers {
					readers = append(readers, start(t, q, nil, "reader", Foreground, Read))
				}
				wantGranted(t, true, readers...)
				extra := start(t, q, nil, "one reader too many", Foreground, Read)
				wantGranted(t, false, extra)
				readers[0].release(t)
				wantGranted(t, true, extra)

				// A writer waits for every reader, then holds alone.
				writer := start(t, q, nil, "writer", Foreground, Write)
				for _, r := range append(readers[1:], extra) {
					wantGranted(t, false, writer)
					r.release(t)
				}
				wantGranted(t, true, writer)
				late := start(t, q, nil, "reader beside the writer", Foreground, Read)
				bgWriter := start(t, q, nil, "second writer", Background, Write)
				wantGranted(t, false, late, bgWriter)
				writer.release(t)
				wantGranted(t, true, late)
				late.release(t)
				passGrace()
				wantGranted(t, true, bgWriter)
				bgWriter.release(t)
			})
		})
	}
}

// On a store with ReadsBesideWriter (SQLite in WAL mode) readers of both classes hold while
// one writer holds, up to the reader limit; writers stay exclusive among writers, and a
// waiting foreground writer still goes before a background writer that asked first.
func TestQueue_ReadersBesideWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		o := &order{}
		commit := start(t, q, o, "background commit", Background, Write)
		bgWriter := start(t, q, o, "second background writer", Background, Write)
		fgWriter := start(t, q, o, "foreground writer", Foreground, Write)
		var readers []*request
		for i := range 8 {
			class := Foreground
			if i%2 == 1 {
				class = Background
			}
			readers = append(readers, start(t, q, o, "reader", class, Read))
		}
		wantGranted(t, true, commit)
		wantGranted(t, true, readers...)
		wantGranted(t, false, bgWriter, fgWriter)
		extra := start(t, q, o, "ninth reader", Foreground, Read)
		wantGranted(t, false, extra)
		readers[0].release(t)
		wantGranted(t, true, extra)
		wantGranted(t, false, bgWriter, fgWriter)

		commit.release(t)
		wantGranted(t, true, fgWriter) // foreground first, beside the readers
		wantGranted(t, false, bgWriter)
		fgWriter.release(t)
		passGrace()
		wantGranted(t, true, bgWriter)
		for _, r := range append(readers[1:], extra, bgWriter) {
			r.release(t)
		}
	})
}

// A foreground writer on a store with ReadsBesideWriter does not wait for background
// readers (a backup's snapshot reads), and readers arriving while it holds are not held back.
func TestQueue_ForegroundWriterBesideBackgroundReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		bg1 := start(t, q, nil, "background reader", Background, Read)
		bg2 := start(t, q, nil, "background reader", Background, Read)
		fg := start(t, q, nil, "foreground writer", Foreground, Write)
		wantGranted(t, true, bg1, bg2, fg)
		late := start(t, q, nil, "late background reader", Background, Read)
		wantGranted(t, true, late)
		for _, r := range []*request{fg, bg1, bg2, late} {
			r.release(t)
		}
	})
}

// On a store with ReadsBesideWriter, readers and writers wait in different lanes: a waiting
// writer does not stop readers, and foreground reads granted beside a waiting background
// writer neither count as bypassing it nor end its wait early. The fairness rule holds among
// writers as before: after BypassGrants foreground writes, the background writer goes.
func TestQueue_BesideWriterFairnessCountsWritersOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{BypassGrants: 2})
		o := &order{}
		holder := start(t, q, o, "holder", Foreground, Write)
		bg := start(t, q, o, "bg", Background, Write)
		for range 5 {
			r := start(t, q, o, "fg read", Foreground, Read)
			wantGranted(t, true, r)
			r.release(t)
		}
		rs := []*request{holder, bg}
		for range 3 {
			rs = append(rs, start(t, q, o, "fg write", Foreground, Write))
		}
		got := drain(t, o, rs...)
		want := []string{"holder", "fg read", "fg read", "fg read", "fg read", "fg read", "fg write", "fg write", "bg", "fg write"}
		if !slices.Equal(got, want) {
			t.Fatalf("grant order %v, want %v", got, want)
		}
	})
}

func TestQueue_WaitingWriterStopsNewReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, sharedReads, Options{})
		reader := start(t, q, nil, "reader", Foreground, Read)
		writer := start(t, q, nil, "writer", Foreground, Write)
		late := start(t, q, nil, "late reader", Foreground, Read)
		// The late reader would fit beside the first, but the writer asked first.
		wantGranted(t, false, writer, late)
		reader.release(t)
		wantGranted(t, true, writer)
		wantGranted(t, false, late)
		writer.release(t)
		wantGranted(t, true, late)
		late.release(t)
	})
}

func TestSession_Acquire_CancelledWaiterNeverGranted(t *testing.T) {
	t.Run("cancelled while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, wal, Options{})
			holder := start(t, q, nil, "holder", Foreground, Write)
			waiter := start(t, q, nil, "waiter", Foreground, Write)
			waiter.cancel()
			synctest.Wait()
			if !waiter.finished() || !errors.Is(waiter.err, context.Canceled) || waiter.grant != nil {
				t.Fatalf("cancelled waiter: finished %v, grant %v, err %v; want context.Canceled at once", waiter.finished(), waiter.grant, waiter.err)
			}
			// It left the line: the next writer goes straight after the holder.
			next := start(t, q, nil, "next", Foreground, Write)
			holder.release(t)
			wantGranted(t, true, next)
			next.release(t)
			if m := q.Metrics(); m.Foreground.Cancelled != 1 || m.Foreground.Grants != 2 {
				t.Fatalf("metrics %+v, want 1 cancelled and 2 grants", m.Foreground)
			}
		})
	})
	t.Run("context ends as the grant arrives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, wal, Options{})
			holder := start(t, q, nil, "holder", Foreground, Write)
			ctx := &endsUnseen{Context: t.Context()}
			waiter := &request{name: "waiter", sess: q.NewSession("wallet", "dest"), done: make(chan struct{})}
			go func() {
				defer close(waiter.done)
				waiter.grant, waiter.err = waiter.sess.Acquire(ctx, Foreground, Write)
			}()
			synctest.Wait()
			// The waiter can only wake on the grant, and by then its context has ended.
			ctx.ended.Store(true)
			holder.release(t)
			if !errors.Is(waiter.err, context.Canceled) || waiter.grant != nil {
				t.Fatalf("waiter: grant %v, err %v; want context.Canceled and no grant", waiter.grant, waiter.err)
			}
			next := start(t, q, nil, "next", Foreground, Write)
			wantGranted(t, true, next) // the grant was given back, not leaked
			next.release(t)
		})
	})
	t.Run("grant arrives as the waiter leaves", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := mustQueue(t, wal, Options{})
			holder := start(t, q, nil, "holder", Foreground, Write)
			waiter := start(t, q, nil, "waiter", Foreground, Write)
			// Holding the queue's lock, end the waiter's context and then grant it: the
			// waiter, woken by its context, finds itself a holder when it gets the lock.
			q.mu.Lock()
			waiter.cancel()
			q.freeLocked(holder.grant, time.Now())
			q.mu.Unlock()
			synctest.Wait()
			if !errors.Is(waiter.err, context.Canceled) || waiter.grant != nil {
				t.Fatalf("waiter: grant %v, err %v; want context.Canceled and no grant", waiter.grant, waiter.err)
			}
			next := start(t, q, nil, "next", Foreground, Write)
			wantGranted(t, true, next)
			next.release(t)
		})
	})
	t.Run("cancelled before asking", func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		g, err := q.NewSession("wallet", "dest").Acquire(ctx, Foreground, Read)
		if !errors.Is(err, context.Canceled) || g != nil {
			t.Fatalf("Acquire with an ended context on an idle queue = %v, %v; want context.Canceled", g, err)
		}
	})
}

// endsUnseen is a context that ends without a Done signal: its Err reports the end once
// ended is set. It pins the instant a request's context ends exactly as its grant arrives.
type endsUnseen struct {
	context.Context
	ended atomic.Bool
}

func (c *endsUnseen) Done() <-chan struct{} { return nil }

func (c *endsUnseen) Err() error {
	if c.ended.Load() {
		return context.Canceled
	}
	return nil
}

func TestQueue_Fence_RejectsQueuedStaleRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		holder := startSession(t, q.NewSession("wallet", "other"), nil, "holder", Foreground, Write)
		oldSess := q.NewSession("wallet", "dest")
		stale := startSession(t, oldSess, nil, "queued on dest", Background, Write)
		bystander := startSession(t, q.NewSession("wallet", "other"), nil, "queued on other", Background, Write)
		if oldSess.Generation() != 0 {
			t.Fatalf("first generation %d, want 0", oldSess.Generation())
		}

		q.Fence("dest")
		synctest.Wait()
		if !stale.finished() || !errors.Is(stale.err, wallet.ErrStaleSession) {
			t.Fatalf("queued request of a fenced destination: finished %v, err %v; want wallet.ErrStaleSession", stale.finished(), stale.err)
		}
		wantGranted(t, false, bystander)
		// The old session stays stale: asking again fails at once.
		if _, err := oldSess.Acquire(t.Context(), Foreground, Read); !errors.Is(err, wallet.ErrStaleSession) {
			t.Fatalf("Acquire on a fenced session = %v, want wallet.ErrStaleSession", err)
		}
		// A session made after the fence is current.
		fresh := startSession(t, q.NewSession("wallet", "dest"), nil, "fresh on dest", Foreground, Write)
		if !fresh.sess.Valid() || fresh.sess.Generation() != 1 {
			t.Fatalf("session made after the fence: valid %v, generation %d; want true, 1", fresh.sess.Valid(), fresh.sess.Generation())
		}
		holder.release(t)
		wantGranted(t, true, fresh)
		fresh.release(t)
		passGrace()
		wantGranted(t, true, bystander)
		bystander.release(t)
		if m := q.Metrics(); m.Background.Stale != 1 || m.Foreground.Stale != 1 {
			t.Fatalf("stale counts fg %d bg %d, want 1 and 1", m.Foreground.Stale, m.Background.Stale)
		}
	})
}

func TestQueue_Fence_HeldGrantHonouredButInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		holder := start(t, q, nil, "old holder", Background, Write)
		if !holder.sess.Valid() {
			t.Fatal("session invalid before any fence")
		}
		next := startSession(t, q.NewSession("wallet", "elsewhere"), nil, "next", Foreground, Write)
		q.Fence("dest")
		synctest.Wait()
		// The grant is still held (next still waits), but nothing it brings back may be
		// written: Valid says so.
		if holder.sess.Valid() {
			t.Fatal("Valid true after the destination was fenced")
		}
		wantGranted(t, false, next)
		holder.release(t)
		wantGranted(t, true, next)
		next.release(t)
	})
}

func TestSession_Acquire_Reentrant(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode Mode
		wait bool // the first request waits instead of holding
	}{
		{"holding a read", Read, false},
		{"holding a write", Write, false},
		{"waiting", Write, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := mustQueue(t, wal, Options{})
				var blocker *request
				if tc.wait {
					blocker = start(t, q, nil, "blocker", Foreground, Write)
				}
				s := q.NewSession("wallet", "dest")
				first := startSession(t, s, nil, "first", Background, tc.mode)
				wantGranted(t, !tc.wait, first)
				// Asked on the caller's goroutine: a deadlock would hang the bubble.
				for _, mode := range []Mode{Read, Write} {
					if g, err := s.Acquire(t.Context(), Foreground, mode); !errors.Is(err, ErrReentrant) || g != nil {
						t.Fatalf("second %s Acquire on one session = %v, %v; want ErrReentrant", mode, g, err)
					}
				}
				if blocker != nil {
					blocker.release(t)
					passGrace()
				}
				first.release(t)
				// Once released, the session may ask again.
				again := startSession(t, s, nil, "again", Foreground, Write)
				wantGranted(t, true, again)
				again.release(t)
			})
		})
	}
}

func TestSession_Release_Twice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		r := start(t, q, nil, "holder", Foreground, Write)
		r.release(t)
		if err := r.sess.Release(r.grant); !errors.Is(err, ErrReleased) {
			t.Fatalf("second Release = %v, want ErrReleased", err)
		}
		// The session's next grant is not touched by a stale release of its last one.
		again := startSession(t, r.sess, nil, "again", Foreground, Write)
		if err := r.sess.Release(r.grant); !errors.Is(err, ErrReleased) {
			t.Fatalf("Release of an old grant while a new one is held = %v, want ErrReleased", err)
		}
		waiter := start(t, q, nil, "waiter", Foreground, Write)
		wantGranted(t, false, waiter)
		again.release(t)
		wantGranted(t, true, waiter)
		waiter.release(t)
	})
}

func TestSession_Release_AnotherSessionsGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		holder := start(t, q, nil, "holder", Foreground, Write)
		other := q.NewSession("wallet", "dest")
		if err := other.Release(holder.grant); !errors.Is(err, ErrNotHolder) {
			t.Fatalf("Release of another session's grant = %v, want ErrNotHolder", err)
		}
		if err := other.Release(nil); !errors.Is(err, ErrNotHolder) {
			t.Fatalf("Release(nil) = %v, want ErrNotHolder", err)
		}
		otherQueue := mustQueue(t, wal, Options{}).NewSession("wallet", "dest")
		if err := otherQueue.Release(holder.grant); !errors.Is(err, ErrNotHolder) {
			t.Fatalf("Release through another queue's session = %v, want ErrNotHolder", err)
		}
		// The grant is still held: a writer still waits.
		waiter := start(t, q, nil, "waiter", Foreground, Write)
		wantGranted(t, false, waiter)
		holder.release(t)
		wantGranted(t, true, waiter)
		waiter.release(t)
	})
}

func TestQueue_Switch_PendingSwitchesApplyInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, sharedReads, Options{})
		if err := q.Switch(t.Context(), "A", nil); err != nil {
			t.Fatal(err)
		}
		onA := startSession(t, q.NewSession("wallet", "A"), nil, "held on A", Background, Read)
		passGrace() // the switch's own foreground grant was just released
		wantGranted(t, true, onA)

		applied := &order{}
		madeDuring := map[string]*Session{} // a session of each destination, made as it became active
		var madeMu sync.Mutex
		switchTo := func(to string, ctx context.Context) chan error {
			errc := make(chan error, 1) // buffered: the switch finishes whether or not we read
			go func() {
				errc <- q.Switch(ctx, to, func(context.Context) error {
					applied.add(to)
					madeMu.Lock()
					defer madeMu.Unlock()
					madeDuring[to] = q.NewSession("wallet", to)
					return nil
				})
			}()
			synctest.Wait()
			return errc
		}
		toB := switchTo("B", t.Context())
		// B is first in line: A is fenced at once, but B waits for the held grant.
		if onA.sess.Valid() {
			t.Fatal("session of A still valid while a switch away from A is pending")
		}
		toC := switchTo("C", t.Context())
		cancelled, cancel := context.WithCancel(t.Context())
		toX := switchTo("X", cancelled)
		toD := switchTo("D", t.Context())
		cancel() // X gives up while pending: it leaves the line and applies nothing
		synctest.Wait()
		if err := <-toX; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled pending switch = %v, want context.Canceled", err)
		}
		if got := applied.get(); len(got) != 0 || q.Active() != "A" {
			t.Fatalf("applied %v, active %q while the old grant is held; want none, A", got, q.Active())
		}

		onA.release(t)
		for _, errc := range []chan error{toB, toC, toD} {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		if got, want := applied.get(), []string{"B", "C", "D"}; !slices.Equal(got, want) {
			t.Fatalf("switches applied in order %v, want %v", got, want)
		}
		if q.Active() != "D" {
			t.Fatalf("active %q, want D", q.Active())
		}
		// Each pending switch fenced what was active at its turn, not at its call: work
		// started on B or C after they became active is stale once they were replaced.
		for d, want := range map[string]bool{"B": false, "C": false, "D": true} {
			if got := madeDuring[d].Valid(); got != want {
				t.Fatalf("session made as %s became active: valid %v, want %v", d, got, want)
			}
		}
	})
}

func TestQueue_Switch_FencesTheDestinationItReplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, wal, Options{})
		if err := q.Switch(t.Context(), "B", nil); err != nil {
			t.Fatal(err)
		}
		onB := q.NewSession("wallet", "B")
		onC := q.NewSession("wallet", "C")
		if err := q.Switch(t.Context(), "B", nil); err != nil || !onB.Valid() {
			t.Fatalf("switch to the active destination: err %v, session valid %v; want nil, true", err, onB.Valid())
		}
		failed := errors.New("write users.activeStorage")
		err := q.Switch(t.Context(), "C", func(context.Context) error { return failed })
		if !errors.Is(err, failed) || q.Active() != "B" {
			t.Fatalf("switch whose apply failed: err %v, active %q; want the apply error, B", err, q.Active())
		}
		// The fence of a started switch is not undone: B's sessions must be made again.
		if onB.Valid() || !onC.Valid() {
			t.Fatalf("after a failed switch from B to C: B valid %v, C valid %v; want false, true", onB.Valid(), onC.Valid())
		}
	})
}

func TestQueue_Metrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQueue(t, sharedReads, Options{RecentSamples: 3})
		holder := start(t, q, nil, "holder", Foreground, Write)
		bg := start(t, q, nil, "bg", Background, Read)
		// Durations below are the bubble's fake time, exact by construction.
		time.Sleep(30 * time.Millisecond)
		holder.release(t)
		// bg waits out the foreground grace after the holder's release, then holds 5 ms.
		time.Sleep(defaultForegroundGrace + 5*time.Millisecond)
		bg.release(t)
		for range 2 {
			r := start(t, q, nil, "quick", Foreground, Read)
			r.release(t)
		}
		m := q.Metrics()
		if m.Foreground.Grants != 3 || m.Background.Grants != 1 {
			t.Fatalf("grants fg %d bg %d, want 3 and 1", m.Foreground.Grants, m.Background.Grants)
		}
		if want := 30*time.Millisecond + defaultForegroundGrace; m.Background.MaxWait != want || m.Background.MaxHold != 5*time.Millisecond {
			t.Fatalf("background max wait %v, hold %v; want %v, 5ms", m.Background.MaxWait, m.Background.MaxHold, want)
		}
		if m.Foreground.MaxHold != 30*time.Millisecond || m.Foreground.TotalWait != 0 {
			t.Fatalf("foreground max hold %v, total wait %v; want 30ms, 0", m.Foreground.MaxHold, m.Foreground.TotalWait)
		}
		// The ring keeps the last 3 of 4 grants, oldest first: bg, then the two quick reads.
		if len(m.Recent) != 3 || m.Recent[0].Class != Background || m.Recent[2].Class != Foreground {
			t.Fatalf("recent %+v, want bg then two foreground reads", m.Recent)
		}
		js, err := json.Marshal(m.Recent[0])
		if err != nil || !strings.Contains(string(js), `"class":"background","mode":"read"`) {
			t.Fatalf("sample as JSON = %s, %v; want wire names", js, err)
		}
	})
}

func TestSession_Acquire_RejectsInvalidArguments(t *testing.T) {
	q := mustQueue(t, wal, Options{})
	for _, tc := range []struct {
		class Class
		mode  Mode
	}{{0, Read}, {Foreground, 0}, {3, Write}, {Background, 7}} {
		if _, err := q.NewSession("wallet", "dest").Acquire(t.Context(), tc.class, tc.mode); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Fatalf("Acquire(%s, %s) = %v, want ErrInvalidArgument", tc.class, tc.mode, err)
		}
	}
}

func TestNew_RejectsInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cap  wallet.Capabilities
		opts Options
	}{
		{"negative capability", wallet.Capabilities{ConcurrentReads: -1}, Options{}},
		{"negative readers", wal, Options{MaxReaders: -1}},
		{"negative bypass", wal, Options{BypassGrants: -1}},
		{"negative wait", wal, Options{MaxBackgroundWait: -time.Second}},
		{"negative samples", wal, Options{RecentSamples: -1}},
		{"negative grace", wal, Options{ForegroundGrace: -time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cap, tc.opts); !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("New = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestClassMode_WireNames(t *testing.T) {
	for _, tc := range []struct {
		v    interface{ MarshalText() ([]byte, error) }
		want string
	}{
		{Foreground, "foreground"}, {Background, "background"}, {Read, "read"}, {Write, "write"},
	} {
		if got, err := tc.v.MarshalText(); err != nil || string(got) != tc.want || tc.v.(interface{ String() string }).String() != tc.want {
			t.Fatalf("%v: text %q, %v; want %q", tc.v, got, err, tc.want)
		}
	}
	for _, v := range []interface{ MarshalText() ([]byte, error) }{Class(0), Mode(9)} {
		if _, err := v.MarshalText(); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Fatalf("%v: MarshalText error %v, want ErrInvalidArgument", v, err)
		}
	}
}
