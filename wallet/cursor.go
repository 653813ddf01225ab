package wallet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// The page rules every snapshot view follows, whatever its database: how a cursor binds a
// view and a table, how Resume carries a position to another view, which prefix of a
// table's rows fits one page. Each store supplies only its queries (localstore on SQLite,
// pgstore on PostgreSQL), so their pages cannot drift apart.

// cursorBody is what a Cursor holds: the view and table that issued it and the key of the
// last row read (none: the start of the table). It is opaque to callers.
type cursorBody struct {
	View  string `json:"v"`
	Table string `json:"t"`
	Key   []any  `json:"k,omitempty"`
}

// EncodeCursor returns view's cursor for the position after the row of t whose paging key
// is key (nil: the start of t).
func EncodeCursor(view string, t *Table, key []any) Cursor {
	b, _ := json.Marshal(cursorBody{View: view, Table: string(t.Name), Key: key})
	return Cursor(base64.RawURLEncoding.EncodeToString(b))
}

// ParseCursor returns the key of c, a cursor of table t and, unless view is empty, of that
// view: nil for the start of the table (and for the empty Cursor). Anything else,
// including bytes that no EncodeCursor made, is refused with ErrCursorMismatch. Key values
// come back as int64 or string, the only types a paging key holds.
func ParseCursor(c Cursor, t *Table, view string) ([]any, error) {
	if c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil {
		return nil, fmt.Errorf("decode cursor: %w", ErrCursorMismatch)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var cur cursorBody
	if err := dec.Decode(&cur); err != nil {
		return nil, fmt.Errorf("decode cursor: %w", ErrCursorMismatch)
	}
	if view != "" && cur.View != view || cur.Table != string(t.Name) {
		return nil, ErrCursorMismatch
	}
	if cur.Key == nil {
		return nil, nil
	}
	if len(cur.Key) != len(t.Key) {
		return nil, fmt.Errorf("cursor key has %d values for %d key columns: %w", len(cur.Key), len(t.Key), ErrCursorMismatch)
	}
	// Key columns hold integers and text; anything else (a float, a bool, an object) cannot
	// come from EncodeCursor, and would reach SQL as an argument a driver refuses untyped.
	for i, k := range cur.Key {
		switch x := k.(type) {
		case string:
		case json.Number:
			n, err := x.Int64()
			if err != nil {
				return nil, fmt.Errorf("decode cursor: key %q: %w", x, ErrCursorMismatch)
			}
			cur.Key[i] = n
		default:
			return nil, fmt.Errorf("decode cursor: key value of type %T: %w", k, ErrCursorMismatch)
		}
	}
	return cur.Key, nil
}

// ResumeCursor is View.Resume for the view named view: its cursor for the key of c, a
// cursor an earlier view of the same store issued for table. The key is a row's unique
// key, which means the same row in every view, so reading after it continues where the
// earlier view stopped; what changed in between before that key is the caller's to catch
// up from the journal.
func ResumeCursor(view string, table TableName, c Cursor) (Cursor, error) {
	t, err := LookupTable(table)
	if err != nil {
		return "", fmt.Errorf("resume cursor: %w", err)
	}
	if c == "" {
		return "", nil
	}
	key, err := ParseCursor(c, t, "")
	if err != nil {
		return "", fmt.Errorf("resume cursor: %w", err)
	}
	return EncodeCursor(view, t, key), nil
}

// PagePlan is a checked PageRequest, ready for a store's queries.
type PagePlan struct {
	Table  *Table
	After  []any // the key to read after; nil: the start of the table
	Limits Limits
}

// Plan checks req for the view named view: the limits (zero fields take the defaults, see
// Limits.Validate), the table, and the cursor, which must be this view's and this table's
// (else ErrCursorMismatch). hasJournal says whether the view has a change journal; an
// incremental request without one is refused with ErrInvalidArgument.
func (req PageRequest) Plan(view string, hasJournal bool) (PagePlan, error) {
	limits := req.Limits.WithDefaults()
	if err := limits.Validate(); err != nil {
		return PagePlan{}, err
	}
	t, err := LookupTable(req.Table)
	if err != nil {
		return PagePlan{}, err
	}
	after, err := ParseCursor(req.After, t, view)
	if err != nil {
		return PagePlan{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	if req.Incremental && !hasJournal {
		return PagePlan{}, fmt.Errorf("%s: incremental read without a change journal: %w", t.Name, ErrInvalidArgument)
	}
	return PagePlan{Table: t, After: after, Limits: limits}, nil
}

// PageFit decides which prefix of a table's rows, offered in key order with their byte
// charges (Table.Charge, computed by the store before any payload is loaded), makes one
// page: at most Limits.Rows rows whose charges sum to at most Limits.Bytes. A store offers
// up to Limits.Rows+1 rows; the extra one tells whether more follow.
type PageFit struct {
	plan  PagePlan
	Rows  int   // rows taken
	Bytes int64 // their summed charge
	Last  []any // the key of the last row taken
	More  bool  // a row was offered that did not fit: the table goes on after Last
}

// NewPageFit starts fitting a page of plan.
func NewPageFit(plan PagePlan) *PageFit { return &PageFit{plan: plan} }

// Take offers the rows that next and scan yield (a query's cursor: next moves to the
// following row, scan returns its key and charge) until the page is full or they run out,
// stops at the first error, and then calls finish (which closes the cursor and reports its
// error). A first row whose charge exceeds the byte limit is refused with a
// *RowTooLargeError reporting its charge, never skipped: the caller reads it alone with
// Limits{Rows: 1, Bytes: charge}.
func (f *PageFit) Take(next func() bool, scan func() (key []any, charge int64, err error), finish func() error) error {
	err := f.take(next, scan)
	if ferr := finish(); err == nil {
		err = ferr
	}
	return err
}

func (f *PageFit) take(next func() bool, scan func() ([]any, int64, error)) error {
	for next() {
		key, charge, err := scan()
		if err != nil {
			return err
		}
		if ok, err := f.offer(key, charge); err != nil || !ok {
			return err
		}
	}
	return nil
}

// offer offers the next row: true when it joins the page, false when the page is full.
func (f *PageFit) offer(key []any, charge int64) (bool, error) {
	if f.Rows == f.plan.Limits.Rows || f.Bytes+charge > f.plan.Limits.Bytes {
		if f.Rows == 0 {
			return false, &RowTooLargeError{Table: f.plan.Table.Name, Key: key, Charge: charge, Limit: f.plan.Limits.Bytes}
		}
		f.More = true
		return false, nil
	}
	f.Rows++
	f.Bytes += charge
	f.Last = key
	return true, nil
}

// Page returns the page of rows (exactly the rows Take took, loaded by the store), with
// its Next cursor for the view named view and its Done flag. An empty page keeps the
// request's position. A store that loaded another number of rows than it was given (its
// snapshot moved under the view) gets ErrCorrupt.
func (f *PageFit) Page(view string, rows []Row) (Page, error) {
	t := f.plan.Table
	p := Page{Table: t.Name, Rows: rows, Bytes: f.Bytes, Done: !f.More}
	if len(rows) != f.Rows {
		return Page{}, fmt.Errorf("page of %d rows loaded %d: the snapshot changed under the view: %w", f.Rows, len(rows), ErrCorrupt)
	}
	if f.Rows == 0 {
		p.Next = EncodeCursor(view, t, f.plan.After)
		return p, nil
	}
	p.Next = EncodeCursor(view, t, f.Last)
	return p, nil
}
