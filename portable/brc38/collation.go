package brc38

import (
	"sync"
	"unicode"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// collators pools root collators: a collate.Collator keeps per-call buffers and is not safe
// for concurrent use, and building one per comparison would dominate a sort.
var collators = sync.Pool{New: func() any { return collate.New(language.Und) }}

// LocaleCompare orders a and b as JavaScript's a.localeCompare(b) does in Node under
// LANG=C.UTF-8 (ICU's en-US collation, which is the CLDR root order), the order in which the
// toolbox sorts certificate fields by fieldName. It returns -1, 0 or +1: tertiary strength,
// so case and accents decide only after the letters ("alpha" < "Alpha" < "beta"), and
// canonically equivalent strings (NFC and NFD spellings) or strings differing only in
// completely ignorable characters (a zero-width space) compare equal.
//
// Ties are real: JavaScript's sort is stable, so equal names keep the order they had before
// sorting. Callers must sort with a stable sort (slices.SortStableFunc) from the toolbox's
// pre-sort order to reproduce its output.
//
// golang.org/x/text/collate implements CLDR 23 (Unicode 6.2); Node's ICU is far newer, and
// the two disagree on Han ideographs (ICU sorts all of them by radical and stroke, across
// blocks), on characters assigned after Unicode 6.2 (most emoji), on U+FFFD, on typographic
// quotation marks, on some Cyrillic letters (Serbian and Macedonian), on the kana sound
// marks, and on some combining marks (many Vietnamese letters). LocaleOrderExact tells whether a string avoids all of
// that; language.Und and language.AmericanEnglish give identical results.
func LocaleCompare(a, b string) int {
	c := collators.Get().(*collate.Collator)
	defer collators.Put(c)
	return c.CompareString(a, b)
}

// LocaleOrderExact reports whether LocaleCompare orders s exactly as Node's ICU does against
// any other string for which LocaleOrderExact is true. It is true when every character of
// NFC(s) was assigned by Unicode 6.2 and lies in a range where the two orders were compared
// exhaustively, single characters and pairs with neighbours, and found identical: printable
// ASCII, Latin-1 and Latin Extended-A/B, IPA, Greek, the Russian Cyrillic alphabet, general
// punctuation without the typographic quotes U+2018..U+201F, the euro sign, letterlike
// symbols, Hiragana and Katakana without the sound marks U+3099..U+309C, Hangul syllables,
// and half- and full-width forms without U+FF9E..U+FF9F. A BRC-38 encoder can use it to
// warn that certificate field names outside this set may be ordered differently from the
// toolbox's export.
func LocaleOrderExact(s string) bool {
	exact := exactCollation()
	for _, r := range norm.NFC.String(s) {
		if !unicode.Is(exact, r) {
			return false
		}
	}
	return true
}

// exactCollation is the verified set LocaleOrderExact checks against, built on first use.
// TestLocaleCompare_MatchesNode re-checks every character in it against Node on every test
// run.
var exactCollation = sync.OnceValue(func() *unicode.RangeTable {
	assigned := rangetable.Assigned("6.2.0")
	var rs []rune
	for _, rg := range [][2]rune{
		{0x0020, 0x007E}, // printable ASCII
		{0x00A0, 0x024F}, // Latin-1 Supplement, Latin Extended-A and -B
		{0x0250, 0x02AF}, // IPA Extensions
		{0x0370, 0x03FF}, // Greek and Coptic
		{0x0401, 0x0401}, // Ё
		{0x0410, 0x044F}, // А..я
		{0x0451, 0x0451}, // ё
		{0x2000, 0x2017}, // general punctuation before the typographic quotes
		{0x2020, 0x206F}, // and after them
		{0x20AC, 0x20AC}, // €
		{0x2100, 0x214F}, // letterlike symbols
		{0x3040, 0x3098}, // Hiragana and Katakana, without the (semi-)voiced sound marks
		{0x309D, 0x30FF},
		{0xAC00, 0xD7A3}, // Hangul syllables
		{0xFF00, 0xFF9D}, // half- and full-width forms, without the halfwidth sound marks
		{0xFFA0, 0xFFEF},
	} {
		for r := rg[0]; r <= rg[1]; r++ {
			if unicode.Is(assigned, r) {
				rs = append(rs, r)
			}
		}
	}
	return rangetable.New(rs...)
})
