package brc38

import (
	"cmp"
	"unicode/utf8"
)

// CompareKeysUTF16 orders a and b as JavaScript's default sort orders object keys: by UTF-16
// code units. It returns -1, 0 or +1. It differs from Go's byte order (code point order) only
// where one string has a character above U+FFFF and the other one in U+E000..U+FFFF at the
// same position: the surrogate pair (D800..DFFF) sorts before the latter. Keys should be
// valid UTF-8, as wallet.AppendJSString requires of every key written; an invalid byte
// sorts after every character, by its value, so that the result is a total order on all
// strings.
func CompareKeysUTF16(a, b string) int {
	for a != "" && b != "" {
		ka, na := utf16Key(a)
		kb, nb := utf16Key(b)
		if ka != kb {
			return cmp.Compare(ka, kb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Key decodes the first character of s and returns a number ordered as its UTF-16 code
// units, and the character's length in bytes. Characters above U+FFFF start with a
// surrogate (D800..DBFF) and so sort between U+D7FF and U+E000; moving U+E000..U+FFFF above
// all of them gives that order (equal first surrogates are decided by the second, which
// follows the code point). Invalid bytes go above everything.
func utf16Key(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n == 1:
		return 0x220000 + rune(s[0]), 1
	case r >= 0xE000 && r <= 0xFFFF:
		return r + 0x110000, n
	}
	return r, n
}
