package syncer_test

import (
	"context"
	"path/filepath"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/logical"
	"walletsync/wallet"
)

func newStore(tb testing.TB, chain wallet.Chain) *localstore.Store {
	tb.Helper()
	s, err := localstore.Create(context.Background(), filepath.Join(tb.TempDir(), "w.sqlite"), localstore.CreateOptions{Chain: chain}, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func seeded(tb testing.TB, f localstore.Fixture, seed uint64) (*localstore.Store, string) {
	tb.Helper()
	s := newStore(tb, wallet.ChainTest)
	res, err := localstore.Seed(context.Background(), s, f, localstore.SeedOptions{Seed: seed})
	if err != nil {
		tb.Fatal(err)
	}
	return s, res.IdentityKey
}

// syncIgnore lists what differs between two stores by design: the toolbox marks a proof
// request not notified when it maps its notify ids; the user row's activeStorage follows the
// policy; and each store stamps its own user row and "default" basket when it first sees the
// user (findOrInsertUser), so their created_at differ.
var syncIgnore = logical.Options{Ignore: []string{"proven_tx_reqs.notified", "users.activeStorage", "users.updated_at",
	"users.created_at", "output_baskets.created_at"}}

func mustEqual(tb testing.TB, a, b wallet.Source, identity string) {
	tb.Helper()
	wa, err := logical.Read(context.Background(), a, identity, syncIgnore)
	if err != nil {
		tb.Fatal(err)
	}
	wb, err := logical.Read(context.Background(), b, identity, syncIgnore)
	if err != nil {
		tb.Fatal(err)
	}
	if d := logical.Diff(wa, wb); d != "" {
		tb.Fatalf("stores differ:\n%s", d)
	}
}

func push(tb testing.TB, src wallet.Source, dst wallet.Destination, identity string, opts syncer.Options) syncer.Result {
	tb.Helper()
	opts.Active = wallet.KeepSourceActive
	res, err := syncer.Run(context.Background(), src, dst, identity, opts)
	if err != nil {
		tb.Fatalf("sync: %v (result %+v)", err, res)
	}
	return res
}
