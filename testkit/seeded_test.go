package testkit

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// Copies of one template are independent files that hold what seeding in the test would
// have written, and share the template's storage identity; a write to one copy is in
// neither another copy nor a later one.
func TestSeededWallet_CopiesAreIndependentSeededWallets(t *testing.T) {
	for _, tc := range []struct {
		fixture localstore.Fixture
		seed    uint64
	}{
		{localstore.FixtureSmall, 1},
		{localstore.FixtureSmall, 2},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.fixture, tc.seed), func(t *testing.T) {
			ctx := t.Context()
			id := localstore.FixtureIdentity(tc.seed)
			want := seedHere(t, tc.fixture, tc.seed)
			pa, pb := SeededWallet(t, tc.fixture, tc.seed), SeededWallet(t, tc.fixture, tc.seed)
			a, b := open(t, pa), open(t, pb)
			compare.SameWallet(t, want, a, id)
			sa, err := a.Settings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := b.Settings(ctx)
			if err != nil || sa.StorageIdentityKey != sb.StorageIdentityKey {
				t.Fatalf("copies name storages %q and %q (%v); want the template's in both", sa.StorageIdentityKey, sb.StorageIdentityKey, err)
			}
			a.Close()
			before := compare.Digests(t, pb)
			db, err := sql.Open("sqlite", pa)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE tx_labels SET label = label || ' changed'`); err != nil {
				t.Fatal(err)
			}
			if compare.Digests(t, pa)["tx_labels"] == before["tx_labels"] {
				t.Fatal("the write to one copy changed no label")
			}
			compare.Same(t, "the other copy", compare.Digests(t, pb), before)
			compare.Same(t, "a later copy", compare.Digests(t, SeededWallet(t, tc.fixture, tc.seed)), before)
		})
	}
}

func seedHere(t *testing.T, f localstore.Fixture, seed uint64) *localstore.Store {
	t.Helper()
	s, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), "here.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := localstore.Seed(t.Context(), s, f, localstore.SeedOptions{Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return s
}

func open(t *testing.T, path string) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
