package wallet

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Row is one record of a Table, its values in the table's column order. A value is nil
// (SQL NULL) or the Go type of its column's Kind: int64, string, bool, time.Time (UTC,
// millisecond precision), []byte (never nil: an empty binary value is an empty slice), or
// string for KindJSON. Binary values stay []byte from
// the database to every wire format; Normalize brings raw driver values into this form.
type Row []any

// TimeLayout is the one form the toolbox writes times in: ISO-8601, UTC, three millisecond
// digits, Z. BRC-40's "since" filters compare these strings, so every time walletsync
// writes uses it.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime returns t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a stored or wire time. It accepts TimeLayout, any RFC 3339 form, and
// SQLite's default "YYYY-MM-DD HH:MM:SS" (UTC) that column defaults leave behind, and
// returns UTC truncated to milliseconds, the precision JavaScript dates carry.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{TimeLayout, time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Millisecond), nil
		}
	}
	return time.Time{}, fmt.Errorf("parse time %q: %w", s, ErrInvalidArgument)
}

// Now returns the current time in the precision stored times have.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// Normalize converts the raw values a database driver returned for a row of t into the
// types Row documents, in place. It refuses a value that cannot be read as its column's
// kind, naming the column, and a NULL in a NOT NULL column.
func (t *Table) Normalize(r Row) error {
	if len(r) != len(t.Columns) {
		return fmt.Errorf("normalize %s row: %d values for %d columns: %w", t.Name, len(r), len(t.Columns), ErrInvalidArgument)
	}
	for i, c := range t.Columns {
		v, err := NormalizeValue(c, r[i])
		if err != nil {
			return fmt.Errorf("normalize %s.%s: %w", t.Name, c.Name, err)
		}
		r[i] = v
	}
	return nil
}

// NormalizeValue converts one raw driver value into the Go type of c's kind (see Row).
func NormalizeValue(c Column, v any) (any, error) {
	if v == nil {
		if !c.Nullable {
			return nil, fmt.Errorf("null in a NOT NULL column: %w", ErrInvalidArgument)
		}
		return nil, nil
	}
	switch c.Kind {
	case KindInt:
		switch x := v.(type) {
		case int64:
			return x, nil
		case int:
			return int64(x), nil
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case KindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case int:
			return x != 0, nil
		case float64:
			return x != 0, nil
		case string: // a Knex default such as '0' stored in a text-affinity column
			if x == "0" || x == "1" {
				return x == "1", nil
			}
		}
	case KindTime:
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Truncate(time.Millisecond), nil
		case string:
			return ParseTime(x)
		}
	case KindText, KindJSON:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case KindBlob:
		switch x := v.(type) {
		case []byte:
			if x == nil {
				// The driver scans an empty BLOB as a nil slice, and binds a nil slice as
				// NULL: an empty value (a zero-length locking script) must stay a value.
				return []byte{}, nil
			}
			return x, nil
		case string:
			return []byte(x), nil
		}
	}
	return nil, fmt.Errorf("value of type %T for a %s column: %w", v, c.Kind, ErrInvalidArgument)
}

// SQLValue returns v in the form walletsync binds it to SQLite: times as TimeLayout
// strings (never the driver's own time format), booleans as 0/1, and a nil []byte as an
// empty BLOB, never NULL.
func SQLValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if x == nil {
			return []byte{} // a Row's NULL is an untyped nil; a nil slice would bind as NULL
		}
	case time.Time:
		return FormatTime(x)
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// CellCharge is the byte charge of one cell whose stored length is n bytes.
func CellCharge(n int64) int64 { return 2*n + 64 }

// Charge returns the rough byte charge of a row, the unit every page budget counts in:
// 2 x each cell's stored length + 64 bytes per cell. localstore computes the same sum in
// SQL from lengths alone, before it loads a payload.
func (t *Table) Charge(r Row) int64 {
	var sum int64
	for _, v := range r {
		sum += CellCharge(storedLen(v))
	}
	return sum
}

// storedLen is SQLite's octet_length of the value as walletsync stores it.
func storedLen(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case bool:
		return 1
	case int64:
		return int64(len(fmt.Sprint(x)))
	case time.Time:
		return int64(len(TimeLayout))
	}
	return int64(len(fmt.Sprint(v)))
}

// KeyOf returns the values of the row's paging key.
func (t *Table) KeyOf(r Row) []any {
	k := make([]any, len(t.Key))
	for i, c := range t.Key {
		k[i] = r[t.Col(c)]
	}
	return k
}

func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindText:
		return "text"
	case KindBool:
		return "boolean"
	case KindTime:
		return "time"
	case KindBlob:
		return "blob"
	case KindJSON:
		return "json"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ShortKey returns the first n characters of a hex identity, for display.
func ShortKey(key string, n int) string {
	key = strings.TrimSpace(key)
	if len(key) <= n {
		return key
	}
	return key[:n]
}

// SameValue reports whether a and b, two values of one column as a Row holds them, are the
// same value: bytes for bytes, times to the instant, the rest (texts, JSON texts included,
// integers, booleans) by ==. NULL equals only NULL, and an empty binary value is not NULL.
func SameValue(a, b any) bool {
	switch a := a.(type) {
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	default:
		return a == b
	}
}

// SameRow reports whether two rows of t hold the same value (SameValue) in every column but
// those named in skip.
func (t *Table) SameRow(a, b Row, skip ...string) bool {
	for i, c := range t.Columns {
		if !slices.Contains(skip, c.Name) && !SameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}
