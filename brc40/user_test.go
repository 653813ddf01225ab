package brc40

import (
	"testing"
	"time"

	"walletsync/wallet"
)

// A new user comes with the toolbox's default basket, both stamped at the epoch so that any
// real row from another store is newer.
func TestNewUserRows_ToolboxDefaults(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	user, basket := NewUserRows("03aa", "02bb", now)
	u, b := wallet.Users, wallet.OutputBaskets
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"user identityKey", user[u.Col("identityKey")], "03aa"},
		{"user activeStorage", user[u.Col("activeStorage")], "02bb"},
		{"user created_at", user[u.Col("created_at")], now},
		{"user updated_at", user[u.Col("updated_at")], UserEpoch()},
		{"basket name", basket[b.Col("name")], DefaultBasket},
		{"basket numberOfDesiredUTXOs", basket[b.Col("numberOfDesiredUTXOs")], int64(144)},
		{"basket minimumDesiredUTXOValue", basket[b.Col("minimumDesiredUTXOValue")], int64(32)},
		{"basket isDeleted", basket[b.Col("isDeleted")], false},
		{"basket created_at", basket[b.Col("created_at")], now},
		{"basket updated_at", basket[b.Col("updated_at")], UserEpoch()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("%v, want %v", tc.got, tc.want)
			}
		})
	}
}

// Only an output basket without a name is renamed, and only to the default basket.
func TestPrepareNew_NamesUnnamedBaskets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table *wallet.Table
		col   string
		in    any
		want  any
	}{
		{"unnamed basket", wallet.OutputBaskets, "name", "", DefaultBasket},
		{"named basket", wallet.OutputBaskets, "name", "savings", "savings"},
		{"unnamed label", wallet.TxLabels, "label", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := make(wallet.Row, len(tc.table.Columns))
			r[tc.table.Col(tc.col)] = tc.in
			PrepareNew(tc.table, r)
			if got := r[tc.table.Col(tc.col)]; got != tc.want {
				t.Fatalf("%s = %q, want %q", tc.col, got, tc.want)
			}
		})
	}
}
