package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"walletsync/wallet"
)

// fakeView is a backend view that counts its closes; a read blocks while hold is set.
type fakeView struct {
	closes atomic.Int32
	hold   chan struct{}
	empty  bool // the store holds no user: every page is wallet.ErrNotFound
}

func (v *fakeView) ID() string                                                    { return "fake" }
func (v *fakeView) Journal(int64) (int64, bool)                                   { return 0, false }
func (v *fakeView) Resume(wallet.TableName, wallet.Cursor) (wallet.Cursor, error) { return "", nil }
func (v *fakeView) Close() error                                                  { v.closes.Add(1); return nil }
func (v *fakeView) ReadPage(context.Context, wallet.PageRequest) (wallet.Page, error) {
	if v.hold != nil {
		<-v.hold
	}
	if v.empty {
		return wallet.Page{}, wallet.ErrNotFound
	}
	return wallet.Page{Done: true}, nil
}

// opener returns an open function that hands out fake views and records them.
func opener(made *[]*fakeView) func(context.Context, time.Duration) (wallet.View, error) {
	return func(context.Context, time.Duration) (wallet.View, error) {
		v := &fakeView{}
		*made = append(*made, v)
		return v, nil
	}
}

func mustOpen(t *testing.T, vs *views, identity string, lifetime time.Duration, made *[]*fakeView) *retained {
	t.Helper()
	r, err := vs.open(t.Context(), identity, lifetime, opener(made))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// busy checks that err is a quota refusal of the given scope with a retry hint.
func busy(t *testing.T, err error, identity bool) {
	t.Helper()
	var b *wallet.BusyError
	var q *quotaError
	if !errors.As(err, &b) || !errors.As(err, &q) || b.RetryAfter <= 0 || q.identity != identity {
		t.Fatalf("err = %v, want a busy refusal (identity's quota: %v) with a retry hint", err, identity)
	}
}

// TestViews_ReapedAtTheEndOfTheLifetime: a view nobody touches is closed when its lifetime
// ends, not a moment before, and its handle then answers ErrSnapshotClosed.
func TestViews_ReapedAtTheEndOfTheLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vs := newViews(ViewOptions{IdleTimeout: time.Hour})
		var made []*fakeView
		lifetime, err := vs.lifetime(0)
		if err != nil || lifetime != DefaultViewLifetime {
			t.Fatalf("default lifetime %v, %v", lifetime, err)
		}
		r := mustOpen(t, vs, "a", lifetime, &made)
		time.Sleep(lifetime - time.Millisecond)
		synctest.Wait()
		if made[0].closes.Load() != 0 || vs.stats().Open != 1 {
			t.Fatalf("closed before its lifetime ended")
		}
		if _, err := vs.get("a", r.handle); err != nil {
			t.Fatalf("live view: %v", err)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if made[0].closes.Load() != 1 || vs.stats().Open != 0 {
			t.Fatalf("after its lifetime: %d closes, %d open", made[0].closes.Load(), vs.stats().Open)
		}
		if _, err := vs.get("a", r.handle); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("reaped view: err = %v", err)
		}
		// The quota it held is free again.
		mustOpen(t, vs, "a", time.Minute, &made)
		vs.closeAll()
	})
}

// TestViews_IdleReleased: a view of the longest lifetime that requests keep using stays
// open; once no request used it for IdleTimeout it is closed (a read in flight never is),
// its quota is free, its handle answers ErrSnapshotClosed, and the release is counted.
func TestViews_IdleReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vs := newViews(ViewOptions{})
		var made []*fakeView
		r := mustOpen(t, vs, "a", MaxViewLifetime, &made)
		for range 3 { // used just inside the idle timeout, again and again
			time.Sleep(DefaultViewIdleTimeout - time.Second)
			synctest.Wait()
			if _, err := vs.get("a", r.handle); err != nil {
				t.Fatalf("a view in use: %v", err)
			}
		}
		// A read that lasts longer than the idle timeout is not cut short.
		made[0].hold = make(chan struct{})
		read := make(chan error, 1)
		go func() {
			done, err := vs.read(r, 1, func(v wallet.View) error { _, err := v.ReadPage(t.Context(), wallet.PageRequest{}); return err })
			if done != nil {
				done()
			}
			read <- err
		}()
		time.Sleep(2 * DefaultViewIdleTimeout)
		synctest.Wait()
		if made[0].closes.Load() != 0 {
			t.Fatal("closed while a read was in flight")
		}
		close(made[0].hold)
		if err := <-read; err != nil {
			t.Fatalf("the long read: %v", err)
		}
		time.Sleep(DefaultViewIdleTimeout - time.Second)
		synctest.Wait()
		if made[0].closes.Load() != 0 || vs.stats().Open != 1 {
			t.Fatal("released before the idle timeout after its last read")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := vs.stats(); made[0].closes.Load() != 1 || st.Open != 0 || st.IdleReleases != 1 {
			t.Fatalf("idle for %v: %d closes, %+v", DefaultViewIdleTimeout, made[0].closes.Load(), st)
		}
		if _, err := vs.get("a", r.handle); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("idle-released view: err = %v", err)
		}
		mustOpen(t, vs, "a", time.Minute, &made) // its quota is free
		vs.closeAll()
		if st := vs.stats(); st.IdleReleases != 1 {
			t.Fatalf("a close counted as an idle release: %+v", st)
		}
	})
}

// TestViews_EmptyIdentityLifetime: a view of an identity the store holds no user for lives
// EmptyLifetime at most, however long it asked for and however busily it is read; a known
// identity's view keeps the lifetime it asked for.
func TestViews_EmptyIdentityLifetime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		empty bool
		lives time.Duration
	}{{"unknown identity", true, DefaultEmptyViewLifetime}, {"known identity", false, 3 * DefaultEmptyViewLifetime}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vs := newViews(ViewOptions{})
				v := &fakeView{empty: tc.empty}
				r, err := vs.open(t.Context(), "a", 3*DefaultEmptyViewLifetime, func(context.Context, time.Duration) (wallet.View, error) { return v, nil })
				if err != nil {
					t.Fatal(err)
				}
				for elapsed := time.Duration(0); elapsed < tc.lives-time.Second; elapsed += time.Second {
					time.Sleep(time.Second)
					if _, err := vs.get("a", r.handle); err != nil {
						t.Fatalf("after %v of %v: %v", elapsed+time.Second, tc.lives, err)
					}
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if v.closes.Load() != 1 || vs.stats().Open != 0 {
					t.Fatalf("after %v: %d closes, %d open", tc.lives, v.closes.Load(), vs.stats().Open)
				}
			})
		})
	}
}

func TestViews_LifetimeBounds(t *testing.T) {
	vs := newViews(ViewOptions{MaxLifetime: 2 * time.Hour, DefaultLifetime: 90 * time.Minute})
	if vs.opts.MaxLifetime != time.Hour || vs.opts.DefaultLifetime != time.Hour {
		t.Fatalf("options beyond an hour kept: %+v", vs.opts)
	}
	for _, ms := range []int64{-1, int64(time.Hour/time.Millisecond) + 1} {
		if _, err := vs.lifetime(ms); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("lifetime %dms: err = %v", ms, err)
		}
	}
	if d, err := vs.lifetime(int64(time.Hour / time.Millisecond)); err != nil || d != time.Hour {
		t.Errorf("an hour: %v, %v", d, err)
	}
}

// TestViews_ViewQuotas: one open view per identity and eight on the server by default;
// each refusal is typed and says whose quota is full.
func TestViews_ViewQuotas(t *testing.T) {
	vs := newViews(ViewOptions{})
	var made []*fakeView
	first := mustOpen(t, vs, "id0", time.Minute, &made)
	_, err := vs.open(t.Context(), "id0", time.Minute, opener(&made))
	busy(t, err, true)
	for i := 1; i < DefaultMaxViews; i++ {
		mustOpen(t, vs, fmt.Sprint("id", i), time.Minute, &made)
	}
	_, err = vs.open(t.Context(), "id8", time.Minute, opener(&made))
	busy(t, err, false)
	if len(made) != DefaultMaxViews {
		t.Fatalf("the backend opened %d views, want %d", len(made), DefaultMaxViews)
	}
	vs.release(first)
	mustOpen(t, vs, "id8", time.Minute, &made)
	vs.closeAll()
	for i, v := range made {
		if n := v.closes.Load(); n != 1 {
			t.Errorf("view %d closed %d times", i, n)
		}
	}
	if st := vs.stats(); st != (ViewStats{}) {
		t.Fatalf("after closeAll: %+v", st)
	}
}

// TestViews_ByteQuotas: reads in flight reserve their byte limit under the identity's and
// the server's budgets; a read over a budget runs only while nothing else is reserved.
func TestViews_ByteQuotas(t *testing.T) {
	const mib = 1 << 20
	vs := newViews(ViewOptions{MaxViewsPerIdentity: 2})
	var made []*fakeView
	a1, a2 := mustOpen(t, vs, "a", time.Minute, &made), mustOpen(t, vs, "a", time.Minute, &made)
	hold := func(r *retained, bytes int64) (release func()) {
		t.Helper()
		v := r.view.(*fakeView)
		v.hold = make(chan struct{})
		started, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			done, err := vs.read(r, bytes, func(v wallet.View) error {
				close(started)
				_, err := v.ReadPage(context.Background(), wallet.PageRequest{})
				return err
			})
			if err != nil {
				t.Error(err)
				return
			}
			done()
		}()
		<-started
		return func() { close(v.hold); <-finished }
	}
	// A read of 64 MiB, over the identity's 32, runs alone.
	release := hold(a1, 64*mib)
	_, err := vs.read(a2, 1, func(wallet.View) error { return nil })
	busy(t, err, true)
	if _, err := vs.read(a1, 1, func(wallet.View) error { return nil }); !errors.Is(err, wallet.ErrConcurrentRead) {
		t.Fatalf("a second read on one view: err = %v", err)
	}
	release()
	// Within the budget, two reads of one identity run side by side.
	release = hold(a1, 16*mib)
	done, err := vs.read(a2, 16*mib, func(wallet.View) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	done()
	release()

	// The server's budget: four identities reading 30 MiB each leave no room for a fifth.
	var releases []func()
	for i := range 4 {
		releases = append(releases, hold(mustOpen(t, vs, fmt.Sprint("b", i), time.Minute, &made), 30*mib))
	}
	_, err = vs.read(mustOpen(t, vs, "c", time.Minute, &made), 30*mib, func(wallet.View) error { return nil })
	busy(t, err, false)
	if st := vs.stats(); st.ReservedBytes != 120*mib {
		t.Fatalf("reserved %d bytes, want 120 MiB", st.ReservedBytes)
	}
	for _, r := range releases {
		r()
	}
	vs.closeAll()
	if st := vs.stats(); st != (ViewStats{}) {
		t.Fatalf("after every read and close: %+v", st)
	}
}

// TestViews_ReleasedExactlyOnce: a client's close, the server's shutdown and the expiry
// timer racing for one view close it once.
func TestViews_ReleasedExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vs := newViews(ViewOptions{MaxViewsPerIdentity: 8})
		var made []*fakeView
		var rs []*retained
		for range 8 {
			rs = append(rs, mustOpen(t, vs, "a", time.Second, &made))
		}
		time.Sleep(time.Second - time.Nanosecond)
		for _, r := range rs {
			go vs.release(r)
			go vs.release(r)
			go func() {
				if r, err := vs.get("a", r.handle); err == nil {
					vs.release(r)
				}
			}()
		}
		go vs.closeAll()
		time.Sleep(time.Second) // the timers fire meanwhile
		synctest.Wait()
		for i, v := range made {
			if n := v.closes.Load(); n != 1 {
				t.Errorf("view %d closed %d times", i, n)
			}
		}
		if st := vs.stats(); st != (ViewStats{}) {
			t.Fatalf("after the races: %+v", st)
		}
	})
}

// TestViews_RefusalsBesideReleases: opens refused by an identity's quota say how many views
// it holds while other opens of it release theirs; run under -race, it shows the refusal
// reads the counts under the registry's lock.
func TestViews_RefusalsBesideReleases(t *testing.T) {
	vs := newViews(ViewOptions{MaxViewsPerIdentity: 1})
	open := func(context.Context, time.Duration) (wallet.View, error) { return &fakeView{}, nil }
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				r, err := vs.open(t.Context(), "a", time.Minute, open)
				var b *wallet.BusyError
				switch {
				case err == nil:
					vs.release(r)
				case !errors.As(err, &b):
					t.Errorf("open: %v, want a view or a busy refusal", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := vs.stats(); st != (ViewStats{}) {
		t.Fatalf("after the opens and releases: %+v", st)
	}
}
