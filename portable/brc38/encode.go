package brc38

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"walletsync/wallet"
)

// ErrNotExportable: the wallet holds a value that no BRC-38 document can carry as the
// toolbox writes it (a JSON-text column that is not a JSON object, a time outside years
// 0000-9999, a proof the export closure needs but the view cannot read). The toolbox's own
// export fails on such data too. See EncodeError.
var ErrNotExportable = errors.New("wallet data cannot be written as BRC-38")

// EncodeError names the document value Encode could not write. Err is a *wallet.JSValueError
// (wallet.ErrNotJSValue: invalid UTF-8, an integer beyond 2^53), an error wrapping
// ErrNotExportable, or an error of the view.
type EncodeError struct {
	Path string // the value's JSON path in the document, e.g. "tables.txLabels[3].label"
	Key  []any  // the row's paging key in its table, nil when the path names no row
	Err  error
}

func (e *EncodeError) Error() string {
	if e.Key == nil {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s (key %v): %v", e.Path, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// RowLookup is implemented by views that read one row by a unique column, whichever user it
// belongs to, from the same consistent snapshot as their pages. Keyset pages scoped as BRC-40
// scopes a user are not enough to write what the toolbox's exportBRC38 writes, in three ways:
//
//   - Its closure holds the proven_txs that the user's proof requests reference, not only
//     those the user's transactions reference (BRC-40's scope). Real wallets differ there:
//     the toolbox links a new proof to its request in one database transaction and to the
//     transactions afterwards (updateProvenTxReqWithNewProvenTx), and only to those the
//     request's notify list names. (localstore's pages hold such a proof when the request
//     has the proof's txid, as the toolbox writes it; a lookup covers any other.)
//   - Its findTransactions fills a NULL transactions.rawTx from the proven_txs row with the
//     same txid, else from the proven_tx_reqs row in a live status. The toolbox stores every
//     transaction it signs or internalizes without rawTx (processAction sets it NULL), so in
//     a real wallet this concerns nearly every transaction.
//   - Its findOutputs fills a lockingScript that is missing or not scriptLength bytes long
//     (processAction drops scripts longer than maxOutputScript) with a slice of that raw
//     transaction at scriptOffset.
//
// Encode asks only for proven_txs by provenTxId or txid and for proven_tx_reqs by txid, all
// unique columns. LookupRow returns the row in the table's column order with the types
// wallet.Row documents, or an error wrapping wallet.ErrNotFound when no row matches.
type RowLookup interface {
	LookupRow(ctx context.Context, table wallet.TableName, column string, value any) (wallet.Row, error)
}

// RowOrder is implemented by views that tell where a row sits in the order the store
// returns a table's rows to a query without ORDER BY. The toolbox reads certificate fields
// so (findCertificateFields: SELECT * FROM certificate_fields WHERE userId = ?, a scan in
// SQLite rowid order) and then sorts them with a stable sort by certificateId and
// fieldName.localeCompare, so two names of one certificate that compare equal (NFC and NFD
// spellings, a name with an ignorable character) keep their rowid order. RowID returns the
// rowid of the row of table with the unique key key.
type RowOrder interface {
	RowID(ctx context.Context, table wallet.TableName, key []any) (int64, error)
}

// WarningKind classifies a Warning. The values are stable strings for reports.
type WarningKind string

// Warning kinds: each names a way the document may differ from the toolbox's export of the
// same wallet, or a row on which the toolbox's export fails.
const (
	// WarnCollationUnverified: a certificate field name holds characters outside
	// LocaleOrderExact, where walletsync's collation may order it unlike Node's ICU.
	WarnCollationUnverified WarningKind = "collation-unverified"
	// WarnCollationTie: two field names of one certificate compare equal under
	// localeCompare (NFC and NFD spellings, ignorable characters). The toolbox keeps them in
	// its finder's order (SQLite rowid order), which only a view that implements RowOrder
	// exposes; through any other view walletsync keeps them in byte order and warns.
	WarnCollationTie WarningKind = "collation-tie"
	// WarnBackfillUnavailable: the toolbox fills this value from another row (see
	// RowLookup), but the view cannot look rows up; the document carries the stored value.
	WarnBackfillUnavailable WarningKind = "backfill-unavailable"
	// WarnToolboxFails: the toolbox's export throws on this row (its findTransactions reads a
	// proof request whose rawTx or inputBEEF is NULL); the document carries the stored value.
	WarnToolboxFails WarningKind = "toolbox-fails"
)

// Warning is one place where the document may differ from the toolbox's export.
type Warning struct {
	Kind   WarningKind `json:"kind"`
	Path   string      `json:"path"` // e.g. "tables.certificateFields[4].fieldName"
	Detail string      `json:"detail"`
}

// String formats the warning for a log line or a report: "kind: path: detail".
func (w Warning) String() string { return fmt.Sprintf("%s: %s: %s", w.Kind, w.Path, w.Detail) }

// MaxWarnings is how many warnings Stats keeps; the rest are only counted, so that a wallet
// with a million odd rows still costs bounded memory.
const MaxWarnings = 100

// Stats reports what Encode wrote.
type Stats struct {
	// Rows counts the document's rows per table; users is always 1.
	Rows map[wallet.TableName]int64 `json:"rows"`
	// Bytes is the document's length.
	Bytes int64 `json:"bytes"`
	// Warnings holds the first MaxWarnings warnings; WarningCount counts all of them.
	Warnings     []Warning `json:"warnings,omitempty"`
	WarningCount int64     `json:"warningCount"`
}

// Encode writes the canonical BRC-38 document of the user identityKey, read from the view v,
// to w: byte for byte what @bsv/wallet-toolbox 2.1.26's exportBRC38Json writes for the same
// wallet when Node runs with LC_ALL=C.UTF-8 and TZ=UTC, with exportedAt in place of the
// toolbox's clock. source is the settings row of v's store; its SQLite default timestamps are
// read as UTC, as the toolbox reads them under TZ=UTC. exportedAt is truncated to
// milliseconds; the time v was opened is the honest value, since the document holds the
// view's snapshot.
//
// Encode streams: it reads each table in pages of its unique key (which is the canonical
// row order), writes each row as it arrives and keeps nothing of a row after writing it.
// Memory is one page, one row, one certificate's fields (sorted there, see below), and one
// int64 per proof request that references a proof (the export closure, see RowLookup),
// whatever the wallet's size. w receives the document through a 64 KiB buffer.
//
// Where the document can differ from the toolbox's, Stats.Warnings says so (see
// WarningKind): certificate field names that walletsync's collation may order unlike
// Node's ICU, field names tied under localeCompare, and values the toolbox fills from other
// rows when v does not implement RowLookup. A proof the closure needs but v cannot read is
// an error, because the document would be invalid without it.
//
// Errors: wallet.ErrNotFound for an unknown identity, an *EncodeError naming the row and
// value that cannot be written (wallet.ErrNotJSValue, ErrNotExportable), the view's errors
// (wallet.ErrSnapshotExpired, a *wallet.RowTooLargeError for a row over
// wallet.MaxFrameBytes), ctx's error, and w's errors. After an error, w holds a partial
// document that no reader accepts.
func Encode(ctx context.Context, v wallet.View, source wallet.Settings, identityKey string, exportedAt time.Time, w io.Writer) (Stats, error) {
	cw := &countingWriter{w: w}
	e := &encoder{ctx: ctx, v: v, identity: identityKey, bw: bufio.NewWriterSize(cw, 64<<10),
		stats: Stats{Rows: map[wallet.TableName]int64{}},
		js:    scanner{maxString: wallet.MaxFrameBytes, maxDepth: maxJSONDepth}}
	e.lookup, _ = v.(RowLookup)
	e.order, _ = v.(RowOrder)
	err := e.run(source, exportedAt)
	if err == nil {
		err = e.bw.Flush()
	}
	e.stats.Bytes = cw.n
	if err != nil {
		return e.stats, fmt.Errorf("encode BRC-38: %w", err)
	}
	return e.stats, nil
}

// maxJSONDepth bounds the nesting of JSON-text columns and of unknown values in a document.
const maxJSONDepth = 64

// pageLimits are the pages Encode reads: up to 1,000 rows or 4 MiB of byte charge (about
// 2 MiB of payload), so memory stays flat and a page of small rows costs one round trip. A
// variable only so that a test can make a modest row too large for a page.
var pageLimits = wallet.Limits{Rows: wallet.MaxPageRows, Bytes: 4 << 20}

type encoder struct {
	ctx       context.Context
	v         wallet.View
	lookup    RowLookup // nil when v cannot look rows up
	order     RowOrder  // nil when v cannot tell rowids
	identity  string
	bw        *bufio.Writer
	buf       []byte // the row being written
	js        scanner
	jsText    strings.Reader
	stats     Stats
	reqProofs []int64 // provenTxIds that exported proof requests reference
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (e *encoder) run(source wallet.Settings, exportedAt time.Time) error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	// The user row comes last in the document, but reading it first refuses an unknown
	// identity before anything is written.
	users := e.pages(wallet.Users)
	user, err := users.next(e.ctx)
	if err != nil {
		return err
	}
	if user == nil {
		return fmt.Errorf("user %s: %w", wallet.ShortKey(e.identity, 16), wallet.ErrNotFound)
	}

	b := append(e.buf[:0], `{"brc":38,"exportedAt":`...)
	if b, err = appendTime(b, exportedAt); err != nil {
		return &EncodeError{Path: "exportedAt", Err: err}
	}
	b = append(b, `,"formatVersion":1,"sourceStorage":`...)
	var col string
	if b, col, err = e.appendRow(b, docTables[settingsTable], settingsRow(source)); err != nil {
		return &EncodeError{Path: "sourceStorage." + col, Err: err}
	}
	b = append(b, `,"tables":{`...)
	if err := e.write(b); err != nil {
		return err
	}
	for i, t := range DocumentTables {
		if i > 0 {
			if err := e.bw.WriteByte(','); err != nil {
				return err
			}
		}
		if err := e.table(docTables[t]); err != nil {
			return err
		}
	}
	b = append(e.buf[:0], `},"title":`...)
	b, _ = wallet.AppendJSString(b, BRC38Title)
	b = append(b, `,"user":`...)
	if b, col, err = e.appendRow(b, docTables[wallet.Users], user); err != nil {
		return &EncodeError{Path: "user." + col, Key: wallet.Users.KeyOf(user), Err: err}
	}
	e.stats.Rows[wallet.TableUsers] = 1
	return e.write(append(b, '}'))
}

// write sends b to the buffered output and keeps b's storage for the next row, unless one
// huge row made it large: a 64 MiB proof must not pin its buffer for the rest of the export.
func (e *encoder) write(b []byte) error {
	_, err := e.bw.Write(b)
	e.buf = b[:0]
	if cap(e.buf) > 1<<20 {
		e.buf = nil
	}
	return err
}

// table writes one array of "tables": its key, then its rows in canonical order.
func (e *encoder) table(dt *docTable) error {
	key, _ := wallet.AppendJSString(e.buf[:0], dt.Plural)
	if err := e.write(append(key, ':', '[')); err != nil {
		return err
	}
	var err error
	switch dt.Table {
	case wallet.CertificateFields:
		err = e.certificateFields(dt)
	case wallet.ProvenTxs:
		err = e.provenTxs(dt)
	default:
		err = e.rows(dt)
	}
	if err != nil {
		return err
	}
	return e.bw.WriteByte(']')
}

// rows writes a table whose key order is its canonical order, one row as it arrives.
func (e *encoder) rows(dt *docTable) error {
	p := e.pages(dt.Table)
	for i := 0; ; i++ {
		r, err := p.next(e.ctx)
		if err != nil || r == nil {
			return err
		}
		if err := e.prepare(dt, r, i); err != nil {
			return err
		}
		if err := e.writeRow(dt, r, i); err != nil {
			return err
		}
	}
}

// prepare applies what the toolbox's finders do to a row before its export (see RowLookup)
// and collects the proof ids the closure needs.
func (e *encoder) prepare(dt *docTable, r wallet.Row, i int) error {
	switch dt.Table {
	case wallet.Transactions:
		return e.fillRawTx(dt, r, i)
	case wallet.Outputs:
		return e.fillScript(dt, r, i)
	case wallet.ProvenTxReqs:
		if id, ok := r[wallet.ProvenTxReqs.Col("provenTxId")].(int64); ok {
			e.reqProofs = append(e.reqProofs, id)
		}
	}
	return nil
}

// writeRow writes row i of dt's array.
func (e *encoder) writeRow(dt *docTable, r wallet.Row, i int) error {
	b := e.buf[:0]
	if i > 0 {
		b = append(b, ',')
	}
	b, col, err := e.appendRow(b, dt, r)
	if err != nil {
		return &EncodeError{Path: rowPath(dt, i) + "." + col, Key: dt.KeyOf(r), Err: err}
	}
	e.stats.Rows[dt.Name]++
	return e.write(b)
}

func rowPath(dt *docTable, i int) string { return fmt.Sprintf("tables.%s[%d]", dt.Plural, i) }

// appendRow appends r as a canonical object: non-null values only, keys in UTF-16 order. On
// failure it returns the column at fault.
func (e *encoder) appendRow(dst []byte, dt *docTable, r wallet.Row) ([]byte, string, error) {
	dst = append(dst, '{')
	n := 0
	for i := range dt.cols {
		c := &dt.cols[i]
		v := r[c.index]
		if v == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, c.key...)
		var err error
		if dst, err = e.appendValue(dst, c, v); err != nil {
			return dst, c.Name, err
		}
	}
	return append(dst, '}'), "", nil
}

// appendValue appends one non-null value as the toolbox's portableRow and canonicalize
// write it.
func (e *encoder) appendValue(dst []byte, c *docColumn, v any) ([]byte, error) {
	switch c.Kind {
	case wallet.KindInt:
		if x, ok := v.(int64); ok {
			return wallet.AppendJSInt(dst, x)
		}
	case wallet.KindBool:
		if x, ok := v.(bool); ok {
			if c.numericBool {
				if x {
					return append(dst, '1'), nil
				}
				return append(dst, '0'), nil
			}
			return strconv.AppendBool(dst, x), nil
		}
	case wallet.KindText:
		if x, ok := v.(string); ok {
			return wallet.AppendJSString(dst, x)
		}
	case wallet.KindTime:
		if x, ok := v.(time.Time); ok {
			return appendTime(dst, x)
		}
	case wallet.KindBlob:
		if x, ok := v.([]byte); ok {
			dst = append(dst, '"')
			return append(base64.StdEncoding.AppendEncode(dst, x), '"'), nil
		}
	case wallet.KindJSON:
		if x, ok := v.(string); ok {
			return e.appendJSONText(dst, x)
		}
	}
	return dst, fmt.Errorf("value of type %T in a %s column: %w", v, c.Kind, wallet.ErrInvalidArgument)
}

// appendTime appends t as Date.prototype.toISOString writes it. Outside years 0000-9999 it
// writes six-digit signed years, which BRC-38's time format refuses.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	t = t.UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return dst, fmt.Errorf("time %s outside years 0000-9999 has no BRC-38 form: %w", t, ErrNotExportable)
	}
	dst = append(dst, '"')
	return append(t.AppendFormat(dst, wallet.TimeLayout), '"'), nil
}

// appendJSONText appends a JSON-text column as the canonical object it holds: the toolbox
// exports JSON.parse of the stored text, and its validation requires an object.
func (e *encoder) appendJSONText(dst []byte, text string) ([]byte, error) {
	e.jsText.Reset(text)
	if e.js.r == nil {
		e.js.r = bufio.NewReaderSize(&e.jsText, 4096)
	} else {
		e.js.r.Reset(&e.jsText)
	}
	e.js.off, e.js.trail = 0, e.js.trail[:0]
	v, err := e.js.parseValue(1)
	if err == nil {
		err = e.js.end()
	}
	if err != nil {
		return dst, fmt.Errorf("stored JSON text does not parse as JSON.parse reads it (%v): %w", err, ErrNotExportable)
	}
	if v.kind != valObject {
		return dst, fmt.Errorf("stored JSON text is not an object: %w", ErrNotExportable)
	}
	return appendJSValue(dst, &v, true)
}

// certificateFields writes the fields in the toolbox's order: by certificateId, then by
// fieldName under localeCompare with a stable sort from rowid order (see RowOrder). Pages
// come in (certificateId, fieldName) byte order, so one certificate's fields are held and
// sorted at a time.
func (e *encoder) certificateFields(dt *docTable) error {
	certCol, nameCol := dt.Col("certificateId"), dt.Col("fieldName")
	p := e.pages(dt.Table)
	var group []wallet.Row
	written := 0
	flush := func() error {
		slices.SortStableFunc(group, func(a, b wallet.Row) int {
			return LocaleCompare(a[nameCol].(string), b[nameCol].(string))
		})
		tiesOrdered, err := e.orderTies(dt.Table, group, nameCol)
		if err != nil {
			return err
		}
		for j, r := range group {
			name := r[nameCol].(string)
			if !LocaleOrderExact(name) {
				e.warn(WarnCollationUnverified, rowPath(dt, written)+".fieldName",
					fmt.Sprintf("field name %q has characters whose order walletsync has not verified against Node's ICU", name))
			}
			if !tiesOrdered && j > 0 && LocaleCompare(group[j-1][nameCol].(string), name) == 0 {
				e.warn(WarnCollationTie, rowPath(dt, written)+".fieldName",
					fmt.Sprintf("field names %q and %q are equal under localeCompare; the toolbox orders them by rowid", group[j-1][nameCol], name))
			}
			if err := e.writeRow(dt, r, written); err != nil {
				return err
			}
			written++
		}
		group = group[:0]
		return nil
	}
	for {
		r, err := p.next(e.ctx)
		if err != nil {
			return err
		}
		if r == nil {
			return flush()
		}
		if len(group) > 0 && group[0][certCol] != r[certCol] {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, r)
	}
}

// orderTies puts each run of rows whose names compare equal in rowid order, the order the
// toolbox's finder read them in, when the view implements RowOrder; it reports false, and
// leaves the runs in byte order, when it does not. Ties are rare: only their rows cost a
// lookup.
func (e *encoder) orderTies(t *wallet.Table, group []wallet.Row, nameCol int) (bool, error) {
	if e.order == nil {
		return false, nil
	}
	for i := 0; i < len(group); {
		j := i + 1
		for j < len(group) && LocaleCompare(group[i][nameCol].(string), group[j][nameCol].(string)) == 0 {
			j++
		}
		if j-i > 1 {
			ids := make(map[string]int64, j-i)
			for _, r := range group[i:j] {
				key := make([]any, len(t.Key))
				for k, c := range t.Key {
					key[k] = r[t.Col(c)]
				}
				id, err := e.order.RowID(e.ctx, t.Name, key)
				if err != nil {
					return false, fmt.Errorf("order tied certificate field names: %w", err)
				}
				ids[r[nameCol].(string)] = id
			}
			slices.SortFunc(group[i:j], func(a, b wallet.Row) int {
				return cmp.Compare(ids[a[nameCol].(string)], ids[b[nameCol].(string)])
			})
		}
		i = j
	}
	return true, nil
}

// provenTxs writes the export closure's proofs in provenTxId order: those the user's
// transactions reference (the view's scoped pages) merged with those only the user's proof
// requests reference, which come before in the document (provenTxReqs < provenTxs) and are
// read one by one through RowLookup.
func (e *encoder) provenTxs(dt *docTable) error {
	slices.Sort(e.reqProofs)
	extra := slices.Compact(e.reqProofs)
	p := e.pages(dt.Table)
	written := 0
	for {
		r, err := p.next(e.ctx)
		if err != nil {
			return err
		}
		id := int64(math.MaxInt64)
		if r != nil {
			id = r[dt.idCol].(int64)
		}
		for len(extra) > 0 && extra[0] <= id {
			if extra[0] < id {
				proof, err := e.extraProof(dt, extra[0], written)
				if err != nil {
					return err
				}
				if err := e.writeRow(dt, proof, written); err != nil {
					return err
				}
				written++
			}
			extra = extra[1:]
		}
		if r == nil {
			e.reqProofs = nil
			return nil
		}
		if err := e.writeRow(dt, r, written); err != nil {
			return err
		}
		written++
	}
}

func (e *encoder) extraProof(dt *docTable, id int64, i int) (wallet.Row, error) {
	fail := func(err error) error {
		return &EncodeError{Path: rowPath(dt, i), Key: []any{id}, Err: fmt.Errorf(
			"a proof request of the user references proven tx %d, which none of the user's transactions references: %w", id, err)}
	}
	if e.lookup == nil {
		return nil, fail(fmt.Errorf("the view cannot read it (it does not implement RowLookup): %w", ErrNotExportable))
	}
	row, found, err := e.find(wallet.ProvenTxs, "provenTxId", id)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fail(fmt.Errorf("no such row: %w", ErrNotExportable))
	}
	return row, nil
}

// find looks up one row through the view's RowLookup; found is false for wallet.ErrNotFound.
func (e *encoder) find(t *wallet.Table, column string, value any) (wallet.Row, bool, error) {
	r, err := e.lookup.LookupRow(e.ctx, t.Name, column, value)
	if errors.Is(err, wallet.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("look up %s by %s: %w", t.Name, column, err)
	}
	if len(r) != len(t.Columns) {
		return nil, false, fmt.Errorf("look up %s by %s: %d values for %d columns: %w", t.Name, column, len(r), len(t.Columns), wallet.ErrInvalidArgument)
	}
	return r, true, nil
}

// The proof-request statuses the toolbox takes a raw transaction from: getProvenOrRawTx
// (transactions.rawTx) and getRawTxSlice (outputs.lockingScript) use different lists.
var (
	rawTxStatuses  = []string{"unsent", "unmined", "unconfirmed", "sending", "nosend", "completed"}
	scriptStatuses = []string{"unsent", "nosend", "sending", "unmined", "completed", "unfail"}
)

// fillRawTx does what the toolbox's findTransactions (validateRawTransaction) does to a
// transaction without rawTx but with a txid: take the rawTx of the proven_txs row with that
// txid (even a NULL one), or else of the proof request in a status of rawTxStatuses.
func (e *encoder) fillRawTx(dt *docTable, r wallet.Row, i int) error {
	rawCol := dt.Col("rawTx")
	txid, _ := r[dt.Col("txid")].(string)
	if r[rawCol] != nil || txid == "" {
		return nil
	}
	path := func() string { return rowPath(dt, i) + ".rawTx" }
	if e.lookup == nil {
		e.warn(WarnBackfillUnavailable, path(), "rawTx is NULL; the toolbox fills it from the proof or the proof request with the same txid")
		return nil
	}
	proof, found, err := e.find(wallet.ProvenTxs, "txid", txid)
	if err != nil || found {
		if found {
			r[rawCol] = proof[wallet.ProvenTxs.Col("rawTx")]
		}
		return err
	}
	req, found, err := e.find(wallet.ProvenTxReqs, "txid", txid)
	if err != nil || !found || !slices.Contains(rawTxStatuses, req[wallet.ProvenTxReqs.Col("status")].(string)) {
		return err
	}
	raw, beef := req[wallet.ProvenTxReqs.Col("rawTx")], req[wallet.ProvenTxReqs.Col("inputBEEF")]
	if raw == nil || beef == nil {
		e.warn(WarnToolboxFails, path(), "the toolbox's findTransactions throws here: the proof request it reads has no rawTx or no inputBEEF")
		return nil
	}
	r[rawCol] = raw
	return nil
}

// fillScript does what the toolbox's findOutputs (validateOutputScript) does to an output
// whose lockingScript is missing or not scriptLength bytes long while scriptLength,
// scriptOffset and txid are set: take SQLite's substr(rawTx, scriptOffset + 1,
// scriptLength) of the proven_txs row with that txid, or else of the proof request in a
// status of scriptStatuses.
func (e *encoder) fillScript(dt *docTable, r wallet.Row, i int) error {
	scriptCol := dt.Col("lockingScript")
	length, _ := r[dt.Col("scriptLength")].(int64)
	offset, _ := r[dt.Col("scriptOffset")].(int64)
	txid, _ := r[dt.Col("txid")].(string)
	script, _ := r[scriptCol].([]byte)
	if length == 0 || offset == 0 || txid == "" || (r[scriptCol] != nil && int64(len(script)) == length) {
		return nil
	}
	if e.lookup == nil {
		e.warn(WarnBackfillUnavailable, rowPath(dt, i)+".lockingScript",
			"lockingScript is missing or not scriptLength bytes; the toolbox fills it from the raw transaction of the proof or the proof request")
		return nil
	}
	proof, found, err := e.find(wallet.ProvenTxs, "txid", txid)
	if err != nil {
		return err
	}
	if found {
		// A proof whose rawTx is NULL yields NULL here, and the toolbox tries the request.
		if raw, ok := proof[wallet.ProvenTxs.Col("rawTx")].([]byte); ok {
			r[scriptCol] = sqliteSubstr(raw, offset+1, length)
			return nil
		}
	}
	req, found, err := e.find(wallet.ProvenTxReqs, "txid", txid)
	if err != nil || !found || !slices.Contains(scriptStatuses, req[wallet.ProvenTxReqs.Col("status")].(string)) {
		return err
	}
	if raw, ok := req[wallet.ProvenTxReqs.Col("rawTx")].([]byte); ok {
		r[scriptCol] = sqliteSubstr(raw, offset+1, length)
	}
	return nil
}

// sqliteSubstr is SQLite's substr(X, Y, Z) on a blob (func.c substrFunc): Y counts from 1,
// from the end when negative; a negative Z takes the bytes before Y. The result is clamped to
// the blob and may be empty, never NULL.
func sqliteSubstr(x []byte, p1, p2 int64) []byte {
	n := int64(len(x))
	neg := p2 < 0
	if neg {
		p2 = -p2
	}
	switch {
	case p1 < 0:
		p1 += n
		if p1 < 0 {
			p2 += p1
			p2 = max(p2, 0)
			p1 = 0
		}
	case p1 > 0:
		p1--
	case p2 > 0:
		p2--
	}
	if neg {
		p1 -= p2
		if p1 < 0 {
			p2 += p1
			p1 = 0
		}
	}
	if p1 > n {
		return []byte{}
	}
	if p1+p2 > n {
		p2 = max(n-p1, 0)
	}
	return slices.Clone(x[p1 : p1+p2])
}

func (e *encoder) warn(kind WarningKind, path, detail string) {
	e.stats.WarningCount++
	if len(e.stats.Warnings) < MaxWarnings {
		e.stats.Warnings = append(e.stats.Warnings, Warning{Kind: kind, Path: path, Detail: detail})
	}
}

// pager walks one table of the view for the encoder's user, a page at a time.
type pager struct {
	v    wallet.View
	req  wallet.PageRequest
	rows []wallet.Row
	done bool
}

func (e *encoder) pages(t *wallet.Table) *pager {
	return &pager{v: e.v, req: wallet.PageRequest{Table: t.Name, IdentityKey: e.identity, Limits: pageLimits}}
}

// next returns the next row, or nil at the end of the table. A row too large for a page is
// read alone, up to wallet.MaxFrameBytes; a larger one fails the export, never skipped.
func (p *pager) next(ctx context.Context) (wallet.Row, error) {
	for len(p.rows) == 0 {
		if p.done {
			return nil, nil
		}
		req := p.req
		page, err := p.v.ReadPage(ctx, req)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) && big.Charge <= wallet.MaxFrameBytes {
			req.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
			page, err = p.v.ReadPage(ctx, req)
		}
		if err != nil {
			return nil, err
		}
		if len(page.Rows) == 0 && !page.Done {
			return nil, fmt.Errorf("read %s: an empty page that is not the last: %w", req.Table, wallet.ErrNoProgress)
		}
		p.rows, p.done, p.req.After = page.Rows, page.Done, page.Next
	}
	r := p.rows[0]
	p.rows = p.rows[1:]
	return r, nil
}
