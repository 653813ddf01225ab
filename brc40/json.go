package brc40

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"walletsync/wallet"
)

// The JSON of BRC-40 messages: rows written byte for byte as the toolbox's JSON.stringify
// writes them (which also gives getSyncChunk's size unit), and the strict reader that every
// UnmarshalJSON of the BRC-40 types uses.

// AppendRowJSON appends r, a row of t, as the toolbox's JSON.stringify writes the row
// getSyncChunk returns: keys are the column names in DDL order (the order SQLite returns
// them to the toolbox), null columns are left out, times are ISO strings, binary columns
// number[], booleans true/false except proven_tx_reqs.wasBroadcast, which the toolbox does
// not coerce and so sends as 0/1, and strings escaped as JSON.stringify escapes them.
//
// It refuses what the toolbox could not hold or send: a value of the wrong Go type for its
// column, a NULL in a NOT NULL column, an integer beyond MaxJSInt, a string that is not
// valid UTF-8. The error wraps ErrInvalidArgument and names the column; for the last two it
// also wraps the *JSValueError (ErrNotJSValue) of AppendJSInt or AppendJSString.
func AppendRowJSON(dst []byte, t *wallet.Table, r wallet.Row) ([]byte, error) {
	if len(r) != len(t.Columns) {
		return dst, fmt.Errorf("encode %s row: %d values for %d columns: %w", t.Name, len(r), len(t.Columns), wallet.ErrInvalidArgument)
	}
	dst = append(dst, '{')
	first := true
	for i, c := range t.Columns {
		v := r[i]
		if v == nil {
			if !c.Nullable {
				return dst, fmt.Errorf("encode %s.%s: null in a NOT NULL column: %w", t.Name, c.Name, wallet.ErrInvalidArgument)
			}
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, c.Name...) // column names are plain ASCII identifiers
		dst = append(dst, '"', ':')
		var err error
		if dst, err = appendValue(dst, t, c, v); err != nil {
			return dst, fmt.Errorf("encode %s.%s: %w", t.Name, c.Name, err)
		}
	}
	return append(dst, '}'), nil
}

func appendValue(dst []byte, t *wallet.Table, c wallet.Column, v any) ([]byte, error) {
	switch c.Kind {
	case wallet.KindInt:
		if x, ok := v.(int64); ok {
			out, err := wallet.AppendJSInt(dst, x)
			if err != nil {
				return dst, fmt.Errorf("%d: %w", x, invalidJSValue(err))
			}
			return out, nil
		}
	case wallet.KindBool:
		if x, ok := v.(bool); ok {
			if boolTravelsAsNumber(t, c) {
				if x {
					return append(dst, '1'), nil
				}
				return append(dst, '0'), nil
			}
			return strconv.AppendBool(dst, x), nil
		}
	case wallet.KindTime:
		if x, ok := v.(time.Time); ok {
			return appendJSTime(dst, x), nil
		}
	case wallet.KindText, wallet.KindJSON:
		if x, ok := v.(string); ok {
			// Text that is not valid UTF-8 has no JavaScript form (better-sqlite3 would hand
			// the toolbox U+FFFD in its place): it is refused rather than silently altered.
			out, err := wallet.AppendJSString(dst, x)
			return out, invalidJSValue(err)
		}
	case wallet.KindBlob:
		if x, ok := v.([]byte); ok {
			dst = append(dst, '[')
			for i, b := range x {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendUint(dst, uint64(b), 10)
			}
			return append(dst, ']'), nil
		}
	}
	return dst, fmt.Errorf("value of type %T for a %s column: %w", v, c.Kind, wallet.ErrInvalidArgument)
}

// invalidJSValue classifies a refusal of the JavaScript JSON primitives as the codec's: the
// caller passed a value no BRC-40 message can carry. It keeps the *JSValueError, and nil
// stays nil.
func invalidJSValue(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", err, wallet.ErrInvalidArgument)
}

// boolTravelsAsNumber: the toolbox's getProvenTxReqsForUser coerces only `notified` to a
// boolean, so proven_tx_reqs.wasBroadcast leaves a producer as the stored 0/1.
func boolTravelsAsNumber(t *wallet.Table, c wallet.Column) bool {
	return t == wallet.ProvenTxReqs && c.Name == "wasBroadcast"
}

// RowJSONSize returns JSON.stringify(row).length for r as the toolbox's getSyncChunk sees
// the row: the length, in UTF-16 code units, of AppendRowJSON's text. It is the unit of
// RequestSyncChunkArgs.MaxRoughSize.
func RowJSONSize(t *wallet.Table, r wallet.Row) (int64, error) {
	b, err := AppendRowJSON(nil, t, r)
	if err != nil {
		return 0, err
	}
	return utf16Len(b), nil
}

// utf16Len counts the UTF-16 code units of valid UTF-8 text: one per character, two for a
// character above U+FFFF (a four-byte sequence).
func utf16Len(b []byte) int64 {
	var n int64
	for _, c := range b {
		switch {
		case c < 0x80:
			n++
		case c >= 0xF0:
			n += 2
		case c >= 0xC0:
			n++
		}
	}
	return n
}

// appendJSTime writes t as Date.prototype.toJSON does.
func appendJSTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, wallet.TimeLayout)
	return append(dst, '"')
}

// syncReader reads one BRC-40 message strictly, value by value, so that every refusal can
// name its path. It reads from a byte slice already bounded by MaxFrameBytes.
type syncReader struct {
	dec *json.Decoder
}

func newSyncReader(data []byte) (*syncReader, error) {
	if len(data) > wallet.MaxFrameBytes {
		return nil, badMessage("$", "%d bytes, more than the %d-byte frame ceiling", len(data), wallet.MaxFrameBytes)
	}
	// encoding/json would read invalid UTF-8 and lone surrogates as U+FFFD: a message
	// holding either is refused, never stored altered.
	if err := wallet.CheckJSONText(data); err != nil {
		return nil, badMessage("$", "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &syncReader{dec: dec}, nil
}

func (r *syncReader) token(path string) (json.Token, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, badMessage(path, "invalid JSON: %v", err)
	}
	return tok, nil
}

// end refuses anything after the message.
func (r *syncReader) end() error {
	if _, err := r.dec.Token(); err != io.EOF {
		return badMessage("$", "data after the message")
	}
	return nil
}

// object reads an object and calls field once per key, which must read the key's value.
// A key given twice is refused: JSON.parse would silently keep the last one.
func (r *syncReader) object(path string, field func(key, path string) error) error {
	tok, err := r.token(path)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return badMessage(path, "want an object, found %s", describe(tok))
	}
	seen := map[string]bool{}
	for r.dec.More() {
		tok, err := r.token(path)
		if err != nil {
			return err
		}
		key := tok.(string) // inside an object the decoder yields only string keys here
		child := path + "." + key
		if path == "$" {
			child = key
		}
		if seen[key] {
			return badMessage(child, "key given twice")
		}
		seen[key] = true
		if err := field(key, child); err != nil {
			return err
		}
	}
	_, err = r.token(path) // the closing '}'
	return err
}

// array reads an array and calls elem once per element, which must read it. It reports
// whether the value was an array: with nullable, null stands for an absent array; otherwise
// null is refused.
func (r *syncReader) array(path string, nullable bool, elem func(path string) error) (bool, error) {
	tok, err := r.token(path)
	if err != nil {
		return false, err
	}
	if tok == nil && nullable {
		return false, nil
	}
	if tok != json.Delim('[') {
		return false, badMessage(path, "want an array, found %s", describe(tok))
	}
	for i := 0; r.dec.More(); i++ {
		if err := elem(fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return false, err
		}
	}
	_, err = r.token(path) // the closing ']'
	return err == nil, err
}

func (r *syncReader) str(path string) (string, error) {
	tok, err := r.token(path)
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", badMessage(path, "want a string, found %s", describe(tok))
	}
	return s, nil
}

func (r *syncReader) boolean(path string) (bool, error) {
	tok, err := r.token(path)
	if err != nil {
		return false, err
	}
	b, ok := tok.(bool)
	if !ok {
		return false, badMessage(path, "want true or false, found %s", describe(tok))
	}
	return b, nil
}

func (r *syncReader) integer(path string) (int64, error) {
	tok, err := r.token(path)
	if err != nil {
		return 0, err
	}
	return jsInteger(path, tok)
}

// jsInteger accepts a JSON number written as an integer within ±MaxJSInt.
func jsInteger(path string, tok json.Token) (int64, error) {
	n, ok := tok.(json.Number)
	if !ok {
		return 0, badMessage(path, "want an integer, found %s", describe(tok))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i > wallet.MaxJSInt || i < -wallet.MaxJSInt {
		return 0, badMessage(path, "%s is not an integer within ±2^53", n)
	}
	return i, nil
}

// optTime reads an ISO time or null (nil).
func (r *syncReader) optTime(path string) (*time.Time, error) {
	tok, err := r.token(path)
	if err != nil || tok == nil {
		return nil, err
	}
	s, ok := tok.(string)
	if !ok {
		return nil, badMessage(path, "want an ISO time string, found %s", describe(tok))
	}
	t, err := wallet.ParseTime(s)
	if err != nil {
		return nil, badMessage(path, "not an ISO time: %q", s)
	}
	return &t, nil
}

// row reads one row of t (see SyncChunk.UnmarshalJSON). With nullable, null gives a nil Row.
func (r *syncReader) row(path string, t *wallet.Table, nullable bool) (wallet.Row, error) {
	if nullable {
		// Peek without consuming: a row is an object, so anything else is read as a token.
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return nil, badMessage(path, "invalid JSON: %v", err)
		}
		if string(raw) == "null" {
			return nil, nil
		}
		sub, _ := newSyncReader(raw)
		row, err := sub.row(path, t, false)
		if err == nil {
			err = sub.end()
		}
		return row, err
	}
	row := make(wallet.Row, len(t.Columns))
	seen := make([]bool, len(t.Columns))
	err := r.object(path, func(key, path string) error {
		if !t.HasCol(key) {
			return badMessage(path, "not a column of %s", t.Name)
		}
		i := t.Col(key)
		v, err := r.value(path, t, t.Columns[i])
		row[i], seen[i] = v, true
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, c := range t.Columns {
		if seen[i] || c.Nullable {
			continue
		}
		if v, ok := toolbox1xDefault(t, c); ok {
			row[i] = v
			continue
		}
		return nil, badMessage(path+"."+c.Name, "missing (a NOT NULL column)")
	}
	return row, nil
}

// toolbox1xDefault is the column default of the two proven_tx_reqs columns a toolbox 1.x
// store lacks, so that its chunks are accepted as a 2.x toolbox accepts them.
func toolbox1xDefault(t *wallet.Table, c wallet.Column) (any, bool) {
	if t != wallet.ProvenTxReqs {
		return nil, false
	}
	switch c.Name {
	case "wasBroadcast":
		return false, true
	case "rebroadcastAttempts":
		return int64(0), true
	}
	return nil, false
}

// value reads one column value into the Go type of its kind.
func (r *syncReader) value(path string, t *wallet.Table, c wallet.Column) (any, error) {
	if c.Kind == wallet.KindBlob {
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return nil, badMessage(path, "invalid JSON: %v", err)
		}
		if string(raw) == "null" {
			return nullValue(path, c)
		}
		b, ok := parseByteArray(raw)
		if !ok {
			return nil, badMessage(path, "a binary column travels as number[] (byte values 0..255), found %.40s", raw)
		}
		return b, nil
	}
	tok, err := r.token(path)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nullValue(path, c)
	}
	switch c.Kind {
	case wallet.KindInt:
		return jsInteger(path, tok)
	case wallet.KindBool:
		switch x := tok.(type) {
		case bool:
			return x, nil
		case json.Number:
			// The toolbox stores 0/1 and sends it uncoerced for wasBroadcast; any boolean
			// column may arrive that way from a peer that passes stored values through.
			if x == "0" || x == "1" {
				return x == "1", nil
			}
		}
		return nil, badMessage(path, "want true, false, 0 or 1, found %s", describe(tok))
	case wallet.KindTime:
		s, ok := tok.(string)
		if !ok {
			return nil, badMessage(path, "want an ISO time string, found %s", describe(tok))
		}
		ts, err := wallet.ParseTime(s)
		if err != nil {
			return nil, badMessage(path, "not an ISO time: %q", s)
		}
		return ts, nil
	case wallet.KindText, wallet.KindJSON:
		s, ok := tok.(string)
		if !ok {
			return nil, badMessage(path, "want a string, found %s", describe(tok))
		}
		if c.Kind == wallet.KindJSON && !json.Valid([]byte(s)) {
			return nil, badMessage(path, "the text of a JSON column is not JSON")
		}
		return s, nil
	}
	return nil, badMessage(path, "column kind %s", c.Kind)
}

func nullValue(path string, c wallet.Column) (any, error) {
	if !c.Nullable {
		return nil, badMessage(path, "null in a NOT NULL column")
	}
	return nil, nil
}

// parseByteArray reads a JSON array of integers 0..255 (plain digits, no sign, fraction or
// exponent). It is the hot path of a chunk: a 32 KiB raw transaction is 32768 numbers.
func parseByteArray(raw []byte) ([]byte, bool) {
	i := 0
	skip := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	skip()
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	i++
	out := make([]byte, 0, len(raw)/3)
	skip()
	if i < len(raw) && raw[i] == ']' {
		i++
		skip()
		return out, i == len(raw)
	}
	for {
		skip()
		start, v := i, 0
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			v = v*10 + int(raw[i]-'0')
			i++
			if v > 255 {
				return nil, false
			}
		}
		if i == start || (i-start > 1 && raw[start] == '0') {
			return nil, false
		}
		out = append(out, byte(v))
		skip()
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == ']' {
			i++
			skip()
			return out, i == len(raw)
		}
		if raw[i] != ',' {
			return nil, false
		}
		i++
	}
}

func describe(tok json.Token) string {
	switch x := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		if x == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(x)
	}
	return fmt.Sprintf("%T", tok)
}

// appendStringFields appends "key":"value" pairs (given as key, value, key, value...), each
// after a comma unless it opens the object.
func appendStringFields(b []byte, kv ...string) ([]byte, error) {
	for i := 0; i+1 < len(kv); i += 2 {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, kv[i]...)
		b = append(b, '"', ':')
		var err error
		if b, err = wallet.AppendJSString(b, kv[i+1]); err != nil {
			return nil, fmt.Errorf("encode %s: %w", kv[i], invalidJSValue(err))
		}
	}
	return b, nil
}
