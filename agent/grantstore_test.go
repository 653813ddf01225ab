package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// hookedStore is a real wallet file whose calls can be watched: the hooks run inside the
// call, so under the grant grantedChunkStore took for it.
type hookedStore struct {
	*localstore.Store
	mu    sync.Mutex
	reads int
	// onRead runs in the nth GetSyncChunk (from 1); onState in every FindOrInsertSyncState.
	onRead  func(ctx context.Context, n int)
	onState func()
}

func (h *hookedStore) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	h.mu.Lock()
	h.reads++
	n := h.reads
	h.mu.Unlock()
	if h.onRead != nil {
		h.onRead(ctx, n)
	}
	return h.Store.GetSyncChunk(ctx, args)
}

func (h *hookedStore) FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (brc40.SyncState, error) {
	if h.onState != nil {
		h.onState()
	}
	return h.Store.FindOrInsertSyncState(ctx, identityKey, producerSIK, producerName)
}

// grantEnv is a seeded wallet behind a queue in which a writer holds the store alone (so a
// foreground writer excludes the job's reads) and background work is never due early, and
// an empty backup wallet to push it to.
type grantEnv struct {
	wallet   *hookedStore
	backup   *localstore.Store
	identity string
	queue    *scheduler.Queue
}

func newGrantEnv(t *testing.T) grantEnv {
	t.Helper()
	open := func(name string) *localstore.Store {
		s, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), name), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	w := open("wallet.sqlite")
	res, err := localstore.Seed(t.Context(), w, localstore.FixtureSmall, localstore.SeedOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	q, err := scheduler.New(wallet.Capabilities{ConcurrentReads: 4}, scheduler.Options{MaxBackgroundWait: time.Hour, BypassGrants: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return grantEnv{wallet: &hookedStore{Store: w}, backup: open("backup.sqlite"), identity: res.IdentityKey, queue: q}
}

// push runs the storage server job's session: the wallet, behind its grants, to the backup.
func (e grantEnv) push(ctx context.Context) (syncer.Result, error) {
	store := newGrantedChunkStore(ctx, e.wallet, e.queue.NewSession(e.identity, "storage server test"))
	return syncer.RunChunks(ctx, store, e.backup, e.identity, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 5, Settle: -1})
}

// parked waits until n goroutines wait in Session.Acquire (their requests are queued) and
// reports whether they did before ctx ended.
func parked(ctx context.Context, n int) bool {
	buf := make([]byte, 1<<20)
	for ; ctx.Err() == nil; time.Sleep(time.Millisecond) {
		if strings.Count(string(buf[:runtime.Stack(buf, true)]), "scheduler.(*Session).Acquire(") >= n {
			return true
		}
	}
	return false
}

// foreground asks for a foreground write grant in the background; granted receives it.
func foreground(ctx context.Context, q *scheduler.Queue) (s *scheduler.Session, granted <-chan *scheduler.Grant) {
	s = q.NewSession("", "dashboard")
	ch := make(chan *scheduler.Grant, 1)
	go func() {
		g, err := s.Acquire(ctx, scheduler.Foreground, scheduler.Write)
		if err != nil {
			close(ch)
			return
		}
		ch <- g
	}()
	return s, ch
}

// mustBeFree fails unless a foreground writer gets the store: no grant was left held.
func mustBeFree(t *testing.T, q *scheduler.Queue) {
	t.Helper()
	s := q.NewSession("", "check")
	g, err := s.Acquire(waitCtx(t), scheduler.Foreground, scheduler.Write)
	if err != nil {
		t.Fatalf("the store is still held: %v", err)
	}
	s.Release(g)
}

func TestGrantedChunkStore_ForegroundGoesBeforeTheNextChunkRead(t *testing.T) {
	e := newGrantEnv(t)
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	e.wallet.onRead = func(ctx context.Context, n int) {
		note(fmt.Sprintf("read %d", n))
		if n != 1 {
			return
		}
		// The job holds its read grant: a foreground writer asks now and waits.
		s, granted := foreground(ctx, e.queue)
		go func() {
			if g := <-granted; g != nil {
				note("foreground")
				s.Release(g)
			}
		}()
		if !parked(waitCtx(t), 1) {
			t.Fatal("the foreground request never queued")
		}
	}
	res, err := e.push(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages < 3 {
		t.Fatalf("pushed in %d chunks", res.Pages)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 3 || order[0] != "read 1" || order[1] != "foreground" || order[2] != "read 2" {
		t.Fatalf("order %v: the waiting foreground request must go before the next chunk read", order)
	}
	mustBeFree(t, e.queue)
}

func TestGrantedChunkStore_CancelReleasesGrants(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arm sets the hooks that cancel the push: while the job waits for a read grant,
		// while it holds one, and while it waits for the write grant of the merge that a
		// new backup's first push makes into the wallet (sent without cancellation).
		arm func(t *testing.T, e grantEnv, cancel context.CancelFunc)
		// merged says whether the wallet took the backup's rows before the cancel.
		merged bool
	}{
		{"waiting for a chunk read", func(t *testing.T, e grantEnv, cancel context.CancelFunc) {
			e.wallet.onRead = func(ctx context.Context, n int) {
				if n == 1 {
					holdWhileParked(t, e.queue, cancel)
				}
			}
		}, true},
		{"holding a chunk read", func(t *testing.T, e grantEnv, cancel context.CancelFunc) {
			e.wallet.onRead = func(ctx context.Context, n int) {
				if n == 2 {
					cancel()
				}
			}
		}, true},
		{"waiting for the merge's write grant", func(t *testing.T, e grantEnv, cancel context.CancelFunc) {
			e.wallet.onState = func() { holdWhileParked(t, e.queue, cancel) }
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrantEnv(t)
			ctx, cancel := context.WithCancel(waitCtx(t))
			defer cancel()
			tc.arm(t, e, cancel)
			res, err := e.push(ctx)
			if !errors.Is(err, context.Canceled) || res.State != syncer.StateCancelled {
				t.Fatalf("push: %+v, %v", res, err)
			}
			mustBeFree(t, e.queue)
			settings, err := e.backup.Settings(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.wallet.Store.FindOrInsertSyncState(t.Context(), e.identity, settings.StorageIdentityKey, settings.StorageName)
			if err != nil {
				t.Fatal(err)
			}
			if merged := st.UpdatedAt.After(st.CreatedAt); merged != tc.merged {
				t.Fatalf("the wallet merged the backup's rows: %v, want %v", merged, tc.merged)
			}
		})
	}
}

// holdWhileParked runs inside a call that holds the job's grant: it has a foreground writer
// take the store as soon as that grant is released and keep it until the job's next request
// waits behind it, then cancels the job, and releases the store once the job gave up.
func holdWhileParked(t *testing.T, q *scheduler.Queue, cancel context.CancelFunc) {
	s, granted := foreground(waitCtx(t), q)
	if !parked(waitCtx(t), 1) {
		t.Fatal("the foreground request never queued")
	}
	go func() {
		g := <-granted
		if g == nil {
			t.Error("the foreground request was refused")
			return
		}
		defer s.Release(g)
		if !parked(waitCtx(t), 1) { // the job's next request, queued behind the foreground writer
			t.Error("the job never asked again")
		}
		cancel()
		for ctx := waitCtx(t); ctx.Err() == nil && q.Metrics().Background.Cancelled == 0; time.Sleep(time.Millisecond) {
		}
	}()
}
