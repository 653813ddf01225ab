package serve

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// pagedProvider is key's walletsync client of the server at url, probed, that never waits
// out a busy answer (BusyWait 0): a refusal reaches the test as it is.
func pagedProvider(t *testing.T, url string, key *secp256k1.PrivateKey) *wire.Provider {
	t.Helper()
	client, err := auth.NewClient(url, auth.NewProtoWallet(key), auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := wire.Probe(t.Context(), url, client)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	p, err := wire.NewProvider(client, wire.ProviderOptions{Capabilities: &caps})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pushPaged pushes src through the paged wire as its own identity.
func pushPaged(t *testing.T, url string, src fixtureWallet, seed uint64) {
	t.Helper()
	from, err := localstore.Open(t.Context(), src.Path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	p := pagedProvider(t, url, secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed)))
	if res, err := syncer.Run(t.Context(), from, p, src.Identity, syncer.Options{Active: wallet.KeepSourceActive}); err != nil || res.Rows == 0 {
		t.Fatalf("push through the paged wire: %+v, %v", res, err)
	}
}

// TestServe_HostileViewDoesNotBlockPulls: a fresh identity that opens a view for an hour
// (the longest lifetime) and a second one beside it is refused its second (429, its own
// quota of 1), and holds the first; meanwhile another identity's paged-wire pull opens its
// own view at once (its client waits out no busy answer) and restores its wallet exactly.
// On every backend: on SQLite each view is a read transaction on a connection of its own,
// as on PostgreSQL.
func TestServe_HostileViewDoesNotBlockPulls(t *testing.T) {
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			opts := be.options(t)
			opts.Mounts = []Mount{WireMount(wire.ViewOptions{}, nil)}
			srv := startServer(t, opts)
			const seed = 21
			src := seedWallet(t, localstore.FixtureSmall, seed)
			pushPaged(t, srv.URL, src, seed)

			hostile := pagedProvider(t, srv.URL, randomKey(t))
			held, err := hostile.OpenView(t.Context(), wallet.MaxViewLifetime)
			if err != nil {
				t.Fatalf("the hostile identity's first view: %v", err)
			}
			defer held.Close()
			var busy *wallet.BusyError
			if _, err := hostile.OpenView(t.Context(), wallet.MaxViewLifetime); !errors.As(err, &busy) {
				t.Fatalf("the hostile identity's second view: %v, want a *wallet.BusyError (its quota)", err)
			}

			back, err := localstore.Create(t.Context(), t.TempDir()+"/pulled.sqlite", localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			honest := pagedProvider(t, srv.URL, secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed)))
			if _, err := syncer.Run(t.Context(), honest, back, src.Identity, syncer.Options{Active: wallet.KeepDestinationActive}); err != nil {
				t.Fatalf("a pull beside the hostile view: %v", err)
			}
			from, err := localstore.Open(t.Context(), src.Path, localstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer from.Close()
			compare.SameWallet(t, from, back, src.Identity)
			// The hostile view is still open: it was never what the pull waited on.
			if _, metrics := get(t, srv.MetricsURL+"/metrics"); !strings.Contains(metrics, "\nwalletsync_serve_views_open 1\n") {
				t.Fatalf("after the pull, the hostile view is not the one open:\n%s", metrics)
			}
		})
	}
}

// TestServe_IdleViewReleased: a view opened for an hour that no request uses is released at
// the server's idle timeout (here 50 ms; its timing is TestViews_IdleReleased's, under
// synctest): /metrics counts the release and no view open, the view's next read is
// wallet.ErrSnapshotClosed, and the identity's quota is free for a new view. On every
// backend (on PostgreSQL the idle timeout is the view's row's, and the owner's reaper
// releases it at its next poll).
func TestServe_IdleViewReleased(t *testing.T) {
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			opts := be.options(t)
			opts.Mounts = []Mount{WireMount(wire.ViewOptions{IdleTimeout: 50 * time.Millisecond}, nil)}
			srv := startServer(t, opts)
			const seed = 22
			src := seedWallet(t, localstore.FixtureSmall, seed)
			pushPaged(t, srv.URL, src, seed)
			key := secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))
			p := pagedProvider(t, srv.URL, key)
			held, err := p.OpenView(t.Context(), wallet.MaxViewLifetime)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			waitFor(t, "the idle view's release", func() bool {
				_, metrics := get(t, srv.MetricsURL+"/metrics")
				return strings.Contains(metrics, "\nwalletsync_serve_views_idle_released_total 1\n") && strings.Contains(metrics, "\nwalletsync_serve_views_open 0\n")
			})
			if _, err := held.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: src.Identity, Limits: wallet.Limits{Rows: 1}}); !errors.Is(err, wallet.ErrSnapshotClosed) {
				t.Fatalf("a read of the released view: %v, want wallet.ErrSnapshotClosed", err)
			}
			again, err := p.OpenView(t.Context(), wallet.MaxViewLifetime)
			if err != nil {
				t.Fatalf("a new view after the release (the quota of 1 must be free): %v", err)
			}
			again.Close()
		})
	}
}

// TestServe_EmptyIdentityViewShortLived: a fresh identity, which the store holds no user
// for, asks for a view of an hour and gets one that ends at the empty-identity lifetime
// (here 50 ms, the idle timeout an hour): /metrics shows it gone and its next read fails as
// an ended view. On every backend (on PostgreSQL the view is opened again for the shorter
// lifetime).
func TestServe_EmptyIdentityViewShortLived(t *testing.T) {
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			opts := be.options(t)
			opts.MetricsListen = "127.0.0.1:0"
			opts.Mounts = []Mount{WireMount(wire.ViewOptions{IdleTimeout: time.Hour, EmptyLifetime: 50 * time.Millisecond}, nil)}
			srv := startServer(t, opts)
			key := randomKey(t)
			held, err := pagedProvider(t, srv.URL, key).OpenView(t.Context(), wallet.MaxViewLifetime)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			waitFor(t, "the empty identity's view to end", func() bool {
				_, metrics := get(t, srv.MetricsURL+"/metrics")
				return strings.Contains(metrics, "\nwalletsync_serve_views_open 0\n")
			})
			_, err = held.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: pubHex(key), Limits: wallet.Limits{Rows: 1}})
			if !errors.Is(err, wallet.ErrSnapshotClosed) && !errors.Is(err, wallet.ErrSnapshotExpired) {
				t.Fatalf("a read of the ended view: %v, want an ended view", err)
			}
		})
	}
}

// TestServe_ViewJournalIsTheCallersOwn: the journal position view/open answers is that of
// the caller's own rows: another identity's pushes leave it where it was (and the caller's
// unchanged pull after them reads no page), while the caller's own push moves it and its
// next pull brings the change. On every backend.
func TestServe_ViewJournalIsTheCallersOwn(t *testing.T) {
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			opts := be.options(t)
			opts.Mounts = []Mount{WireMount(wire.ViewOptions{}, nil)}
			srv := startServer(t, opts)
			const mine, other = 23, 24
			me := seedWallet(t, localstore.FixtureSmall, mine)
			pushPaged(t, srv.URL, me, mine)
			p := pagedProvider(t, srv.URL, secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(mine)))
			position := func() int64 {
				t.Helper()
				v, err := p.OpenView(t.Context(), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				defer v.Close()
				hw, _ := v.Journal(0)
				return hw
			}
			back, err := localstore.Create(t.Context(), t.TempDir()+"/pulled.sqlite", localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			pull := func() syncer.Result {
				t.Helper()
				res, err := syncer.Run(t.Context(), p, back, me.Identity, syncer.Options{Active: wallet.KeepDestinationActive})
				if err != nil {
					t.Fatalf("pull: %v", err)
				}
				return res
			}
			pull()
			before := position()
			if before == 0 {
				t.Fatal("the caller's rows have no journal position")
			}

			pushPaged(t, srv.URL, seedWallet(t, localstore.FixtureSmall, other), other)
			if after := position(); after != before {
				t.Fatalf("another identity's push moved the caller's journal position from %d to %d", before, after)
			}
			if res := pull(); res.Pages != 0 || res.Rows != 0 {
				t.Fatalf("an unchanged pull after another identity's push read %d pages, %d rows", res.Pages, res.Rows)
			}

			src, err := localstore.Open(t.Context(), me.Path, localstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.RecordTransaction(t.Context(), me.Identity, wallet.NewTransaction{Satoshis: 5, Labels: []string{"mine"}}); err != nil {
				t.Fatal(err)
			}
			src.Close()
			pushPaged(t, srv.URL, me, mine)
			if after := position(); after <= before {
				t.Fatalf("the caller's own push left its journal position at %d (was %d)", after, before)
			}
			if res := pull(); res.Rows == 0 {
				t.Fatalf("the pull after the caller's own push brought nothing: %+v", res)
			}
			from, err := localstore.Open(t.Context(), me.Path, localstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer from.Close()
			compare.SameWallet(t, from, back, me.Identity)
		})
	}
}
