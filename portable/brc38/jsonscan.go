package brc38

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"walletsync/wallet"
)

// scanError is a syntax or limit failure at a byte offset of a JSON text. The BRC-38 decoder
// turns it into a *DocumentError carrying the JSON path; the encoder into an *EncodeError
// about the stored column it was reading.
type scanError struct {
	Offset int64
	Reason string
	Limit  bool   // a size or depth limit was reached, not a syntax rule
	Trail  string // path of the fault inside the value parseValue or skipValue was reading
}

func (e *scanError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Reason) }

// scanner reads JSON text from a bufio.Reader by hand, because encoding/json cannot hold to
// the rules BRC-38 needs: it substitutes U+FFFD for invalid UTF-8 and lone surrogates where
// JavaScript keeps them, its Token API allocates per token, and it has no bound on the size
// of one string. The grammar is RFC 8259's, as JSON.parse accepts it (whitespace is space,
// tab, LF and CR; no byte-order mark; nothing after the value). Strings must decode to valid
// UTF-8 without lone surrogates (a Go string cannot carry one), at most maxString bytes;
// containers nest at most maxDepth deep.
//
// Memory: the reader's buffer, one string or number (str) and one object key (key).
type scanner struct {
	r         *bufio.Reader
	off       int64 // offset of the next unread byte
	maxString int
	maxDepth  int
	str       []byte // the last string or number read; valid until the next read
	key       []byte // the last object key read; valid until its value is read
	// trail is the path inside the value parseValue or skipValue is reading, so that an
	// error deep in a JSON column or an unknown key names where. Callers reset it before
	// each value; a failure leaves it at the fault.
	trail []pathSeg
}

// pathSeg is one step of a JSON path: an object key, or an array index.
type pathSeg struct {
	key   string
	index int // >= 0 for an array element, -1 for a key
}

// formatPath writes segments as "a.b[3].c"; with relative, keys always take a leading dot.
func formatPath(segs []pathSeg, relative bool) string {
	var b strings.Builder
	for _, s := range segs {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if relative || b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func (s *scanner) fail(off int64, format string, args ...any) error {
	return &scanError{Offset: off, Reason: fmt.Sprintf(format, args...), Trail: formatPath(s.trail, true)}
}

func (s *scanner) limit(off int64, format string, args ...any) error {
	return &scanError{Offset: off, Reason: fmt.Sprintf(format, args...), Limit: true, Trail: formatPath(s.trail, true)}
}

func (s *scanner) pushKey(k string) { s.trail = append(s.trail, pathSeg{key: k, index: -1}) }
func (s *scanner) pushIndex(i int)  { s.trail = append(s.trail, pathSeg{index: i}) }
func (s *scanner) popTrail()        { s.trail = s.trail[:len(s.trail)-1] }

// readByte consumes one byte; the end of the input is a syntax error (the text is
// truncated), any other read error passes through unchanged.
func (s *scanner) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, s.fail(s.off, "unexpected end of JSON text (truncated)")
		}
		return 0, err
	}
	s.off++
	return c, nil
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		_ = s.r.UnreadByte() // right after a ReadByte: it cannot fail
		s.off--
		return c, nil
	}
}

// expect consumes the next non-whitespace byte, which must be c.
func (s *scanner) expect(c byte, what string) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.fail(s.off, "expected %s, found %s", what, describeByte(got))
	}
	s.skip(1)
	return nil
}

// skip consumes n bytes that peek or Peek has just buffered, which Discard cannot fail on.
func (s *scanner) skip(n int) {
	_, _ = s.r.Discard(n)
	s.off += int64(n)
}

func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// end checks that only whitespace follows the value, as JSON.parse requires.
func (s *scanner) end() error {
	for {
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return s.fail(s.off, "unexpected %s after the end of the JSON value", describeByte(c))
		}
		s.off++
	}
}

// stringStop marks the bytes that end a run of plain string content.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// readString reads one string value into dst[:0] and returns it decoded (escapes resolved,
// valid UTF-8). It scans the reader's buffer in place, so a long base64 value costs one copy.
func (s *scanner) readString(dst []byte) ([]byte, error) {
	if err := s.expect('"', "a string"); err != nil {
		return dst, err
	}
	start := s.off - 1
	dst = dst[:0]
	for {
		n := s.r.Buffered()
		if n == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) {
					return dst, s.fail(s.off, "unexpected end of JSON text inside a string (truncated)")
				}
				return dst, err
			}
			n = s.r.Buffered()
		}
		chunk, _ := s.r.Peek(n)
		i := 0
		for i < len(chunk) && !stringStop[chunk[i]] {
			i++
		}
		if len(dst)+i > s.maxString {
			return dst, s.limit(start, "string longer than %d bytes", s.maxString)
		}
		dst = append(dst, chunk[:i]...)
		if i == len(chunk) {
			s.skip(i)
			continue
		}
		c := chunk[i]
		s.skip(i + 1)
		switch c {
		case '"':
			if !utf8.Valid(dst) {
				return dst, s.fail(start, "string is not valid UTF-8")
			}
			return dst, nil
		case '\\':
			var err error
			if dst, err = s.escape(dst); err != nil {
				return dst, err
			}
			if len(dst) > s.maxString {
				return dst, s.limit(start, "string longer than %d bytes", s.maxString)
			}
		default:
			return dst, s.fail(s.off-1, "unescaped control character 0x%02x in a string", c)
		}
	}
}

// escape decodes the escape sequence after a backslash and appends it to dst.
func (s *scanner) escape(dst []byte) ([]byte, error) {
	at := s.off - 1
	c, err := s.readByte()
	if err != nil {
		return dst, err
	}
	switch c {
	case '"', '\\', '/':
		return append(dst, c), nil
	case 'b':
		return append(dst, '\b'), nil
	case 'f':
		return append(dst, '\f'), nil
	case 'n':
		return append(dst, '\n'), nil
	case 'r':
		return append(dst, '\r'), nil
	case 't':
		return append(dst, '\t'), nil
	case 'u':
		r, err := s.hex4()
		if err != nil {
			return dst, err
		}
		if utf16.IsSurrogate(r) {
			// A surrogate must be the high half of a pair whose low half follows at once.
			lone := s.fail(at, "lone UTF-16 surrogate \\u%04x: JavaScript keeps it, but it has no UTF-8 form", r)
			if r >= 0xDC00 {
				return dst, lone
			}
			if b, _ := s.r.Peek(2); len(b) < 2 || b[0] != '\\' || b[1] != 'u' {
				return dst, lone
			}
			s.skip(2)
			low, err := s.hex4()
			if err != nil {
				return dst, err
			}
			if low < 0xDC00 || low > 0xDFFF {
				return dst, lone
			}
			r = utf16.DecodeRune(r, low)
		}
		return utf8.AppendRune(dst, r), nil
	}
	return dst, s.fail(at, "invalid escape \\%s in a string", string(rune(c)))
}

func (s *scanner) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, s.fail(s.off-1, "invalid hex digit %s in a \\u escape", describeByte(c))
		}
	}
	return r, nil
}

// maxNumberLen bounds a number literal. JavaScript reads longer ones, but no value in a
// wallet needs more than 24 characters, and 400 is enough for any double written out.
const maxNumberLen = 400

// readNumber reads one number literal into s.str and checks its grammar.
func (s *scanner) readNumber() ([]byte, error) {
	start := s.off
	s.str = s.str[:0]
	for {
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			_ = s.r.UnreadByte() // right after a ReadByte: it cannot fail
			break
		}
		s.off++
		if len(s.str) == maxNumberLen {
			return nil, s.limit(start, "number longer than %d characters", maxNumberLen)
		}
		s.str = append(s.str, c)
	}
	if !validNumber(s.str) {
		return nil, s.fail(start, "invalid number %q", s.str)
	}
	return s.str, nil
}

// validNumber checks RFC 8259's number grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// isPlainInt reports whether a valid number literal has neither a fraction nor an exponent.
func isPlainInt(b []byte) bool {
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// readLiteral reads true, false or null.
func (s *scanner) readLiteral() (value, isNull bool, err error) {
	start := s.off
	c, err := s.readByte()
	if err != nil {
		return false, false, err
	}
	var want string
	switch c {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	case 'n':
		want = "null"
	default:
		return false, false, s.fail(start, "unexpected %s", describeByte(c))
	}
	for i := 1; i < len(want); i++ {
		c, err := s.readByte()
		if err != nil {
			return false, false, err
		}
		if c != want[i] {
			return false, false, s.fail(start, "invalid literal (expected %s)", want)
		}
	}
	return want == "true", want == "null", nil
}

// object reads an object, calling member once per key with the decoded key (valid only until
// member reads the value) and leaving member to read exactly one value.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{', "an object"); err != nil {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == '}' {
		s.skip(1)
		return nil
	}
	for {
		if s.key, err = s.readString(s.key); err != nil {
			return err
		}
		if err := s.expect(':', "':' after an object key"); err != nil {
			return err
		}
		if err := member(s.key); err != nil {
			return err
		}
		if end, err := s.next('}', "an object"); end || err != nil {
			return err
		}
	}
}

// array reads an array, calling elem once per element with its index; elem reads exactly
// one value.
func (s *scanner) array(elem func(i int) error) error {
	if err := s.expect('[', "an array"); err != nil {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == ']' {
		s.skip(1)
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		if end, err := s.next(']', "an array"); end || err != nil {
			return err
		}
	}
}

// next reads what follows a member of an object or an element of an array: ',' (more to
// come) or closing, which ends it (end is true); anything else is an error naming where.
func (s *scanner) next(closing byte, in string) (end bool, err error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	s.skip(1)
	switch c {
	case closing:
		return true, nil
	case ',':
		return false, nil
	}
	return false, s.fail(s.off-1, "expected ',' or '%c' in %s, found %s", closing, in, describeByte(c))
}

// nullReason is what a null anywhere in a BRC-38 document or a JSON column is refused with:
// the toolbox rejects both ("must omit null values", "Cannot canonicalize null").
const nullReason = "null is not allowed; absent values are omitted"

// skipValue reads and discards one value at nesting depth, still refusing nulls and enforcing
// the limits: unknown keys are tolerated, but not unbounded or null ones.
func (s *scanner) skipValue(depth int) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '{' || c == '[':
		if depth > s.maxDepth {
			return s.limit(s.off, "nesting deeper than %d", s.maxDepth)
		}
		if c == '[' {
			return s.array(func(i int) error {
				s.pushIndex(i)
				if err := s.skipValue(depth + 1); err != nil {
					return err
				}
				s.popTrail()
				return nil
			})
		}
		return s.object(func(key []byte) error {
			s.pushKey(string(key))
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			s.popTrail()
			return nil
		})
	case c == '"':
		s.str, err = s.readString(s.str)
		return err
	case c == '-' || c >= '0' && c <= '9':
		_, err = s.readNumber()
		return err
	}
	start := s.off
	_, isNull, err := s.readLiteral()
	if err == nil && isNull {
		return s.fail(start, nullReason)
	}
	return err
}

// jsKind is the type of a jsValue. There is no null: both uses refuse it.
type jsKind uint8

const (
	valBool jsKind = iota + 1
	valNumber
	valString
	valArray
	valObject
)

// jsValue is a parsed JSON value as JavaScript's JSON.parse holds it: numbers are doubles, an
// object keeps its members in insertion order and a repeated key keeps its first position
// with its last value. It holds the JSON-text columns (history, notify, syncMap, errorLocal,
// errorOther), which are small, never a whole document.
type jsValue struct {
	kind jsKind
	b    bool
	num  float64
	str  string
	arr  []jsValue
	obj  []jsMember
}

type jsMember struct {
	key string
	val jsValue
}

// parseValue reads one value at nesting depth into a tree.
func (s *scanner) parseValue(depth int) (jsValue, error) {
	c, err := s.peek()
	if err != nil {
		return jsValue{}, err
	}
	switch {
	case c == '{' || c == '[':
		if depth > s.maxDepth {
			return jsValue{}, s.limit(s.off, "nesting deeper than %d", s.maxDepth)
		}
		if c == '[' {
			v := jsValue{kind: valArray, arr: []jsValue{}}
			err := s.array(func(i int) error {
				s.pushIndex(i)
				e, err := s.parseValue(depth + 1)
				if err != nil {
					return err
				}
				s.popTrail()
				v.arr = append(v.arr, e)
				return nil
			})
			return v, err
		}
		v := jsValue{kind: valObject, obj: []jsMember{}}
		var index map[string]int // built once an object is large enough for scans to cost
		err := s.object(func(key []byte) error {
			k := string(key)
			s.pushKey(k)
			e, err := s.parseValue(depth + 1)
			if err != nil {
				return err
			}
			s.popTrail()
			i := -1
			if index != nil {
				if j, ok := index[k]; ok {
					i = j
				}
			} else {
				i = slices.IndexFunc(v.obj, func(m jsMember) bool { return m.key == k })
			}
			if i >= 0 {
				v.obj[i].val = e // JSON.parse: the last value wins, the first position stays
				return nil
			}
			v.obj = append(v.obj, jsMember{key: k, val: e})
			if index != nil {
				index[k] = len(v.obj) - 1
			} else if len(v.obj) == 16 {
				index = make(map[string]int, 32)
				for j, m := range v.obj {
					index[m.key] = j
				}
			}
			return nil
		})
		return v, err
	case c == '"':
		s.str, err = s.readString(s.str)
		return jsValue{kind: valString, str: string(s.str)}, err
	case c == '-' || c >= '0' && c <= '9':
		start := s.off
		lit, err := s.readNumber()
		if err != nil {
			return jsValue{}, err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil || math.IsInf(f, 0) {
			// JavaScript reads it as an infinity, which has no JSON form.
			return jsValue{}, s.fail(start, "number %s is out of the range of a double", lit)
		}
		return jsValue{kind: valNumber, num: f}, nil
	}
	start := s.off
	b, isNull, err := s.readLiteral()
	if err != nil {
		return jsValue{}, err
	}
	if isNull {
		return jsValue{}, s.fail(start, nullReason)
	}
	return jsValue{kind: valBool, b: b}, nil
}

// appendJSValue appends v as JSON.stringify writes it, with the members of every object in
// canonical order (sorted by UTF-16 code units, the toolbox's canonicalize) or, when
// canonical is false, in JavaScript's property order: array-index keys ascending, then the
// others in insertion order (what JSON.stringify(JSON.parse(text)) writes).
func appendJSValue(dst []byte, v *jsValue, canonical bool) ([]byte, error) {
	var err error
	switch v.kind {
	case valBool:
		return strconv.AppendBool(dst, v.b), nil
	case valNumber:
		return wallet.AppendJSNumber(dst, v.num)
	case valString:
		return wallet.AppendJSString(dst, v.str)
	case valArray:
		dst = append(dst, '[')
		for i := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSValue(dst, &v.arr[i], canonical); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	if canonical {
		slices.SortFunc(v.obj, func(a, b jsMember) int { return CompareKeysUTF16(a.key, b.key) })
	} else {
		slices.SortStableFunc(v.obj, compareJSPropertyOrder)
	}
	dst = append(dst, '{')
	for i := range v.obj {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = wallet.AppendJSString(dst, v.obj[i].key); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = appendJSValue(dst, &v.obj[i].val, canonical); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// compareJSPropertyOrder orders members as JavaScript orders an object's own string keys:
// array indices first, ascending by value; the others keep their order (the sort is stable).
func compareJSPropertyOrder(a, b jsMember) int {
	ia, aok := arrayIndex(a.key)
	ib, bok := arrayIndex(b.key)
	switch {
	case aok && bok:
		return cmpUint(ia, ib)
	case aok:
		return -1
	case bok:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// arrayIndex reports whether k is an ECMAScript array index: the canonical decimal form of
// an integer from 0 to 2^32-2.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
		n = n*10 + uint64(k[i]-'0')
	}
	return n, n < 1<<32-1
}
