package portable

import (
	"cmp"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxJSInt is the largest integer magnitude AppendJSInt writes: 2^53. Every integer up to it
// is exactly a JavaScript number and prints with all its digits; above it JavaScript rounds
// (2^53 + 1 becomes 2^53) and prints rounded digits (2^60 prints as 1152921504606847000), so
// no Go int64 there has a faithful JSON form in the toolbox's documents.
const MaxJSInt = 1 << 53

// AppendJSString appends s as JavaScript's JSON.stringify writes a string: in double quotes,
// escaping only '"', '\\' and the control characters below U+0020 (as \b \t \n \f \r, the
// rest as \u00xx in lowercase hex). U+007F, U+2028, U+2029, '<', '>', '&' and all other
// non-ASCII characters are written raw as UTF-8, unlike encoding/json.
//
// JSON.stringify writes a lone surrogate as a \udxxx escape, but a Go string cannot hold one
// as a character: it appears as invalid UTF-8 or as the generalised-UTF-8 bytes ED A0 80 ..
// ED BF BF. AppendJSString refuses both with a *JSValueError (ErrNotJSValue) naming the byte
// offset, and returns dst unchanged; it never substitutes U+FFFD as encoding/json does.
func AppendJSString(dst []byte, s string) ([]byte, error) {
	const hex = "0123456789abcdef"
	start := len(dst)
	dst = append(dst, '"')
	raw := 0 // start of the run of bytes not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return dst[:start], &JSValueError{Kind: "string", Offset: i, Reason: invalidUTF8Reason(s[i:])}
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[raw:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		raw = i
	}
	dst = append(dst, s[raw:]...)
	return append(dst, '"'), nil
}

// invalidUTF8Reason tells a surrogate code point in generalised UTF-8 (ED A0..BF xx) from
// other invalid bytes, because the first is what a JavaScript lone surrogate becomes.
func invalidUTF8Reason(s string) string {
	if len(s) >= 3 && s[0] == 0xED && s[1] >= 0xA0 && s[1] <= 0xBF && s[2] >= 0x80 && s[2] <= 0xBF {
		return "surrogate code point (a lone UTF-16 surrogate), which has no UTF-8 form"
	}
	return "invalid UTF-8"
}

// AppendJSNumber appends f as JavaScript's Number.prototype.toString and JSON.stringify write
// it (ECMAScript Number::toString): the shortest digits that round-trip, plain notation for
// 1e-6 <= |f| < 1e21 ("100", "0.000001", "123456789012345680000"), exponent notation
// otherwise ("1e+21", "1.5e-7"), and "0" for both zeros. NaN and the infinities, which
// JSON.stringify writes as null and the toolbox refuses, are refused with a *JSValueError
// (ErrNotJSValue) and dst is returned unchanged.
func AppendJSNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &JSValueError{Kind: "number", Reason: "NaN or an infinity has no JSON form"}
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// strconv's shortest form is "d.ddde±xx" with the digits ECMAScript asks for (the
	// shortest that round-trip; of several, the closest to f). Reassemble it by the rules
	// of Number::toString, where f = 0.digits × 10^n.
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	var digits [17]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21: // an integer: the digits, then n-k zeros
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21: // the point inside the digits
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0: // 0.000ddd
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default: // d.ddde±x
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// AppendJSInt appends i as JSON.stringify writes the number i. It refuses |i| > MaxJSInt
// (2^53) with a *JSValueError (ErrNotJSValue), returning dst unchanged: satoshis and ids
// are JavaScript numbers in the toolbox, and such a value would have been rounded there.
func AppendJSInt(dst []byte, i int64) ([]byte, error) {
	if i > MaxJSInt || i < -MaxJSInt {
		return dst, &JSValueError{Kind: "number", Reason: "integer beyond 2^53 is not exact in JavaScript"}
	}
	return strconv.AppendInt(dst, i, 10), nil
}

// CompareKeysUTF16 orders a and b as JavaScript's default sort orders object keys: by UTF-16
// code units. It returns -1, 0 or +1. It differs from Go's byte order (code point order) only
// where one string has a character above U+FFFF and the other one in U+E000..U+FFFF at the
// same position: the surrogate pair (D800..DFFF) sorts before the latter. Keys should be
// valid UTF-8, as AppendJSString requires of every key written; an invalid byte sorts after
// every character, by its value, so that the result is a total order on all strings.
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
