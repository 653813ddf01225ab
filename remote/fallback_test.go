package remote_test

import (
	"errors"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/testkit/servetest"
	"walletsync/wallet"
)

// TestDial_AutoFallsBackWhenViewsBusy: on a server whose one view (--max-views 1) another
// identity holds (asked for an hour; a fresh identity's lives 10 s, far beyond the pull's
// patience of 200 ms), a pull over walletsync's wire chosen by Auto is refused busy
// beyond its patience (a *wallet.BusyError); FallBack then gives the same server on the
// toolbox's wire, saying why (Fallback is the busy refusal), and the pull over it restores
// the wallet exactly. A Provider that Walletsync chose never falls back, and neither does
// Auto's for an error that is not busy.
func TestDial_AutoFallsBackWhenViewsBusy(t *testing.T) {
	t.Parallel()
	srv := servetest.Start(t, serve.WireMount(wire.ViewOptions{MaxViews: 1}, nil))
	const seed = 63
	src, err := localstore.Open(t.Context(), testkit.SeededWallet(t, localstore.FixtureSmall, seed), localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	identity := localstore.FixtureIdentity(seed)
	signer := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed)))
	opts := remote.Options{BusyWait: 200 * time.Millisecond}
	p, err := remote.Dial(t.Context(), srv.URL, signer, remote.Auto, opts)
	if err != nil || p.Wire != remote.Walletsync {
		t.Fatalf("dial: %+v, %v", p, err)
	}
	if _, err := syncer.Run(t.Context(), src, p.Paged, identity, syncer.Options{Active: wallet.KeepSourceActive}); err != nil {
		t.Fatalf("push: %v", err)
	}

	hostileKey, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := remote.Dial(t.Context(), srv.URL, auth.NewProtoWallet(hostileKey), remote.Walletsync, opts)
	if err != nil {
		t.Fatal(err)
	}
	held, err := hostile.Paged.OpenView(t.Context(), wallet.MaxViewLifetime)
	if err != nil {
		t.Fatalf("the hostile view: %v", err)
	}
	defer held.Close()

	dst, err := localstore.Create(t.Context(), t.TempDir()+"/pulled.sqlite", localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	_, err = syncer.Run(t.Context(), p.Paged, dst, identity, syncer.Options{Active: wallet.KeepDestinationActive})
	var busy *wallet.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("the paged pull beside the hostile view: %v, want a *wallet.BusyError", err)
	}
	if _, ok := hostile.FallBack(err); ok {
		t.Fatal("a Provider that Walletsync chose fell back")
	}
	if _, ok := p.FallBack(errors.New("not busy")); ok {
		t.Fatal("Auto fell back on an error that is not busy")
	}
	fb, ok := p.FallBack(err)
	if !ok || fb.Wire != remote.Toolbox || fb.Chunks == nil || fb.Paged != nil || !errors.As(fb.Fallback, &busy) {
		t.Fatalf("fallback: %+v, %v; want the toolbox wire, saying it was busy", fb, ok)
	}
	if _, err := syncer.RunChunks(t.Context(), fb.Chunks, dst, identity, syncer.ChunkOptions{Active: wallet.KeepDestinationActive, Settle: -1}); err != nil {
		t.Fatalf("the pull over the toolbox wire: %v", err)
	}
	compare.SameWallet(t, src, dst, identity)
}
