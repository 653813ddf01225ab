package syncer_test

import (
	"context"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

func TestRun_FullThenUnchangedThenIncremental(t *testing.T) {
	for _, f := range []localstore.Fixture{localstore.FixtureSmall, localstore.FixtureToolbox} {
		t.Run(string(f), func(t *testing.T) {
			src, id := seeded(t, f, 3)
			dst := newStore(t, wallet.ChainTest)
			res := push(t, src, dst, id, syncer.Options{MaxRows: 50})
			if res.Kind != syncer.KindFull || res.State != syncer.StateCompleted || res.Inserts == 0 || !res.Checkpoint.Done {
				t.Fatalf("first sync: %+v", res)
			}
			mustEqual(t, src, dst, id)

			again := push(t, src, dst, id, syncer.Options{})
			if again.Kind != syncer.KindUnchanged || again.Pages != 0 || again.Requests != 1 {
				t.Fatalf("unchanged re-sync: %+v; want 0 pages in 1 request", again)
			}

			ctx := context.Background()
			txID, err := src.RecordTransaction(ctx, id, wallet.NewTransaction{Satoshis: 77, Labels: []string{"fresh"},
				Outputs: []wallet.NewOutput{{Vout: 0, Satoshis: 77, Basket: "default", Tags: []string{"new-tag"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := src.AddLabel(ctx, id, 1, "relabelled"); err != nil {
				t.Fatal(err)
			}
			if err := src.SoftDelete(ctx, id, wallet.SoftDeleteBasket, "savings"); err != nil {
				t.Fatal(err)
			}
			inc := push(t, src, dst, id, syncer.Options{})
			if inc.Kind != syncer.KindIncremental || inc.Rows > 12 || inc.Inserts == 0 || inc.Updates == 0 {
				t.Fatalf("incremental sync after a few changes: %+v", inc)
			}
			mustEqual(t, src, dst, id)
			_ = txID
		})
	}
}

// TestRun_BulkPages checks the bulk mode: a full copy in pages of up to BulkMaxBytes (fewer
// than the default 256 KiB allows for the toolbox fixture's 32 KiB raw transactions), equal
// stores, and incremental pages that keep the default byte limit.
func TestRun_BulkPages(t *testing.T) {
	src, id := seeded(t, localstore.FixtureToolbox, 5)
	plain := newStore(t, wallet.ChainTest)
	want := push(t, src, plain, id, syncer.Options{})

	dst := newStore(t, wallet.ChainTest)
	var largest int64
	bulk := push(t, src, dst, id, syncer.Options{Bulk: true, Progress: func(p syncer.Progress) error {
		largest = max(largest, p.PageBytes)
		return nil
	}})
	if bulk.Kind != syncer.KindFull || bulk.Rows != want.Rows || bulk.Inserts != want.Inserts || bulk.Pages >= want.Pages {
		t.Fatalf("bulk copy %+v; want the %d rows of the default copy in fewer than its %d pages", bulk, want.Rows, want.Pages)
	}
	if largest <= syncer.DefaultMaxBytes || largest > syncer.BulkMaxBytes {
		t.Fatalf("largest bulk page %d bytes; want above %d, at most %d", largest, syncer.DefaultMaxBytes, syncer.BulkMaxBytes)
	}
	mustEqual(t, src, dst, id)

	// Half the rows change, among them proofs with 32 KiB raw transactions: several times
	// the default byte limit in all. (Proofs never change once stored, so the stores are
	// not compared after this run.)
	if _, err := src.TouchFraction(context.Background(), id, 0.5); err != nil {
		t.Fatal(err)
	}
	largest = 0
	inc := push(t, src, dst, id, syncer.Options{Bulk: true, Progress: func(p syncer.Progress) error {
		largest = max(largest, p.PageBytes)
		return nil
	}})
	if inc.Kind != syncer.KindIncremental || inc.Bytes <= syncer.DefaultMaxBytes || largest > syncer.DefaultMaxBytes {
		t.Fatalf("incremental run %+v with a %d-byte page; want more than %d bytes in pages within that limit", inc, largest, syncer.DefaultMaxBytes)
	}
}
