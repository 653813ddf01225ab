package brc38

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"walletsync/testkit/jsoracle"
)

// fieldNames are certificate field names as people and apps write them: mixed case,
// accents in NFC and NFD, digits, punctuation, spaces, and a few scripts. All of them are in
// LocaleOrderExact's verified set.
var fieldNames = []string{
	"alpha", "Alpha", "ALPHA", "beta", "Beta", "b", "B", "a", "A", "", "a b", "a-b", "a_b", "a.b", "ab", "aB", "Ab",
	"a1", "a10", "a2", "A1", "_a", "-a", ".a", " a", "1", "10", "2", "9", "0", "00", "01",
	"café", "cafe", "Café", "cafe\u0301", "Cafe\u0301", "caff", "résumé", "resume", "Résumé", "naïve", "naive",
	"Ångström", "Angstrom", "zebra", "Zebra", "ß", "ss", "SS", "æ", "ae", "Æ", "ø", "o", "œ", "oe", "ñ", "n", "ü", "u",
	"Ł", "l", "đ", "d", "ı", "I", "i", "İ", "Ω", "ω", "α", "Α", "д", "Д", "ё", "е", "ア", "あ", "ｱ", "Ａ", "ａ", "가", "한국어",
	"a\u200bb", "ab\u200b", "field_name", "fieldName", "FieldName", "field-name", "field name", "fieldname",
	"email", "Email", "EMAIL", "e-mail", "firstName", "first_name", "lastName", "last name", "dateOfBirth", "DOB",
	"x", "X", "y", "Y", "z", "Z", "€", "$", "£", "¥", "#", "@", "!", "?", "*", "&", "%", "+", "=", "<", ">", "~", "^",
	"`", "'", "\"", "(", ")", "[", "]", "{", "}", "/", "\\", "|", ":", ";", ",", "—", "…", "№", "™", "\u00a0a",
}

// knownDiscrepancies are pairs that x/text's CLDR 23 tables and Node's ICU order
// differently, one per kind named in LocaleCompare's doc. LocaleOrderExact must flag at
// least one side of each.
var knownDiscrepancies = [][2]string{
	{"中文", "㐀"},           // Han: ICU orders by radical and stroke across blocks
	{"㐀", "\U00020000"},   // CJK Extension A against Extension B
	{"alpha", "🙂"},        // assigned after Unicode 6.2
	{"alpha", "\uFFFD"},   // U+FFFD sorts last in current CLDR
	{"'b", "\u2018a"},     // typographic quotes are variants of ' in current CLDR
	{"\u0403", "\u0434"},  // Ѓ and д: Macedonian and Serbian letters moved
	{"a\u309a", "\u0201"}, // the kana sound marks against a diacritic
	{"\u0110", "\u1e0c"},  // Đ against Ḍ: combining-mark weights changed
}

// denseRanks gives each string its rank in a stable sort by LocaleCompare, equal strings
// sharing a rank: two collations agree on a list exactly when these ranks agree.
func denseRanks(list []string) []int {
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return LocaleCompare(list[a], list[b]) })
	ranks := make([]int, len(list))
	rank := 0
	for k, i := range order {
		if k > 0 && LocaleCompare(list[order[k-1]], list[i]) != 0 {
			rank++
		}
		ranks[i] = rank
	}
	return ranks
}

// verifiedStrings returns every character of LocaleOrderExact's set alone, and (for every
// character outside the Hangul syllables and every 17th Hangul syllable) next to a letter
// on either side, which exposes differences hidden at the tertiary level of single
// characters; then random strings over the set.
func verifiedStrings() []string {
	var out []string
	var chars []rune
	for _, rg := range exactCollation().R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			chars = append(chars, r)
		}
	}
	for _, r := range chars {
		c := string(r)
		out = append(out, c)
		if !unicode.Is(unicode.Hangul, r) || r%17 == 0 {
			out = append(out, c+"a", c+"b", "a"+c, "b"+c)
		}
	}
	rng := rand.New(rand.NewPCG(30, 31))
	for range 1500 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			if rng.IntN(3) == 0 {
				b.WriteRune(chars[rng.IntN(len(chars))])
			} else {
				b.WriteByte("aAbBeE-_ 1.zZ"[rng.IntN(13)])
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestLocaleCompare_MatchesNode(t *testing.T) {
	verified := verifiedStrings()
	for _, s := range fieldNames {
		if !LocaleOrderExact(s) {
			t.Fatalf("test name %+q is outside the verified set", s)
		}
	}
	resp := jsoracle.Ask(t, jsoracle.Request{Ranks: [][]string{jsoracle.Strings(fieldNames), jsoracle.Strings(verified)}})
	t.Logf("Node collator %s, ICU %s; x/text collate CLDR %s", resp.Locale, resp.ICU, collate.CLDRVersion)
	for li, list := range [][]string{fieldNames, verified} {
		if i, j, found := firstDisagreement(denseRanks(list), resp.Ranks[li]); found {
			t.Errorf("%+q against %+q: Go says %d, Node says %d", list[i], list[j], LocaleCompare(list[i], list[j]), sign(resp.Ranks[li][i]-resp.Ranks[li][j]))
		}
	}
}

// firstDisagreement walks the strings in Node's order and returns the first neighbours Go
// orders differently. Checking neighbours is complete: two rankings that agree on every
// neighbouring pair of one of them are the same ranking.
func firstDisagreement(got, want []int) (int, int, bool) {
	order := make([]int, len(want))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return want[a] - want[b] })
	for k := 1; k < len(order); k++ {
		i, j := order[k-1], order[k]
		if sign(got[i]-got[j]) != sign(want[i]-want[j]) {
			return i, j, true
		}
	}
	return 0, 0, false
}

func sign(x int) int { return max(-1, min(1, x)) }

func TestLocaleCompare_Examples(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"alpha", "Alpha", -1}, // lower case first at the tertiary level
		{"Alpha", "beta", -1},  // letters before case
		{"alpha", "beta", -1},
		{"a10", "a2", -1}, // no numeric collation
		{"café", "cafe\u0301", 0},
		{"ab", "a\u200bb", 0}, // zero-width space is ignorable
		{"resume", "résumé", -1},
		{"_a", "a", -1}, // punctuation before letters (non-ignorable)
	} {
		if got := LocaleCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("LocaleCompare(%+q, %+q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestLocaleCompare_KnownDiscrepanciesAreFlagged(t *testing.T) {
	req := jsoracle.Request{}
	for _, p := range knownDiscrepancies {
		req.Ranks = append(req.Ranks, jsoracle.Strings(p[:]))
	}
	resp := jsoracle.Ask(t, req)
	for i, p := range knownDiscrepancies {
		if LocaleOrderExact(p[0]) && LocaleOrderExact(p[1]) {
			t.Errorf("LocaleOrderExact claims %+q and %+q order exactly", p[0], p[1])
		}
		if node, got := sign(resp.Ranks[i][0]-resp.Ranks[i][1]), LocaleCompare(p[0], p[1]); node == got {
			t.Errorf("%+q vs %+q: Go and Node now agree (%d); update knownDiscrepancies and the LocaleCompare doc", p[0], p[1], got)
		}
	}
}

func TestLocaleCompare_UndEqualsAmericanEnglish(t *testing.T) {
	en := collate.New(language.AmericanEnglish)
	for _, a := range fieldNames {
		for _, b := range fieldNames {
			if got, want := LocaleCompare(a, b), en.CompareString(a, b); got != want {
				t.Fatalf("%+q vs %+q: root %d, en-US %d", a, b, got, want)
			}
		}
	}
}

func TestLocaleCompare_ConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if LocaleCompare("alpha", "Alpha") != -1 || LocaleCompare("Beta", "alpha") != 1 {
					t.Error("wrong answer under concurrent use")
					return
				}
			}
		})
	}
	wg.Wait()
}
