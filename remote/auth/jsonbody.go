package auth

import (
	"fmt"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"walletsync/wallet"
)

// maxJSONDepth bounds the nesting CanonicalJSON accepts: deeper than any JSON-RPC body
// walletsync sends, and shallow enough that a hostile body cannot exhaust the stack.
const maxJSONDepth = 512

// CanonicalJSON returns the bytes JSON.stringify(JSON.parse(body)) gives in JavaScript, for a
// body Express's JSON parser accepts (an object or an array at the top). The TypeScript
// middleware signs those bytes, not the ones received, so a request body must be a fixed
// point of that round trip; CanonicalJSON's output always is one (CanonicalJSON(out) ==
// out). It writes compactly, escapes only '"', '\\' and controls below U+0020, leaves '<',
// '>', '&', U+2028 and U+2029 raw, writes numbers in JavaScript's shortest form, and orders
// object keys as JavaScript objects do: array-index keys ("0" .. "4294967294") first in
// numeric order, then the others in first-insertion order; a repeated key keeps its first
// place and its last value.
//
// It refuses, with a *BodyError (ErrBadBody), what is not JSON and what JavaScript would
// change silently: invalid UTF-8 (Node would substitute U+FFFD), a lone surrogate escape
// (no Go string holds one), a number that overflows to an infinity (written as null), an
// integer literal beyond 2^53 (rounded), a scalar at the top, nesting deeper than 512.
func CanonicalJSON(body []byte) ([]byte, error) {
	p := &jsonParser{s: body}
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '{' && p.s[p.i] != '[') {
		return nil, p.fail("the body must be a JSON object or array")
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.fail("data after the JSON value")
	}
	return v.append(make([]byte, 0, len(body)))
}

// BodyError says where and why CanonicalJSON refused a body.
type BodyError struct {
	Offset int
	Reason string
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("request body at byte %d: %s", e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadBody) true.
func (e *BodyError) Unwrap() error { return ErrBadBody }

// jsValue is a parsed JSON value: exactly one of its fields describes it.
type jsValue struct {
	lit  string    // "null", "true", "false", or a number's JavaScript form
	str  *string   // a string
	arr  []jsValue // an array's items
	keys []string  // an object's keys, in JavaScript's order
	vals []jsValue // the object's values
	kind byte      // 'l' literal, 's' string, 'a' array, 'o' object
}

func (v *jsValue) append(dst []byte) ([]byte, error) {
	var err error
	switch v.kind {
	case 'l':
		return append(dst, v.lit...), nil
	case 's':
		return wallet.AppendJSString(dst, *v.str)
	case 'a':
		dst = append(dst, '[')
		for i := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = v.arr[i].append(dst); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	dst = append(dst, '{')
	for i, k := range v.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = wallet.AppendJSString(dst, k); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = v.vals[i].append(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) fail(reason string) error { return &BodyError{Offset: p.i, Reason: reason} }

// space skips JSON whitespace (JSON.parse knows only these four).
func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (jsValue, error) {
	if depth > maxJSONDepth {
		return jsValue{}, p.fail("nested too deeply")
	}
	p.space()
	if p.i >= len(p.s) {
		return jsValue{}, p.fail("unexpected end of JSON")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return jsValue{kind: 's', str: &s}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range []string{"null", "true", "false"} {
		if len(p.s)-p.i >= len(lit) && string(p.s[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			return jsValue{kind: 'l', lit: lit}, nil
		}
	}
	return jsValue{}, p.fail("invalid JSON value")
}

func (p *jsonParser) array(depth int) (jsValue, error) {
	p.i++ // [
	v := jsValue{kind: 'a', arr: []jsValue{}}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		item, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.arr = append(v.arr, item)
		if more, err := p.separator(']'); !more {
			return v, err
		}
	}
}

// separator reads the ',' (more is true) or the closing byte (more and err are zero)
// after a member.
func (p *jsonParser) separator(closing byte) (more bool, err error) {
	p.space()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return true, nil
		case closing:
			p.i++
			return false, nil
		}
	}
	return false, p.fail("expected ',' or '" + string(closing) + "'")
}

func (p *jsonParser) object(depth int) (jsValue, error) {
	p.i++ // {
	v := jsValue{kind: 'o'}
	at := map[string]int{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return v, p.fail("expected a string key")
		}
		k, err := p.str()
		if err != nil {
			return v, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return v, p.fail("expected ':'")
		}
		p.i++
		val, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		if j, ok := at[k]; ok {
			v.vals[j] = val
		} else {
			at[k] = len(v.keys)
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, val)
		}
		if more, err := p.separator('}'); !more {
			orderKeys(&v)
			return v, err
		}
	}
}

// arrayIndex reports whether k is an array index as ECMAScript defines one (the canonical
// decimal form of an integer 0 .. 2^32-2), which objects enumerate first, in numeric order.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n <= 1<<32-2
}

// orderKeys moves an object's array-index keys first, in numeric order, keeping the order
// of the rest.
func orderKeys(v *jsValue) {
	type entry struct {
		k   string
		v   jsValue
		idx uint64
		isI bool
	}
	es := make([]entry, len(v.keys))
	hasIndex := false
	for i, k := range v.keys {
		n, ok := arrayIndex(k)
		es[i] = entry{k, v.vals[i], n, ok}
		hasIndex = hasIndex || ok
	}
	if !hasIndex {
		return
	}
	sort.SliceStable(es, func(a, b int) bool {
		if es[a].isI != es[b].isI {
			return es[a].isI
		}
		return es[a].isI && es[a].idx < es[b].idx
	})
	for i, e := range es {
		v.keys[i], v.vals[i] = e.k, e.v
	}
}

func (p *jsonParser) number() (jsValue, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	if n := digits(); n == 0 || (n > 1 && p.s[intStart] == '0') {
		return jsValue{}, p.fail("invalid number")
	}
	integer := true
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		integer = false
		if digits() == 0 {
			return jsValue{}, p.fail("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		integer = false
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return jsValue{}, p.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.s[start:p.i]), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange || f != 0 {
			p.i = start
			return jsValue{}, p.fail("number beyond the range of a JavaScript number")
		}
	}
	if integer {
		if n, err := strconv.ParseInt(string(p.s[start:p.i]), 10, 64); err != nil || n > wallet.MaxJSInt || n < -wallet.MaxJSInt {
			p.i = start
			return jsValue{}, p.fail("integer beyond 2^53 is not exact in JavaScript")
		}
	}
	out, err := wallet.AppendJSNumber(nil, f)
	if err != nil {
		return jsValue{}, p.fail(err.Error())
	}
	return jsValue{kind: 'l', lit: string(out)}, nil
}

// str parses a JSON string at p.i (on its opening quote).
func (p *jsonParser) str() (string, error) {
	p.i++ // "
	var out []byte
	for {
		if p.i >= len(p.s) {
			return "", p.fail("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.fail("unterminated escape")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					lo, ok2 := rune(0), false
					if r < 0xDC00 && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						if lo, ok2 = p.hex4(); !ok2 || lo < 0xDC00 || lo > 0xDFFF {
							p.i, ok2 = save, false
						}
					}
					if !ok2 {
						return "", p.fail("lone surrogate escape, which no UTF-8 string can hold")
					}
					r = utf16.DecodeRune(r, lo)
				}
				out = utf8.AppendRune(out, r)
			default:
				p.i -= 2
				return "", p.fail("invalid escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail("invalid UTF-8")
			}
			out = append(out, p.s[p.i:p.i+size]...)
			p.i += size
		}
	}
}

// hex4 reads four hex digits.
func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}
