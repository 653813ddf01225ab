package wallet

import (
	"errors"
	"testing"
	"time"
)

func TestLimits_Validate(t *testing.T) {
	tests := []struct {
		l  Limits
		ok bool
	}{
		{Limits{}.WithDefaults(), true},
		{Limits{Rows: 1, Bytes: 1}, true},
		{Limits{Rows: MaxPageRows, Bytes: MaxPageBytes}, true},
		{Limits{Rows: 1, Bytes: MaxFrameBytes}, true},
		{Limits{Rows: 0, Bytes: 10}, false},
		{Limits{Rows: MaxPageRows + 1, Bytes: 10}, false},
		{Limits{Rows: 2, Bytes: MaxPageBytes + 1}, false},
		{Limits{Rows: 1, Bytes: MaxFrameBytes + 1}, false},
		{Limits{Rows: 5, Bytes: 0}, false},
	}
	for _, tt := range tests {
		err := tt.l.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%+v: err = %v, want ok = %v", tt.l, err, tt.ok)
		}
	}
}

func TestCheckSameChain_Refusals(t *testing.T) {
	tests := []struct {
		a, b Chain
		ok   bool
	}{
		{ChainTest, ChainTest, true},
		{ChainMain, ChainMain, true},
		{ChainMain, ChainTest, false},
		{"", ChainTest, false},
		{ChainTest, "", false},
		{"", "", false},
		{"moon", "moon", false},
	}
	for _, tt := range tests {
		err := CheckSameChain(tt.a, tt.b)
		var ce *ChainError
		if (err == nil) != tt.ok || (err != nil && (!errors.Is(err, ErrWrongChain) || !errors.As(err, &ce))) {
			t.Errorf("%q vs %q: err = %v, want ok = %v", tt.a, tt.b, err, tt.ok)
		}
	}
}

func TestParseTime_Forms(t *testing.T) {
	want := time.Date(2026, 11, 29, 19, 1, 4, 11e6, time.UTC)
	for _, s := range []string{"2026-11-29T19:01:04.011Z", "2026-11-29T19:01:04.011999Z", "2026-11-29T20:01:04.011+01:00", "2026-11-29 19:01:04.011"} {
		got, err := ParseTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", s, got, err, want)
		}
	}
	if got, err := ParseTime("2026-11-29 19:01:04"); err != nil || !got.Equal(want.Truncate(time.Second)) {
		t.Errorf("SQLite default form: %v, %v", got, err)
	}
	if _, err := ParseTime("yesterday"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("garbage: err = %v", err)
	}
	if s := FormatTime(want.In(time.FixedZone("x", 3600))); s != "2026-11-29T19:01:04.011Z" {
		t.Errorf("FormatTime = %q", s)
	}
}

func TestNormalize_Kinds(t *testing.T) {
	r := Row{"2026-01-01T00:00:00.000Z", time.Date(2026, 1, 2, 0, 0, 0, 5e6+999, time.FixedZone("x", 7200)),
		int64(7), int64(1), "k", int64(6), int64(10), "0"}
	if err := OutputBaskets.Normalize(r); err != nil {
		t.Fatal(err)
	}
	if r[0] != time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) || r[1] != time.Date(2026, 1, 1, 22, 0, 0, 5e6, time.UTC) {
		t.Errorf("times = %v, %v", r[0], r[1])
	}
	if r[OutputBaskets.Col("isDeleted")] != false {
		t.Errorf("boolean from '0' = %v", r[OutputBaskets.Col("isDeleted")])
	}
	bad := Row{nil, nil, int64(1), int64(1), "k", int64(6), int64(10), int64(0)}
	if err := OutputBaskets.Normalize(bad); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NULL in a NOT NULL column: err = %v", err)
	}
	if err := OutputBaskets.Normalize(Row{1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("short row: err = %v", err)
	}
}

func TestTables_OrderAndKeys(t *testing.T) {
	want := []string{"user", "provenTx", "outputBasket", "outputTag", "txLabel", "transaction", "output",
		"txLabelMap", "outputTagMap", "certificate", "certificateField", "commission", "provenTxReq"}
	for i, tb := range SyncOrder {
		if tb.Entity != want[i] {
			t.Errorf("sync order %d = %s, want %s", i, tb.Entity, want[i])
		}
	}
	for _, tb := range AllTables {
		if got, err := LookupTable(tb.Name); err != nil || got != tb {
			t.Errorf("lookup %s: %v", tb.Name, err)
		}
		if len(tb.Key) == 0 || (tb.ID != "" && tb.Key[0] != tb.ID) {
			t.Errorf("%s: paging key %v, id %q", tb.Name, tb.Key, tb.ID)
		}
	}
	if _, err := LookupTable("settings"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("settings is not pageable: err = %v", err)
	}
}

func TestNotEmptyError_Message(t *testing.T) {
	tests := []struct {
		rows int64
		want string
	}{
		{1, "w.sqlite is not empty (users holds 1 row): a restore needs an empty wallet; merge into this one instead"},
		{3, "w.sqlite is not empty (users holds 3 rows): a restore needs an empty wallet; merge into this one instead"},
	}
	for _, tc := range tests {
		err := error(&NotEmptyError{Path: "w.sqlite", Table: "users", Rows: tc.rows})
		if err.Error() != tc.want || !errors.Is(err, ErrNotEmpty) {
			t.Errorf("%d rows: %q (is ErrNotEmpty: %v)", tc.rows, err, errors.Is(err, ErrNotEmpty))
		}
	}
}
