package localstore

import (
	"context"
	"path/filepath"
	"testing"

	"walletsync/wallet"
)

// mustCreate makes a fresh store on the test chain in a temp dir; the test closes it.
func mustCreate(tb testing.TB, opts Options) *Store {
	tb.Helper()
	return mustCreateWith(tb, wallet.ChainTest, opts)
}

// mustCreateOn makes a fresh store on chain.
func mustCreateOn(tb testing.TB, chain wallet.Chain) *Store {
	tb.Helper()
	return mustCreateWith(tb, chain, Options{})
}

func mustCreateWith(tb testing.TB, chain wallet.Chain, opts Options) *Store {
	tb.Helper()
	s, err := Create(context.Background(), filepath.Join(tb.TempDir(), "wallet.sqlite"), CreateOptions{Chain: chain, StorageName: "test"}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// mustSeed fills s with a fixture and returns the user's identity key.
func mustSeed(tb testing.TB, s *Store, f Fixture, seed uint64) string {
	tb.Helper()
	res, err := Seed(context.Background(), s, f, SeedOptions{Seed: seed})
	if err != nil {
		tb.Fatal(err)
	}
	return res.IdentityKey
}

// readAll pages a whole table through v and returns its rows.
func readAll(tb testing.TB, v *Snapshot, table wallet.TableName, identity string, limits wallet.Limits) []wallet.Row {
	tb.Helper()
	var out []wallet.Row
	var after wallet.Cursor
	for range 1_000_000 {
		p, err := v.ReadPage(context.Background(), wallet.PageRequest{Table: table, IdentityKey: identity, After: after, Limits: limits})
		if err != nil {
			tb.Fatalf("read %s: %v", table, err)
		}
		out = append(out, p.Rows...)
		if p.Done {
			return out
		}
		if len(p.Rows) == 0 {
			tb.Fatalf("read %s: empty page that is not done", table)
		}
		after = p.Next
	}
	tb.Fatalf("read %s: no end", table)
	return nil
}
