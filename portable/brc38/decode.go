package brc38

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"walletsync/wallet"
)

// Typed errors of the BRC-38 decoder.
var (
	// ErrInvalidDocument: the document is not valid JSON, breaks a rule of BRC-38 or of the
	// toolbox's validation (validateBRC38), or is truncated. See DocumentError.
	ErrInvalidDocument = errors.New("invalid BRC-38 document")
	// ErrDocumentLimit: a value, a row or the nesting depth exceeds the decoder's limits
	// (DecodeOptions). Such an error matches ErrInvalidDocument too.
	ErrDocumentLimit = errors.New("BRC-38 document exceeds a decoder limit")
)

// DocumentError reports the first fault Decode found in a document, with the JSON path of the
// value at fault. It never quotes the value: documents hold key material.
type DocumentError struct {
	// Path is the value's JSON path, e.g. "tables.outputs[12].satoshis"; "" for the document
	// as a whole.
	Path string
	// Offset is the byte offset in the document where the fault was found, or -1 for a fault
	// found after the whole document was read (a reference that does not resolve).
	Offset int64
	Reason string
	// Limit marks a fault of DecodeOptions' bounds; the error then matches ErrDocumentLimit.
	Limit bool
}

func (e *DocumentError) Error() string {
	where := e.Path
	if where == "" {
		where = "document"
	}
	if e.Offset < 0 {
		return fmt.Sprintf("%s: %s", where, e.Reason)
	}
	return fmt.Sprintf("%s (byte %d): %s", where, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidDocument) true, and errors.Is(err, ErrDocumentLimit)
// for a limit.
func (e *DocumentError) Unwrap() []error {
	if e.Limit {
		return []error{ErrInvalidDocument, ErrDocumentLimit}
	}
	return []error{ErrInvalidDocument}
}

// DecodeOptions bound what one document may cost. The zero value is the defaults.
type DecodeOptions struct {
	// MaxValueBytes bounds one string value, decoded (a base64 value before it is decoded
	// to bytes). wallet.MaxFrameBytes when zero.
	MaxValueBytes int
	// MaxRowBytes bounds one row's byte charge (wallet.Table.Charge), so that every row
	// decoded can travel through a sync page. wallet.MaxFrameBytes when zero.
	MaxRowBytes int64
	// MaxDepth bounds the nesting of objects and arrays, the document's own four levels
	// (document, tables, array, row) included. 64 when zero.
	MaxDepth int
}

// Document is what Decode learned besides the rows.
type Document struct {
	ExportedAt time.Time
	// Source is the exporter's settings row ("sourceStorage"); DBType and MaxOutputScript are
	// zero when the document omits them, which BRC-38 allows.
	Source      wallet.Settings
	User        wallet.Row // a wallet.Users row, activeStorage exactly as written
	IdentityKey string
	UserID      int64
	// Rows counts the rows per table, users (1) included.
	Rows map[wallet.TableName]int64
}

// RowFunc receives one decoded row of a document table, in the table's column order with the
// types wallet.Row documents (JSON-text columns as the text JSON.stringify writes for the
// object, as the toolbox's import stores it). The row is the callee's. An error stops Decode,
// which returns it.
type RowFunc func(t *wallet.Table, r wallet.Row) error

// Decode reads one BRC-38 document from r to its end and validates it as it reads, as the
// toolbox's validateBRC38 does and more: the top-level keys and fixed values (brc 38, the
// title, formatVersion 1); no null at any depth; every time in YYYY-MM-DDTHH:MM:SS.sssZ
// that round-trips, the eight binary fields in padded base64, integers within 2^53, the
// JSON-text columns as objects, every value of a known column of its column's type; unique
// primary ids in every table that has one; every userId equal to user.userId; every
// reference resolving to an exported row (the list in wallet.Table.Refs, and each proof
// request's txid to an exported transaction's). Unknown keys are tolerated at every level
// (their values are still read for nulls and limits); a repeated key is refused. A row
// without a NOT NULL column takes the column's SQLite default where the toolbox's schema
// has one, as the toolbox's import would, and is refused otherwise.
//
// Rows reach emit (which may be nil) one at a time as they are read; the document is never
// held. Memory is one row (bounded by MaxRowBytes and MaxValueBytes) plus, for the checks
// that need the whole document, about 8 bytes per row (ids and references).
//
// EMITTED ROWS ARE UNTRUSTED UNTIL DECODE RETURNS NIL. Arrays arrive in key order (the
// certificate fields before the certificates, the user last), so duplicates, userIds and
// references are only known valid at the end of the document, and a document may end early.
// Callers must stage the rows (the import writes them into an isolated staging database)
// and act on none of them unless Decode returned nil.
//
// Errors: a *DocumentError (ErrInvalidDocument, and ErrDocumentLimit for a limit) naming the
// JSON path; ctx's error; emit's error; r's read errors, unchanged.
func Decode(ctx context.Context, r io.Reader, emit RowFunc, opts DecodeOptions) (Document, error) {
	if err := ctx.Err(); err != nil {
		return Document{}, fmt.Errorf("decode BRC-38: %w", err)
	}
	d := newDecoder(ctx, r, emit, opts)
	if err := d.document(); err != nil {
		return Document{}, fmt.Errorf("decode BRC-38: %w", err)
	}
	return d.doc, nil
}

const absentRef = math.MinInt64 // an optional reference the row omits; ids are at most 2^53

type decoder struct {
	ctx     context.Context
	s       scanner
	emit    RowFunc
	maxRow  int64
	path    []pathSeg
	doc     Document
	seenTop int // bit i: topKeys[i] was read
	state   map[wallet.TableName]*tableState
	users   userCheck
	seed    maphash.Seed
	txids   []uint64 // hashes of the exported transactions' txids
	reqTxid []uint64 // hash of each proof request's txid, in document order
	rows    int
}

// tableState is what the end-of-document checks need of one table.
type tableState struct {
	dt      *docTable
	seen    bool
	ids     []int64 // primary ids in document order
	sorted  bool    // ids ascending so far: a duplicate is caught at once and set is ids
	set     []int64 // ids sorted, built at the end when they were not
	refCols []int
	refs    [][]int64 // per dt.Refs, one value per row (absentRef when omitted)
}

// userCheck follows the rows' userIds before user.userId is known (it comes last).
type userCheck struct {
	have          bool
	first         int64
	firstAt       rowLoc
	mismatch      bool
	mismatchAt    rowLoc
	mismatchValue int64
}

type rowLoc struct {
	dt *docTable
	i  int
}

func newDecoder(ctx context.Context, r io.Reader, emit RowFunc, opts DecodeOptions) *decoder {
	if opts.MaxValueBytes <= 0 {
		opts.MaxValueBytes = wallet.MaxFrameBytes
	}
	if opts.MaxRowBytes <= 0 {
		opts.MaxRowBytes = wallet.MaxFrameBytes
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = maxJSONDepth
	}
	d := &decoder{ctx: ctx, emit: emit, maxRow: opts.MaxRowBytes, seed: maphash.MakeSeed(),
		s:     scanner{r: bufio.NewReaderSize(r, 64<<10), maxString: opts.MaxValueBytes, maxDepth: opts.MaxDepth},
		state: map[wallet.TableName]*tableState{}, doc: Document{Rows: map[wallet.TableName]int64{}}}
	for _, t := range DocumentTables {
		st := &tableState{dt: docTables[t], sorted: true, refs: make([][]int64, len(t.Refs))}
		for _, ref := range t.Refs {
			st.refCols = append(st.refCols, t.Col(ref.Column))
		}
		d.state[t.Name] = st
	}
	return d
}

func (d *decoder) push(key string) { d.path = append(d.path, pathSeg{key: key, index: -1}) }
func (d *decoder) pushIndex(i int) { d.path = append(d.path, pathSeg{index: i}) }
func (d *decoder) pop()            { d.path = d.path[:len(d.path)-1] }

func (d *decoder) pathString() string { return formatPath(d.path, false) }

// fault returns a *DocumentError at the current path.
func (d *decoder) fault(off int64, format string, args ...any) error {
	return &DocumentError{Path: d.pathString(), Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// wrap turns a scanner failure into a *DocumentError at the current path; errors already
// wrapped deeper keep their deeper path, and read errors pass through.
func (d *decoder) wrap(err error) error {
	var se *scanError
	if errors.As(err, &se) {
		return &DocumentError{Path: d.pathString() + se.Trail, Offset: se.Offset, Reason: se.Reason, Limit: se.Limit}
	}
	return err
}

// member runs fn for a known key, with the key on the path.
func (d *decoder) member(key string, fn func() error) error {
	d.push(key)
	defer d.pop()
	return d.wrap(fn())
}

// skipUnknown reads past the value of a key the decoder does not know.
func (d *decoder) skipUnknown(key []byte, depth int) error {
	return d.member(string(key), func() error {
		d.s.trail = d.s.trail[:0]
		return d.s.skipValue(depth)
	})
}

// expectContainer checks that the next value opens with open ('{' or '['), naming a null
// or another type otherwise.
func (d *decoder) expectContainer(open byte, what string) error {
	c, err := d.s.peek()
	if err != nil {
		return d.wrap(err)
	}
	if c == open {
		return nil
	}
	if c == 'n' {
		return d.fault(d.s.off, nullReason)
	}
	return d.fault(d.s.off, "must be %s", what)
}

func (d *decoder) document() error {
	if err := d.expectContainer('{', "an object"); err != nil {
		return err
	}
	err := d.s.object(func(key []byte) error {
		i := slices.IndexFunc(topKeys, func(k string) bool { return k == string(key) })
		if i < 0 {
			return d.skipUnknown(key, 2)
		}
		if d.seenTop&(1<<i) != 0 {
			return d.member(topKeys[i], func() error { return d.fault(d.s.off, "repeated key") })
		}
		d.seenTop |= 1 << i
		return d.member(topKeys[i], func() error {
			switch topKeys[i] {
			case "brc":
				return d.fixed(wallet.KindInt, int64(BRC38Number))
			case "formatVersion":
				return d.fixed(wallet.KindInt, int64(BRC38FormatVersion))
			case "title":
				return d.fixed(wallet.KindText, BRC38Title)
			case "exportedAt":
				v, err := d.value(&docColumn{Column: wallet.Column{Kind: wallet.KindTime}}, 2)
				if err == nil {
					d.doc.ExportedAt = v.(time.Time)
				}
				return err
			case "sourceStorage":
				r, err := d.row(docTables[settingsTable], 2)
				if err == nil {
					d.doc.Source = rowSettings(r)
				}
				return err
			case "user":
				return d.user()
			default: // "tables"
				return d.tables()
			}
		})
	})
	if err != nil {
		return d.wrap(err)
	}
	if err := d.s.end(); err != nil {
		return d.wrap(err)
	}
	for i, k := range topKeys {
		if d.seenTop&(1<<i) == 0 {
			return &DocumentError{Path: k, Offset: d.s.off, Reason: "missing required key"}
		}
	}
	d.doc.Rows[wallet.TableUsers] = 1
	return d.finish()
}

// fixed reads a value of kind k that must equal want, compared as JavaScript's !== compares
// (so 3.8e1 equals 38, and the string "38" does not).
func (d *decoder) fixed(k wallet.Kind, want any) error {
	start := d.s.off
	v, err := d.value(&docColumn{Column: wallet.Column{Kind: k}}, 2)
	if err != nil {
		return err
	}
	if v != want {
		return d.fault(start, "must equal %#v", want)
	}
	return nil
}

func (d *decoder) user() error {
	r, err := d.row(docTables[wallet.Users], 2)
	if err != nil {
		return err
	}
	d.doc.User = r
	d.doc.UserID = r[wallet.Users.Col("userId")].(int64)
	d.doc.IdentityKey = r[wallet.Users.Col("identityKey")].(string)
	// Rows read before the user were compared with each other; compare them now.
	return d.checkUsers()
}

func (d *decoder) tables() error {
	if err := d.expectContainer('{', "an object"); err != nil {
		return err
	}
	err := d.s.object(func(key []byte) error {
		dt, ok := tablesByPlural[string(key)]
		if !ok {
			return d.skipUnknown(key, 3)
		}
		st := d.state[dt.Name]
		return d.member(dt.Plural, func() error {
			if st.seen {
				return d.fault(d.s.off, "repeated key")
			}
			st.seen = true
			if err := d.expectContainer('[', "an array"); err != nil {
				return err
			}
			return d.s.array(func(i int) error {
				d.pushIndex(i)
				defer d.pop()
				return d.wrap(d.tableRow(st, i))
			})
		})
	})
	if err != nil {
		return d.wrap(err)
	}
	for _, t := range DocumentTables {
		if !d.state[t.Name].seen {
			return &DocumentError{Path: "tables." + t.Plural, Offset: d.s.off, Reason: "missing required array"}
		}
	}
	return nil
}

// tableRow reads row i of a table, records what the final checks need and emits it.
func (d *decoder) tableRow(st *tableState, i int) error {
	r, err := d.row(st.dt, 4)
	if err != nil {
		return err
	}
	if err := d.record(st, r, i); err != nil {
		return err
	}
	d.doc.Rows[st.dt.Name]++
	if d.rows++; d.rows%256 == 0 {
		if err := d.ctx.Err(); err != nil {
			return err
		}
	}
	if d.emit != nil {
		return d.emit(st.dt.Table, r)
	}
	return nil
}

// row reads one row object of dt at nesting depth.
func (d *decoder) row(dt *docTable, depth int) (wallet.Row, error) {
	if err := d.expectContainer('{', "an object"); err != nil {
		return nil, err
	}
	start := d.s.off
	r := make(wallet.Row, len(dt.Columns))
	var seen uint32 // bit i: dt.cols[i] was read
	var charge int64
	err := d.s.object(func(key []byte) error {
		ci, ok := dt.byName[string(key)]
		if !ok {
			return d.skipUnknown(key, depth+1)
		}
		c := &dt.cols[ci]
		return d.member(c.Name, func() error {
			if seen&(1<<ci) != 0 {
				return d.fault(d.s.off, "repeated key")
			}
			seen |= 1 << ci
			v, err := d.value(c, depth+1)
			if err != nil {
				return err
			}
			r[c.index] = v
			// Bound memory while reading; the exact charge is checked below.
			if charge += wallet.CellCharge(int64(cellLen(v))); charge > d.maxRow {
				return &DocumentError{Path: formatPath(d.path[:len(d.path)-1], false), Offset: start, Limit: true,
					Reason: fmt.Sprintf("row larger than %d bytes of charge", d.maxRow)}
			}
			return nil
		})
	})
	if err != nil {
		return nil, d.wrap(err)
	}
	charge = 0
	for i := range dt.cols {
		c := &dt.cols[i]
		if seen&(1<<i) == 0 && !c.Nullable {
			if c.def == nil {
				return nil, &DocumentError{Path: d.pathString() + "." + c.Name, Offset: start, Reason: "missing required key"}
			}
			r[c.index] = c.def
		}
		charge += wallet.CellCharge(int64(cellLen(r[c.index])))
	}
	if charge > d.maxRow {
		return nil, &DocumentError{Path: d.pathString(), Offset: start, Limit: true,
			Reason: fmt.Sprintf("row larger than %d bytes of charge", d.maxRow)}
	}
	return r, nil
}

// cellLen is a value's stored length as wallet.Table.Charge counts it.
func cellLen(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case bool:
		return 1
	case int64:
		var b [24]byte
		return len(strconv.AppendInt(b[:0], x, 10))
	case time.Time:
		return len(wallet.TimeLayout)
	}
	return 0
}

// value reads the value of column c at nesting depth and returns it as the Go type of c's
// kind.
func (d *decoder) value(c *docColumn, depth int) (any, error) {
	first, err := d.s.peek()
	if err != nil {
		return nil, err
	}
	start := d.s.off
	switch {
	case first == 'n':
		return nil, d.fault(start, nullReason)
	case first == '"' && (c.Kind == wallet.KindText || c.Kind == wallet.KindTime || c.Kind == wallet.KindBlob):
		if d.s.str, err = d.s.readString(d.s.str); err != nil {
			return nil, err
		}
		return d.stringValue(c.Kind, d.s.str, start)
	case (first == '-' || first >= '0' && first <= '9') && (c.Kind == wallet.KindInt || c.Kind == wallet.KindBool):
		lit, err := d.s.readNumber()
		if err != nil {
			return nil, err
		}
		n, ok := jsInteger(lit)
		switch {
		case c.Kind == wallet.KindInt && ok:
			return n, nil
		case c.Kind == wallet.KindInt:
			return nil, d.fault(start, "must be an integer of at most 2^53 in magnitude")
		case ok && (n == 0 || n == 1):
			// The toolbox writes some booleans as 0 and 1 (see numericBools).
			return n == 1, nil
		}
		return nil, d.fault(start, "must be a boolean (or 0 or 1)")
	case (first == 't' || first == 'f') && c.Kind == wallet.KindBool:
		b, _, err := d.s.readLiteral()
		return b, err
	case first == '{' && c.Kind == wallet.KindJSON:
		d.s.trail = d.s.trail[:0]
		v, err := d.s.parseValue(depth)
		if err != nil {
			return nil, err
		}
		text, err := appendJSValue(nil, &v, false)
		return string(text), err
	}
	return nil, d.fault(start, "must be %s", kindNoun(c.Kind))
}

func kindNoun(k wallet.Kind) string {
	switch k {
	case wallet.KindInt:
		return "an integer"
	case wallet.KindBool:
		return "a boolean"
	case wallet.KindTime:
		return "a UTC ISO timestamp string"
	case wallet.KindBlob:
		return "a padded base64 string"
	case wallet.KindJSON:
		return "an object"
	}
	return "a string"
}

// stringValue converts a decoded string for a text, time or binary column.
func (d *decoder) stringValue(k wallet.Kind, s []byte, start int64) (any, error) {
	switch k {
	case wallet.KindTime:
		t, ok := parseISOTime(s)
		if !ok {
			return nil, d.fault(start, "must be a UTC ISO timestamp YYYY-MM-DDTHH:MM:SS.sssZ that round-trips")
		}
		return t, nil
	case wallet.KindBlob:
		if !paddedBase64(s) {
			return nil, d.fault(start, "must be padded base64")
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		if err != nil {
			return nil, d.fault(start, "must be padded base64")
		}
		return b[:n], nil
	}
	return string(s), nil
}

// jsInteger reads a number literal as JavaScript does (a double) and returns it when it is
// an integer of at most 2^53 in magnitude, where every integer is exact.
func jsInteger(lit []byte) (int64, bool) {
	if isPlainInt(lit) {
		n, err := strconv.ParseInt(string(lit), 10, 64)
		return n, err == nil && n >= -wallet.MaxJSInt && n <= wallet.MaxJSInt
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > wallet.MaxJSInt {
		return 0, false
	}
	return int64(f), true
}

// parseISOTime accepts exactly what the toolbox's assertIsoDate accepts: the pattern
// \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z, a valid date and time, and
// toISOString giving the same text back.
func parseISOTime(s []byte) (time.Time, bool) {
	const pattern = "dddd-dd-ddTdd:dd:dd.dddZ"
	if len(s) != len(pattern) {
		return time.Time{}, false
	}
	for i, p := range []byte(pattern) {
		if p == 'd' && (s[i] < '0' || s[i] > '9') || p != 'd' && s[i] != p {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(wallet.TimeLayout, string(s))
	if err != nil || t.Format(wallet.TimeLayout) != string(s) {
		return time.Time{}, false
	}
	return t, true
}

// paddedBase64 accepts what the toolbox's assertBase64 accepts: a length divisible by 4,
// base64 characters, then at most two '='.
func paddedBase64(s []byte) bool {
	if len(s)%4 != 0 {
		return false
	}
	end := len(s)
	for pad := 0; pad < 2 && end > 0 && s[end-1] == '='; pad++ {
		end--
	}
	for _, c := range s[:end] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// record notes what the end-of-document checks need of row i and checks what it can now.
func (d *decoder) record(st *tableState, r wallet.Row, i int) error {
	dt := st.dt
	if dt.idCol >= 0 {
		id := r[dt.idCol].(int64)
		if n := len(st.ids); n > 0 && st.sorted && id <= st.ids[n-1] {
			if id == st.ids[n-1] {
				return &DocumentError{Path: d.pathString() + "." + dt.ID, Offset: -1, Reason: fmt.Sprintf("duplicate %s %d", dt.ID, id)}
			}
			st.sorted = false
		}
		st.ids = append(st.ids, id)
	}
	for j, col := range st.refCols {
		v, ok := r[col].(int64)
		if !ok {
			v = absentRef
		}
		st.refs[j] = append(st.refs[j], v)
	}
	switch dt.Table {
	case wallet.Transactions:
		if txid, ok := r[dt.Col("txid")].(string); ok {
			d.txids = append(d.txids, maphash.String(d.seed, txid))
		}
	case wallet.ProvenTxReqs:
		d.reqTxid = append(d.reqTxid, maphash.String(d.seed, r[dt.Col("txid")].(string)))
	}
	if dt.userCol < 0 {
		return nil
	}
	u := r[dt.userCol].(int64)
	switch uc := &d.users; {
	case !uc.have:
		uc.have, uc.first, uc.firstAt = true, u, rowLoc{dt, i}
	case u != uc.first && !uc.mismatch:
		uc.mismatch, uc.mismatchAt, uc.mismatchValue = true, rowLoc{dt, i}, u
	}
	if d.doc.User != nil {
		return d.checkUsers()
	}
	return nil
}

// checkUsers compares the rows' userIds seen so far with user.userId, once the user is known.
func (d *decoder) checkUsers() error {
	uc := &d.users
	bad := func(at rowLoc, got int64) error {
		return &DocumentError{Path: rowPath(at.dt, at.i) + ".userId", Offset: -1,
			Reason: fmt.Sprintf("userId %d does not match user.userId %d", got, d.doc.UserID)}
	}
	switch {
	case uc.have && uc.first != d.doc.UserID:
		return bad(uc.firstAt, uc.first)
	case uc.mismatch:
		return bad(uc.mismatchAt, uc.mismatchValue)
	}
	return nil
}

// finish runs the checks that need the whole document: unique ids and references. A proof
// request's txid is matched by a 64-bit hash under a random seed, 8 bytes per row instead of
// 64: a txid that matches no transaction passes only on a hash collision, with a chance of
// about one in 2^64 / (number of transactions).
func (d *decoder) finish() error {
	for _, t := range DocumentTables {
		st := d.state[t.Name]
		st.set = st.ids
		if st.sorted || st.dt.idCol < 0 {
			continue
		}
		st.set = slices.Clone(st.ids)
		slices.Sort(st.set)
		for k := 1; k < len(st.set); k++ {
			if st.set[k] == st.set[k-1] {
				dup := st.set[k]
				first := slices.Index(st.ids, dup)
				second := first + 1 + slices.Index(st.ids[first+1:], dup)
				return &DocumentError{Path: rowPath(st.dt, second) + "." + t.ID, Offset: -1,
					Reason: fmt.Sprintf("duplicate %s %d (also at index %d)", t.ID, dup, first)}
			}
		}
	}
	for _, t := range DocumentTables {
		st := d.state[t.Name]
		for j, ref := range t.Refs {
			target := d.state[ref.Target].set
			for i, v := range st.refs[j] {
				if _, found := slices.BinarySearch(target, v); v != absentRef && !found {
					return &DocumentError{Path: rowPath(st.dt, i) + "." + ref.Column, Offset: -1,
						Reason: fmt.Sprintf("%d does not reference an exported %s", v, ref.Target)}
				}
			}
		}
	}
	slices.Sort(d.txids)
	for i, h := range d.reqTxid {
		if _, found := slices.BinarySearch(d.txids, h); !found {
			return &DocumentError{Path: rowPath(docTables[wallet.ProvenTxReqs], i) + ".txid", Offset: -1,
				Reason: "does not match the txid of an exported transaction"}
		}
	}
	return nil
}
