package brc38

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"walletsync/testkit/jsoracle"
	"walletsync/wallet"
)

func TestCompareKeysUTF16_MatchesJSDefaultSort(t *testing.T) {
	tableNames := make([]string, 0, len(wallet.AllTables))
	for _, tb := range wallet.AllTables {
		if tb != wallet.Users {
			tableNames = append(tableNames, tb.Plural)
		}
	}
	lists := [][]string{
		{"user", "tables", "title", "sourceStorage", "formatVersion", "exportedAt", "brc"},
		tableNames,
		{"a", "B", "_", "", "é", "\uE000", "\uFFFF", "\uFB01", "\U0001F600", "\U0001D538", "\U0010FFFF", "\uD7FF", "a\x00", "a", "Z", "10", "9", "\u00e9", "e\u0301"},
	}
	rng := rand.New(rand.NewPCG(24, 25))
	random := make([]string, 300)
	for i := range random {
		random[i] = jsoracle.RandomText(rng, 6)
	}
	lists = append(lists, random)
	req := jsoracle.Request{}
	for _, l := range lists {
		req.KeySort = append(req.KeySort, jsoracle.Strings(l))
	}
	resp := jsoracle.Ask(t, req)
	for i, l := range lists {
		got := slices.Clone(l)
		slices.SortFunc(got, CompareKeysUTF16)
		for j, w := range resp.KeySort[i] {
			if want := jsoracle.FromString(t, w); got[j] != want {
				t.Fatalf("list %d position %d: Go has %+q, JavaScript %+q", i, j, got[j], want)
			}
		}
	}
	if want := []string{"brc", "exportedAt", "formatVersion", "sourceStorage", "tables", "title", "user"}; !slices.Equal(sortedKeys(lists[0]), want) {
		t.Errorf("top-level order %v, want the reference's %v", sortedKeys(lists[0]), want)
	}
	if want := []string{"certificateFields", "certificates", "commissions", "outputBaskets", "outputTagMaps", "outputTags", "outputs",
		"provenTxReqs", "provenTxs", "syncStates", "transactions", "txLabelMaps", "txLabels"}; !slices.Equal(sortedKeys(tableNames), want) {
		t.Errorf("tables order %v, want the reference's %v", sortedKeys(tableNames), want)
	}
}

func sortedKeys(keys []string) []string {
	s := slices.Clone(keys)
	slices.SortFunc(s, CompareKeysUTF16)
	return s
}

func TestCompareKeysUTF16_TotalOnInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"\xe4\xb8\xad", "\xe4\xb8\xff", -1}, // 中 against a broken sequence sharing its first bytes
		{"\x100", "\x10\xb0", -1},            // a stray continuation byte after a shared prefix
		{"\xff", "\xfe", 1},
		{"a\xff", "a\xff", 0},
		{"\U0001F600", "\uFFFF", -1},
		{"\uFFFF", "\U0001F600", 1},
		{"abc", "ab", 1},
	} {
		if got := CompareKeysUTF16(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareKeysUTF16(%+q, %+q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// FuzzCompareKeysUTF16: the order is antisymmetric, transitive and zero only for equal
// strings, whatever the bytes; on valid UTF-8 it is exactly UTF-16 code unit order.
func FuzzCompareKeysUTF16(f *testing.F) {
	f.Add("a", "b", "c")
	f.Add("\uFFFF", "\U0001F600", "\uE000")
	f.Add("\xe4\xb8\xad", "\xe4\xb8\xff", "\xe4")
	f.Add("\x100", "\x10\xb0", "\x10")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ab, ba := CompareKeysUTF16(a, b), CompareKeysUTF16(b, a)
		if ab != -ba || (ab == 0) != (a == b) {
			t.Fatalf("CompareKeysUTF16(%+q, %+q) = %d, reversed %d", a, b, ab, ba)
		}
		if bc, ac := CompareKeysUTF16(b, c), CompareKeysUTF16(a, c); ab <= 0 && bc <= 0 && ac > 0 {
			t.Fatalf("not transitive: %+q <= %+q <= %+q but the first is greater than the last", a, b, c)
		}
		if utf8.ValidString(a) && utf8.ValidString(b) {
			if want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))); ab != want {
				t.Fatalf("CompareKeysUTF16(%+q, %+q) = %d, UTF-16 order %d", a, b, ab, want)
			}
		}
	})
}
