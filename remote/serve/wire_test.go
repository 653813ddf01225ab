package serve

import (
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// TestServe_PagedWireBesideToolboxWire mounts walletsync's paged wire as `walletsync serve`
// does: a walletsync client finds it (Probe), pushes a wallet through it into the server's
// store, finds an unchanged wallet unchanged, pulls it back into a new wallet equal to the
// source, and /metrics shows the wire's views, released after the pull.
func TestServe_PagedWireBesideToolboxWire(t *testing.T) {
	const seed = 11
	src := seedWallet(t, localstore.FixtureSmall, seed)
	r := startServer(t, Options{Mounts: []Mount{WireMount(wire.ViewOptions{}, nil)}})
	client, err := auth.NewClient(r.URL, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))),
		auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.Probe(t.Context(), r.URL, client); err != nil {
		t.Fatalf("probe of walletsync serve: %v", err)
	}
	p, err := wire.NewProvider(client, wire.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, err := localstore.Open(t.Context(), src.Path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()

	push := func() syncer.Result {
		t.Helper()
		res, err := syncer.Run(t.Context(), from, p, src.Identity, syncer.Options{Active: wallet.KeepSourceActive})
		if err != nil {
			t.Fatalf("push through the paged wire: %v", err)
		}
		return res
	}
	if first := push(); first.Rows == 0 {
		t.Fatalf("the first push moved nothing: %+v", first)
	}
	compare.SameWallet(t, from, r.Store(), src.Identity)
	if again := push(); again.Pages != 0 {
		t.Fatalf("an unchanged push moved %d pages", again.Pages)
	}

	back, err := localstore.Create(t.Context(), t.TempDir()+"/pulled.sqlite", localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := syncer.Run(t.Context(), p, back, src.Identity, syncer.Options{Active: wallet.KeepDestinationActive}); err != nil {
		t.Fatalf("pull through the paged wire: %v", err)
	}
	compare.SameWallet(t, from, back, src.Identity)

	status, metrics := get(t, r.MetricsURL+"/metrics")
	if status != 200 || !strings.Contains(metrics, "\nwalletsync_serve_views_open 0\n") || !strings.Contains(metrics, "walletsync_serve_views_reserved_bytes 0") {
		t.Fatalf("metrics (%d) without the wire's released views:\n%s", status, metrics)
	}
}
