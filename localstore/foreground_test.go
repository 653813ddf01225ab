package localstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/wallet"
)

func TestForeground_RecordListLabel(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	ctx := context.Background()
	before, err := s.Summary(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	txID, err := s.RecordTransaction(ctx, id, wallet.NewTransaction{Satoshis: 1500, Description: "coffee",
		Labels: []string{"food", "morning"},
		Outputs: []wallet.NewOutput{
			{Vout: 0, Satoshis: 1000, Basket: "default", LockingScript: p2pkh(make([]byte, 20)), Change: true, Tags: []string{"fresh"}},
			{Vout: 1, Satoshis: 500, Basket: "coffee jar", LockingScript: p2pkh(make([]byte, 20))},
		}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Summary(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Balance != before.Balance+1500 || after.SpendableOutputs != before.SpendableOutputs+2 ||
		after.Counts[wallet.TableTransactions] != before.Counts[wallet.TableTransactions]+1 ||
		after.Counts[wallet.TableOutputBaskets] != before.Counts[wallet.TableOutputBaskets]+1 {
		t.Fatalf("summary before %+v, after %+v", before, after)
	}

	actions, err := s.ListActions(ctx, id, wallet.ActionQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || actions[0].TransactionID != txID || actions[0].Description != "coffee" || !slices.Equal(sorted(actions[0].Labels), []string{"food", "morning"}) {
		t.Fatalf("newest action = %+v", actions)
	}
	// Keyset paging newest first reaches every transaction exactly once.
	var seen []int64
	for before := int64(0); ; {
		page, err := s.ListActions(ctx, id, wallet.ActionQuery{Before: before, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, a := range page {
			seen = append(seen, a.TransactionID)
		}
		before = page[len(page)-1].TransactionID
	}
	if int64(len(seen)) != after.Counts[wallet.TableTransactions] || !slices.IsSortedFunc(seen, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("paged actions %v, want all %d newest first", seen, after.Counts[wallet.TableTransactions])
	}

	if err := s.RemoveLabel(ctx, id, txID, "food"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveLabel(ctx, id, txID, "never there"); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("remove a missing label: err = %v, want ErrNotFound", err)
	}
	if err := s.AddLabel(ctx, id, txID, "dessert"); err != nil {
		t.Fatal(err)
	}
	labelled, err := s.ListActions(ctx, id, wallet.ActionQuery{Label: "dessert"})
	if err != nil {
		t.Fatal(err)
	}
	if len(labelled) != 1 || !slices.Equal(sorted(labelled[0].Labels), []string{"dessert", "morning"}) {
		t.Fatalf("actions labelled dessert = %+v", labelled)
	}
	if food, _ := s.ListActions(ctx, id, wallet.ActionQuery{Label: "food"}); len(food) != 0 {
		t.Fatalf("a removed label still lists %+v", food)
	}
	// Adding it back revives the soft-deleted map row instead of inserting a duplicate.
	if err := s.AddLabel(ctx, id, txID, "food"); err != nil {
		t.Fatal(err)
	}
	if food, _ := s.ListActions(ctx, id, wallet.ActionQuery{Label: "food"}); len(food) != 1 {
		t.Fatalf("re-added label lists %+v", food)
	}

	jar, err := s.ListOutputs(ctx, id, wallet.OutputQuery{Basket: "coffee jar"})
	if err != nil || len(jar) != 1 || jar[0].Satoshis != 500 {
		t.Fatalf("coffee jar outputs = %+v, %v", jar, err)
	}
	def, err := s.ListOutputs(ctx, id, wallet.OutputQuery{Basket: "default", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	fresh := slices.IndexFunc(def, func(o wallet.Output) bool { return slices.Contains(o.Tags, "fresh") })
	if fresh < 0 {
		t.Fatalf("tagged change output missing from %+v", def)
	}
	if err := s.MarkSpent(ctx, id, []int64{def[fresh].OutputID}, txID); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSpent(ctx, id, []int64{999999}, txID); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("spend a missing output: err = %v, want ErrNotFound", err)
	}
	spent, _ := s.Summary(ctx, id)
	if spent.Balance != after.Balance-1000 {
		t.Fatalf("balance after spending 1000: %d, want %d", spent.Balance, after.Balance-1000)
	}
}

func TestForeground_SoftDelete(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	ctx := context.Background()
	tests := []struct {
		kind  wallet.SoftDeleteKind
		name  string
		table *wallet.Table
		col   string
	}{
		{wallet.SoftDeleteBasket, "savings", wallet.OutputBaskets, "name"},
		{wallet.SoftDeleteLabel, labelName(0), wallet.TxLabels, "label"},
		{wallet.SoftDeleteTag, "tag-000", wallet.OutputTags, "tag"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			rowsBefore := scanTable(t, s, tt.table, id)
			if err := s.SoftDelete(ctx, id, tt.kind, tt.name); err != nil {
				t.Fatal(err)
			}
			rowsAfter := scanTable(t, s, tt.table, id)
			if len(rowsAfter) != len(rowsBefore) {
				t.Fatal("a soft delete removed a row")
			}
			for i, r := range rowsAfter {
				if r[tt.table.Col(tt.col)] != tt.name {
					continue
				}
				old := rowsBefore[i]
				if r[tt.table.Col("isDeleted")] != true || old[tt.table.Col("updated_at")] == r[tt.table.Col("updated_at")] {
					t.Fatalf("row after soft delete = %v", r)
				}
			}
			if err := s.SoftDelete(ctx, id, tt.kind, tt.name); !errors.Is(err, wallet.ErrNotFound) {
				t.Fatalf("second soft delete: err = %v, want ErrNotFound", err)
			}
		})
	}
	if err := s.SoftDelete(ctx, id, "wallet", "x"); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("unknown kind: err = %v", err)
	}
}

func TestForeground_UnknownIdentity(t *testing.T) {
	s := mustCreate(t, Options{})
	ctx := context.Background()
	if _, err := s.Summary(ctx, "02nobody"); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("summary: err = %v", err)
	}
	if _, err := s.RecordTransaction(ctx, "02nobody", wallet.NewTransaction{}); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("record: err = %v", err)
	}
	if _, err := s.ListActions(ctx, "02nobody", wallet.ActionQuery{Limit: 5000}); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("limit out of range: err = %v", err)
	}
}

func TestEnsureUser_LikeTheToolbox(t *testing.T) {
	s := mustCreate(t, Options{})
	ctx := context.Background()
	key := FixtureIdentity(42)
	id, created, err := s.EnsureUser(ctx, key)
	if err != nil || !created {
		t.Fatalf("first ensure: %d %v %v", id, created, err)
	}
	again, created, err := s.EnsureUser(ctx, key)
	if err != nil || created || again != id {
		t.Fatalf("second ensure: %d %v %v", again, created, err)
	}
	settings, _ := s.Settings(ctx)
	users := scanTable(t, s, wallet.Users, key)
	baskets := scanTable(t, s, wallet.OutputBaskets, key)
	u, b := wallet.Users, wallet.OutputBaskets
	if len(users) != 1 || users[0][u.Col("activeStorage")] != settings.StorageIdentityKey || !users[0][u.Col("updated_at")].(time.Time).Equal(brc40.UserEpoch()) {
		t.Fatalf("user row = %v", users)
	}
	if len(baskets) != 1 || baskets[0][b.Col("name")] != "default" || baskets[0][b.Col("numberOfDesiredUTXOs")] != int64(144) ||
		baskets[0][b.Col("minimumDesiredUTXOValue")] != int64(32) || !baskets[0][b.Col("updated_at")].(time.Time).Equal(brc40.UserEpoch()) {
		t.Fatalf("default basket = %v", baskets)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
