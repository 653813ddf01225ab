package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/httpproxy"
	"walletsync/wallet"
)

// sharedRegistry stands for a store that several server processes share (pgstore's
// walletsync_views): the views of every process, counted together.
type sharedRegistry struct {
	mu    sync.Mutex
	views map[string]*sharedEntry
}

type sharedEntry struct {
	identity string
	view     wallet.View
	owner    *sharedBackend
}

// sharedBackend is one process's backend over the shared registry and one localstore file.
type sharedBackend struct {
	StoreBackend
	reg *sharedRegistry
}

var _ SharedViews = (*sharedBackend)(nil)

func (b *sharedBackend) OpenSharedView(ctx context.Context, identity string, lifetime, _ time.Duration, admit func(int, int) error) (string, wallet.View, error) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	mine := 0
	for _, e := range b.reg.views {
		if e.identity == identity {
			mine++
		}
	}
	if err := admit(mine, len(b.reg.views)); err != nil {
		return "", nil, err
	}
	src, _ := b.Source(ctx, identity)
	v, err := src.OpenView(context.WithoutCancel(ctx), lifetime) // the view outlives the request
	if err != nil {
		return "", nil, err
	}
	h := newHandle()
	b.reg.views[h] = &sharedEntry{identity: identity, view: v, owner: b}
	return h, v, nil
}

func (b *sharedBackend) SharedView(_ context.Context, identity, handle string) (wallet.View, error) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	e := b.reg.views[handle]
	if e == nil || e.identity != identity {
		return nil, fmt.Errorf("view %.16s: %w", handle, wallet.ErrSnapshotClosed)
	}
	return e.view, nil
}

func (b *sharedBackend) CloseSharedView(_ context.Context, identity, handle string) error {
	b.reg.mu.Lock()
	e := b.reg.views[handle]
	if e == nil || e.identity != identity {
		b.reg.mu.Unlock()
		return nil
	}
	delete(b.reg.views, handle)
	b.reg.mu.Unlock()
	return e.view.Close()
}

// IdleReleasedViews is 0: this backend keeps a view until its lifetime ends or it is
// closed; the idle release is pgstore's (TestServe_IdleViewReleased).
func (b *sharedBackend) IdleReleasedViews() int64 { return 0 }

func (b *sharedBackend) HeldViews() int {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	n := 0
	for _, e := range b.reg.views {
		if e.owner == b {
			n++
		}
	}
	return n
}

// twoProcesses serves store through two Handlers whose views are shared (two server
// processes over one database), behind a proxy that moves the client to the other after
// every request.
func twoProcesses(t *testing.T, store *localstore.Store, opts HandlerOptions) (*httpproxy.Switcher, [2]*server) {
	t.Helper()
	reg := &sharedRegistry{views: map[string]*sharedEntry{}}
	var servers [2]*server
	for i := range servers {
		servers[i] = startBackend(t, &sharedBackend{StoreBackend{store}, reg}, store, opts)
	}
	proxy, err := httpproxy.StartSwitcher(servers[0].URL, servers[1].URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	return proxy, servers
}

// TestHandler_SharedViewsAcrossProcesses: a pull whose view is opened through one Handler
// and whose pages are read through both, each request on the other one than the request
// before, restores the wallet exactly; each process counts in its gauge the views it holds.
func TestHandler_SharedViewsAcrossProcesses(t *testing.T) {
	owner := fixtureUser(41)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, owner, 41)
	proxy, servers := twoProcesses(t, store, HandlerOptions{})
	c, err := auth.NewClient(proxy.URL, auth.NewProtoWallet(owner.key), auth.ClientOptions{MaxResponseBytes: MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProvider(c, ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored := newStore(t, wallet.ChainTest)
	res, err := syncer.Run(t.Context(), p, restored, owner.id, syncer.Options{MaxRows: 5, Active: wallet.KeepDestinationActive})
	if err != nil || res.State != syncer.StateCompleted {
		t.Fatalf("pull: %+v, %v", res, err)
	}
	compare.SameWallet(t, store, restored, owner.id)
	read := Prefix + pathReadPage
	if proxy.Served(0, read) == 0 || proxy.Served(1, read) == 0 {
		t.Fatalf("pages read through %d and %d: the pull did not move between the processes", proxy.Served(0, read), proxy.Served(1, read))
	}
	for i, s := range servers {
		if n := s.handler.Stats().Open; n != 0 {
			t.Fatalf("process %d holds %d views after the pull closed its own", i, n)
		}
	}
}

// TestHandler_SharedViewQuotas: the view quotas are counted by the shared store over the
// processes (the Handler's admit): an identity's second view is refused by the other
// process with a busy refusal, and admitted once the first is closed.
func TestHandler_SharedViewQuotas(t *testing.T) {
	owner := fixtureUser(42)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, owner, 42)
	_, servers := twoProcesses(t, store, HandlerOptions{})
	first, err := provider(t, servers[0], owner, ProviderOptions{}).OpenView(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	second := provider(t, servers[1], owner, ProviderOptions{})
	_, err = second.OpenView(t.Context(), time.Minute)
	var busy *wallet.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("a second view through the other process: %v, want the identity's quota", err)
	}
	if servers[0].handler.Stats().Open != 1 || servers[1].handler.Stats().Open != 0 {
		t.Fatalf("held: %d and %d", servers[0].handler.Stats().Open, servers[1].handler.Stats().Open)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := second.OpenView(t.Context(), time.Minute)
	if err != nil {
		t.Fatalf("after the close: %v", err)
	}
	v.Close()
}
