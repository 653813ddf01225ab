package localstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"walletsync/wallet"
)

// fakeClock moves only when the test says so; its wall clock can jump on its own.
type fakeClock struct {
	mu   sync.Mutex
	mono time.Duration
	wall time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{wall: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) clock() Clock {
	return Clock{
		Mono: func() time.Duration { c.mu.Lock(); defer c.mu.Unlock(); return c.mono },
		Wall: func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.wall },
	}
}

// readOnce returns c's Clock and a channel closed once both of its clocks have been read:
// the sync point after which an OpenSnapshot has taken its request time.
func (c *fakeClock) readOnce() (Clock, <-chan struct{}) {
	read := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	var mono, wall sync.Once
	go func() { wg.Wait(); close(read) }()
	clock := c.clock()
	m, w := clock.Mono, clock.Wall
	clock.Mono = func() time.Duration { defer mono.Do(wg.Done); return m() }
	clock.Wall = func() time.Time { defer wall.Do(wg.Done); return w() }
	return clock, read
}

func (c *fakeClock) advance(mono, wall time.Duration) {
	c.mu.Lock()
	c.mono += mono
	c.wall = c.wall.Add(wall)
	c.mu.Unlock()
}

func openView(tb testing.TB, s *Store, opts SnapshotOptions) *Snapshot {
	tb.Helper()
	v, err := s.OpenSnapshot(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}

func readPage(v *Snapshot, table wallet.TableName, identity string, after wallet.Cursor, limits wallet.Limits) (wallet.Page, error) {
	return v.ReadPage(context.Background(), wallet.PageRequest{Table: table, IdentityKey: identity, After: after, Limits: limits})
}

func TestSnapshot_Expiry(t *testing.T) {
	const lifetime = time.Minute
	tests := []struct {
		name       string
		mono, wall time.Duration
		expired    bool
	}{
		{"both clocks within the lifetime", 59 * time.Second, 59 * time.Second, false},
		{"monotonic clock past the lifetime", lifetime, 0, true},
		{"wall clock jumps forward past the lifetime", 0, 2 * lifetime, true},
		{"wall clock jumps back: monotonic still ends the view", lifetime + time.Second, -time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCreate(t, Options{})
			id := mustSeed(t, s, FixtureSmall, 1)
			fc := newFakeClock()
			v := openView(t, s, SnapshotOptions{Lifetime: lifetime, Clock: fc.clock()})
			fc.advance(tt.mono, tt.wall)
			_, err := readPage(v, wallet.TableTransactions, id, "", wallet.Limits{})
			if tt.expired != errors.Is(err, wallet.ErrSnapshotExpired) {
				t.Fatalf("read after mono %v, wall %v: err = %v, want expired = %v", tt.mono, tt.wall, err, tt.expired)
			}
			if tt.expired {
				// The expired view gave its slot back: a new view opens at once.
				w, err := s.OpenSnapshot(context.Background(), SnapshotOptions{})
				if err != nil {
					t.Fatalf("open after expiry: %v", err)
				}
				w.Close()
			}
		})
	}
}

func TestSnapshot_LifetimeCountsFromOpenRequest(t *testing.T) {
	s := mustCreate(t, Options{})
	fc := newFakeClock()
	clock, requested := fc.readOnce()
	first := openView(t, s, SnapshotOptions{})
	done := make(chan error, 1)
	go func() {
		v, err := s.OpenSnapshot(context.Background(), SnapshotOptions{Lifetime: time.Second, Wait: true, Clock: clock})
		if err == nil {
			v.Close()
		}
		done <- err
	}()
	// Once the open has read both clocks its lifetime runs; the slot is still taken, so it
	// waits. Its clock then passes the whole lifetime before the slot frees up.
	<-requested
	fc.advance(2*time.Second, 2*time.Second)
	first.Close()
	if err := <-done; !errors.Is(err, wallet.ErrSnapshotExpired) {
		t.Fatalf("open that waited past its lifetime: err = %v, want ErrSnapshotExpired", err)
	}
}

func TestSnapshot_OneViewPerStore(t *testing.T) {
	s := mustCreate(t, Options{})
	v := openView(t, s, SnapshotOptions{})
	if _, err := s.OpenSnapshot(context.Background(), SnapshotOptions{}); !errors.Is(err, wallet.ErrSnapshotBusy) {
		t.Fatalf("second view: err = %v, want ErrSnapshotBusy", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.OpenSnapshot(ctx, SnapshotOptions{Wait: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting second view: err = %v, want its context's error", err)
	}
	v.Close()
	w := openView(t, s, SnapshotOptions{Wait: true})
	w.Close()
}

func TestSnapshot_LifetimeBounds(t *testing.T) {
	s := mustCreate(t, Options{})
	for _, l := range []time.Duration{time.Microsecond, time.Hour + time.Nanosecond, -time.Second} {
		if _, err := s.OpenSnapshot(context.Background(), SnapshotOptions{Lifetime: l}); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("lifetime %v: err = %v, want ErrInvalidArgument", l, err)
		}
	}
	for _, l := range []time.Duration{MinSnapshotLifetime, MaxSnapshotLifetime} {
		v, err := s.OpenSnapshot(context.Background(), SnapshotOptions{Lifetime: l})
		if err != nil {
			t.Errorf("lifetime %v: %v", l, err)
			continue
		}
		v.Close()
	}
}

func TestSnapshot_ConcurrentReadRefused(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	v := openView(t, s, SnapshotOptions{})
	inRead := make(chan struct{})
	release := make(chan struct{})
	v.guard.AfterRead = func() { close(inRead); <-release }
	first := make(chan error, 1)
	go func() {
		_, err := readPage(v, wallet.TableTransactions, id, "", wallet.Limits{})
		first <- err
	}()
	<-inRead
	v.guard.AfterRead = nil
	if _, err := readPage(v, wallet.TableOutputs, id, "", wallet.Limits{}); !errors.Is(err, wallet.ErrConcurrentRead) {
		t.Fatalf("second read during the first: err = %v, want ErrConcurrentRead", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first read: %v", err)
	}
	if _, err := readPage(v, wallet.TableOutputs, id, "", wallet.Limits{}); err != nil {
		t.Fatalf("read after the first finished: %v", err)
	}
}

func TestSnapshot_LateResultDiscarded(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	fc := newFakeClock()
	v := openView(t, s, SnapshotOptions{Lifetime: time.Minute, Clock: fc.clock()})
	// The view expires while its read is in flight: the rows it read must not come back.
	v.guard.AfterRead = func() { fc.advance(time.Hour, time.Hour) }
	p, err := readPage(v, wallet.TableTransactions, id, "", wallet.Limits{})
	if !errors.Is(err, wallet.ErrSnapshotExpired) || len(p.Rows) != 0 {
		t.Fatalf("read that outlived the view: %d rows, err = %v; want no rows and ErrSnapshotExpired", len(p.Rows), err)
	}
}

func TestSnapshot_CloseAndCancelStopReads(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)

	v := openView(t, s, SnapshotOptions{})
	v.Close()
	if _, err := readPage(v, wallet.TableTransactions, id, "", wallet.Limits{}); !errors.Is(err, wallet.ErrSnapshotClosed) {
		t.Fatalf("read after close: err = %v, want ErrSnapshotClosed", err)
	}
	v.Close() // twice is harmless

	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.OpenSnapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The cancellation ends the view asynchronously; the slot comes back once it has.
	x, err := s.OpenSnapshot(context.Background(), SnapshotOptions{Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if _, err := readPage(w, wallet.TableTransactions, id, "", wallet.Limits{}); !errors.Is(err, wallet.ErrSnapshotClosed) {
		t.Fatalf("read after the open context was cancelled: err = %v, want ErrSnapshotClosed", err)
	}
}

// TestSnapshot_MaxViews: a store opened with Options.MaxViews holds that many views at
// once (one when unset), each its own read transaction that sees the store as of its own
// opening, and refuses one more with wallet.ErrSnapshotBusy until one of them closes.
func TestSnapshot_MaxViews(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxViews int
		want     int
	}{{"default", 0, 1}, {"three", 3, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreate(t, Options{MaxViews: tc.maxViews})
			id := mustSeed(t, s, FixtureSmall, 1)
			var views []*Snapshot
			var seen []int
			for i := range tc.want {
				if i > 0 {
					if _, err := s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 5}); err != nil {
						t.Fatal(err)
					}
				}
				v := openView(t, s, SnapshotOptions{})
				views = append(views, v)
				seen = append(seen, len(readAll(t, v, wallet.TableTransactions, id, wallet.Limits{})))
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] != seen[0]+i {
					t.Fatalf("view %d sees %d transactions, want %d (its own snapshot): %v", i, seen[i], seen[0]+i, seen)
				}
			}
			// The views stay their own: the first still reads its opening.
			if n := len(readAll(t, views[0], wallet.TableTransactions, id, wallet.Limits{})); n != seen[0] {
				t.Fatalf("the first view now sees %d transactions, want %d", n, seen[0])
			}
			if _, err := s.OpenSnapshot(context.Background(), SnapshotOptions{}); !errors.Is(err, wallet.ErrSnapshotBusy) {
				t.Fatalf("view %d of %d: err = %v, want ErrSnapshotBusy", tc.want+1, tc.want, err)
			}
			views[0].Close()
			openView(t, s, SnapshotOptions{}).Close()
		})
	}
}

func TestSnapshot_WritesInvisible(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	v := openView(t, s, SnapshotOptions{})
	before := readAll(t, v, wallet.TableTransactions, id, wallet.Limits{Rows: 2})

	// The writer commits while the view is open; it is not blocked, and the view never sees it.
	if _, err := s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 5, Labels: []string{"late"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SoftDelete(context.Background(), id, wallet.SoftDeleteBasket, "savings"); err != nil {
		t.Fatal(err)
	}
	after := readAll(t, v, wallet.TableTransactions, id, wallet.Limits{Rows: 2})
	if len(after) != len(before) {
		t.Fatalf("view saw the writer: %d transactions before, %d after", len(before), len(after))
	}
	baskets := readAll(t, v, wallet.TableOutputBaskets, id, wallet.Limits{})
	for _, r := range baskets {
		if r[wallet.OutputBaskets.Col("name")] == "savings" && r[wallet.OutputBaskets.Col("isDeleted")] == true {
			t.Fatal("view saw a soft delete committed after it opened")
		}
	}
	w, err := s.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if w.Counts[wallet.TableTransactions] != int64(len(before))+1 {
		t.Fatalf("a fresh read sees %d transactions, want %d", w.Counts[wallet.TableTransactions], len(before)+1)
	}
}

func TestSnapshot_CursorBinding(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	v := openView(t, s, SnapshotOptions{})
	p, err := readPage(v, wallet.TableOutputs, id, "", wallet.Limits{Rows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readPage(v, wallet.TableTransactions, id, p.Next, wallet.Limits{}); !errors.Is(err, wallet.ErrCursorMismatch) {
		t.Fatalf("cursor on another table: err = %v, want ErrCursorMismatch", err)
	}
	if _, err := readPage(v, wallet.TableOutputs, id, "not a cursor", wallet.Limits{}); !errors.Is(err, wallet.ErrCursorMismatch) {
		t.Fatalf("garbage cursor: err = %v, want ErrCursorMismatch", err)
	}
	v.Close()
	w := openView(t, s, SnapshotOptions{})
	if _, err := readPage(w, wallet.TableOutputs, id, p.Next, wallet.Limits{}); !errors.Is(err, wallet.ErrCursorMismatch) {
		t.Fatalf("old view's cursor on a new view: err = %v, want ErrCursorMismatch", err)
	}
}

func TestSnapshot_LimitsValidated(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	v := openView(t, s, SnapshotOptions{})
	for _, l := range []wallet.Limits{{Rows: -1}, {Rows: 1001}, {Bytes: -5}, {Rows: 2, Bytes: wallet.MaxPageBytes + 1}, {Rows: 1, Bytes: wallet.MaxFrameBytes + 1}} {
		if _, err := readPage(v, wallet.TableOutputs, id, "", l); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("limits %+v: err = %v, want ErrInvalidArgument", l, err)
		}
	}
	if _, err := readPage(v, wallet.TableOutputs, id, "", wallet.Limits{Rows: 1, Bytes: wallet.MaxFrameBytes}); err != nil {
		t.Errorf("one-row page up to the frame ceiling: %v", err)
	}
	if _, err := readPage(v, wallet.TableOutputs, "02nobody", "", wallet.Limits{}); !errors.Is(err, wallet.ErrNotFound) {
		t.Errorf("unknown identity: err = %v, want ErrNotFound", err)
	}
}
