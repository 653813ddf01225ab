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
