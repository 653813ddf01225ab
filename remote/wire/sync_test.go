package wire

import (
	"fmt"
	"testing"
	"time"

	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// TestSync_PushPullThroughTheWire: a backup pushed to a walletsync server and restored
// from it into an empty wallet holds the source's wallet, in both encodings; an unchanged
// re-sync is one HTTP request.
func TestSync_PushPullThroughTheWire(t *testing.T) {
	owner := fixtureUser(31)
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		t.Run(string(enc), func(t *testing.T) {
			ctx := t.Context()
			local := newStore(t, wallet.ChainTest)
			seed(t, local, owner, 31)
			srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{})
			p := provider(t, srv, owner, ProviderOptions{Encoding: enc})

			res, err := syncer.Run(ctx, local, p, owner.id, syncer.Options{MaxRows: 7, Active: wallet.KeepSourceActive})
			if err != nil || res.State != syncer.StateCompleted || res.Kind != syncer.KindFull {
				t.Fatalf("push: %+v, %v", res, err)
			}
			// handshake, capabilities, begin, then one commit per page
			if n := srv.requests.Load(); n != 3+res.Pages {
				t.Errorf("push of %d pages took %d HTTP requests, want %d", res.Pages, n, 3+res.Pages)
			}
			compare.SameWallet(t, local, srv.store, owner.id)

			srv.requests.Store(0)
			again, err := syncer.Run(ctx, local, p, owner.id, syncer.Options{Active: wallet.KeepSourceActive})
			if err != nil || again.Kind != syncer.KindUnchanged {
				t.Fatalf("unchanged push: %+v, %v", again, err)
			}
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("unchanged push took %d HTTP requests, want 1", n)
			}

			restored := newStore(t, wallet.ChainTest)
			res, err = syncer.Run(ctx, p, restored, owner.id, syncer.Options{MaxRows: 5, Active: wallet.KeepDestinationActive})
			if err != nil || res.State != syncer.StateCompleted {
				t.Fatalf("pull: %+v, %v", res, err)
			}
			compare.SameWallet(t, local, restored, owner.id)

			// An unchanged pull: describe, open the view, close it.
			srv.requests.Store(0)
			again, err = syncer.Run(ctx, p, restored, owner.id, syncer.Options{Active: wallet.KeepDestinationActive})
			if err != nil || again.Kind != syncer.KindUnchanged {
				t.Fatalf("unchanged pull: %+v, %v", again, err)
			}
			if n := srv.requests.Load(); n != 3 {
				t.Errorf("unchanged pull took %d HTTP requests, want 3", n)
			}
			if st := srv.handler.Stats(); st.Open != 0 || st.ReservedBytes != 0 {
				t.Errorf("after the syncs the server retains %+v, want nothing", st)
			}
		})
	}
}

// TestSync_ConcurrentIdentities: identities pushing and pulling at once through one server
// file each end with their own wallet, whole; pulls that find the file's one snapshot view
// taken wait for it (ProviderOptions.BusyWait) instead of failing.
func TestSync_ConcurrentIdentities(t *testing.T) {
	ctx := t.Context()
	srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{})
	const n = 4
	errs := make(chan error, n)
	var checks []func()
	for i := range n {
		u := fixtureUser(uint64(200 + i))
		local, restored := newStore(t, wallet.ChainTest), newStore(t, wallet.ChainTest)
		seed(t, local, u, uint64(200+i))
		p := provider(t, srv, u, ProviderOptions{BusyWait: time.Minute})
		go func() {
			if _, err := syncer.Run(ctx, local, p, u.id, syncer.Options{MaxRows: 4, Active: wallet.KeepSourceActive}); err != nil {
				errs <- fmt.Errorf("push %d: %w", i, err)
				return
			}
			if _, err := syncer.Run(ctx, p, restored, u.id, syncer.Options{MaxRows: 4, Active: wallet.KeepDestinationActive}); err != nil {
				errs <- fmt.Errorf("pull %d: %w", i, err)
				return
			}
			errs <- nil
		}()
		checks = append(checks, func() { compare.SameWallet(t, local, restored, u.id) })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, check := range checks {
		check()
	}
}
