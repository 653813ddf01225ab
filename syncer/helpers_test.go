package syncer_test

import (
	"context"
	"path/filepath"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/compare"
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

// seeded opens a copy of the test process's template of fixture f for seed's user
// (testkit.SeededWallet): every test here syncs it into a fresh store, so copies sharing
// one storage identity never meet.
func seeded(tb testing.TB, f localstore.Fixture, seed uint64) (*localstore.Store, string) {
	tb.Helper()
	s, err := localstore.Open(context.Background(), testkit.SeededWallet(tb, f, seed), localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, localstore.FixtureIdentity(seed)
}

// syncIgnore lists what differs between two stores by design after a sync (see
// compare.AfterSync), for the tests that leave out more.
var syncIgnore = compare.AfterSync()

// mustEqual fails tb unless a and b hold the same wallet of identity after a sync.
func mustEqual(tb testing.TB, a, b wallet.Source, identity string) {
	tb.Helper()
	compare.SameWallet(tb, a, b, identity)
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
