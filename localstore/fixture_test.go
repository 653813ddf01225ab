package localstore

import (
	"reflect"
	"testing"

	"walletsync/testkit/compare"
	"walletsync/wallet"
)

func TestSeed_Deterministic(t *testing.T) {
	a, b, c := mustCreate(t, Options{}), mustCreate(t, Options{}), mustCreate(t, Options{})
	idA, idB, idC := mustSeed(t, a, FixtureSmall, 5), mustSeed(t, b, FixtureSmall, 5), mustSeed(t, c, FixtureSmall, 6)
	if idA != idB || idA == idC {
		t.Fatalf("identities: %s %s %s", idA, idB, idC)
	}
	differs := false
	for _, tb := range wallet.AllTables {
		ra, rb, rc := scanTable(t, a, tb, idA), scanTable(t, b, tb, idB), scanTable(t, c, tb, idC)
		if len(ra) == 0 {
			t.Errorf("%s: the small fixture has no rows", tb.Name)
		}
		// The user row and its default basket are stamped with the time they were made.
		if tb == wallet.Users || tb == wallet.OutputBaskets {
			ra, rb = ra[1:], rb[1:]
			if tb == wallet.Users {
				continue
			}
		}
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("%s: the same seed gave different rows", tb.Name)
		}
		if !reflect.DeepEqual(scanTable(t, a, tb, idA), rc) {
			differs = true
		}
	}
	if !differs {
		t.Error("another seed gave the same rows")
	}
}

func TestSeed_ToolboxShape(t *testing.T) {
	s := mustCreate(t, Options{})
	res, err := Seed(t.Context(), s, FixtureToolbox, SeedOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	labels := scanTable(t, s, wallet.TxLabels, res.IdentityKey)
	if len(labels) != 10_000 {
		t.Fatalf("%d labels, want 10000", len(labels))
	}
	stamp := labels[0][wallet.TxLabels.Col("updated_at")]
	tombstones := 0
	for _, r := range labels {
		if r[wallet.TxLabels.Col("updated_at")] != stamp {
			t.Fatal("labels do not share one updated_at")
		}
		if r[wallet.TxLabels.Col("isDeleted")] == true {
			tombstones++
		}
	}
	if tombstones != 1000 {
		t.Fatalf("%d tombstoned labels, want 10%%", tombstones)
	}
	proofs := scanTable(t, s, wallet.ProvenTxs, res.IdentityKey)
	if len(proofs) != 64 || len(proofs[0][wallet.ProvenTxs.Col("rawTx")].([]byte)) != 32<<10 {
		t.Fatalf("%d proven txs", len(proofs))
	}
	for _, tb := range wallet.AllTables {
		if res.Rows[tb.Name] == 0 && tb != wallet.Users {
			t.Errorf("%s: no rows", tb.Name)
		}
	}
}

// TestCopyRawFrom_BothFloorsCopyTheWallet checks the two floors `bench sync` measures a sync
// against: each copies every row of the wallet, equal to the source's.
func TestCopyRawFrom_BothFloorsCopyTheWallet(t *testing.T) {
	src := mustCreate(t, Options{})
	identity := mustSeed(t, src, FixtureSmall, 1)
	want := mustLogical(t, src, identity)
	for name, copyFrom := range map[string]func(*Store) (int64, error){
		"raw":        func(dst *Store) (int64, error) { return dst.CopyRawFrom(t.Context(), src.path) },
		"through Go": func(dst *Store) (int64, error) { return dst.CopyThroughGo(t.Context(), src.path) },
	} {
		dst := mustCreate(t, Options{})
		rows, err := copyFrom(dst)
		if err != nil || rows == 0 {
			t.Fatalf("%s copy: %d rows, %v", name, rows, err)
		}
		if d := compare.Diff(want, mustLogical(t, dst, identity)); d != "" {
			t.Errorf("%s copy differs from the source:\n%s", name, d)
		}
	}
}
