package wallet

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The JavaScript JSON value primitives: strings, numbers and integers written byte for byte
// as JSON.stringify writes them in @bsv/wallet-toolbox. The BRC-40 codec (package brc40)
// and portable's BRC-38 documents both write their values with these. Each appends to dst
// and refuses a value JavaScript could not have written with a *JSValueError
// (ErrNotJSValue), returning dst unchanged.

// MaxJSInt is the largest integer magnitude AppendJSInt writes, and that travels in a BRC-40
// message or a BRC-38 document: 2^53. The toolbox holds ids and satoshis as JavaScript
// numbers; every integer up to 2^53 is exactly one and prints with all its digits, while
// above it JavaScript rounds (2^53 + 1 becomes 2^53) and prints rounded digits (2^60 prints
// as 1152921504606847000). So a value beyond it can neither be sent faithfully nor have been
// sent by the toolbox.
const MaxJSInt = 1 << 53

// AppendJSString appends s as JavaScript's JSON.stringify writes a string: in double quotes,
// escaping only '"', '\\' and the control characters below U+0020 (as \b \t \n \f \r, the
// rest as \u00xx in lowercase hex). U+007F, U+2028, U+2029, '<', '>', '&' and all other
// non-ASCII characters are written raw as UTF-8, unlike encoding/json. Every valid UTF-8
// string is accepted, and any JSON parser reads the result back as s.
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
// otherwise ("1e+21", "1.5e-7"), and "0" for both zeros; the result parses back to exactly
// f (both zeros to 0). NaN and the infinities, which
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
