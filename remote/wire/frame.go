package wire

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"

	"walletsync/wallet"
)

// Frames. Every request and answer body of the wire is one frame in one of two encodings,
// chosen by the request's Content-Type and answered in kind:
//
//   - EncodingZstd (the default): "WSF1", the uncompressed length as a uvarint, then that
//     many bytes compressed as one zstd frame. Uncompressed: the message head as a
//     uvarint-prefixed JSON object, then, for a message that carries rows, a uvarint row
//     count and the rows, each value a one-byte tag and its bytes (see appendValue).
//   - EncodingJSON (the fallback a client asks for): one JSON object {"head": ..., "rows":
//     [[...], ...]}, each value in its column's JSON form (see jsonValue).
//
// Rows are typed by the table the head names, so a decoder checks every value against its
// column's kind before the row is used. Sizes are checked before anything is allocated:
// the body against MaxBodyBytes, the declared uncompressed length against MaxFrameBytes,
// the head against maxHeadBytes, the row count against wallet.MaxPageRows (read before any
// row in the binary encoding, counted as they stream in the JSON one), and every length
// prefix against the bytes that remain. Decompression cannot outgrow the declared
// length (zstd's DecodeAll is capped at it).

// Encoding names a frame encoding, as the capabilities exchange spells it.
type Encoding string

// The frame encodings.
const (
	EncodingZstd Encoding = "zstd"
	EncodingJSON Encoding = "json"
)

// Content types of the two encodings.
const (
	contentTypeZstd = "application/vnd.walletsync.frame+zstd"
	contentTypeJSON = "application/vnd.walletsync+json"
)

// contentType returns the Content-Type of e.
func (e Encoding) contentType() string {
	if e == EncodingJSON {
		return contentTypeJSON
	}
	return contentTypeZstd
}

// encodingOf returns the encoding of a Content-Type, ignoring parameters.
func encodingOf(contentType string) (Encoding, bool) {
	ct, _, _ := bytes.Cut([]byte(contentType), []byte(";"))
	switch string(bytes.TrimSpace(ct)) {
	case contentTypeZstd:
		return EncodingZstd, true
	case contentTypeJSON:
		return EncodingJSON, true
	}
	return "", false
}

// Size limits of frames.
const (
	// MaxFrameBytes bounds a frame's uncompressed bytes: the wallet's frame ceiling. A page
	// within the sync engine's limits always fits: a row's byte charge (wallet.CellCharge)
	// is more than twice the bytes its values take in a binary frame.
	MaxFrameBytes = wallet.MaxFrameBytes
	// MaxBodyBytes bounds a request or answer body as it travels. A server's BRC-104
	// middleware (auth.ServerOptions.MaxBodyBytes) and a client's auth.ClientOptions.
	// MaxResponseBytes must allow at least this much, or the largest pages are refused.
	MaxBodyBytes = MaxFrameBytes + 1<<20
	// maxHeadBytes bounds a message head (a checkpoint, a cursor, a few numbers).
	maxHeadBytes = 1 << 20
)

var frameMagic = []byte("WSF1")

// ErrBadFrame: a body that is not a well-formed frame of the wire, or is over a size
// limit. The request or answer it came in was not used.
var ErrBadFrame = errors.New("malformed or oversized wire frame")

// rowCarrier is a message head that carries rows of one table: the rows of a page or a
// batch. Its table decides how the rows are decoded.
type rowCarrier interface {
	rowTable() wallet.TableName
}

// codec encodes and decodes frames. Its zstd coders are safe for concurrent use.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
	// frames, when set, is the server's memory budget, which decompressed frames share
	// with the bodies in flight: a frame's declared length is charged before its buffer is
	// allocated and given back when the frame is decoded (rows copy what they keep). A
	// server sets it: without it, 2 KB frames declaring 64 MiB of zeros each took their
	// 64 MiB at once, 2.9 GB at 32 concurrent requests.
	frames *MemoryBudget
}

func newCodec() *codec {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // constant options
	}
	// The decoder's output is capped at the destination's capacity, the frame's declared
	// length, and at MaxFrameBytes in any case.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderMaxMemory(MaxFrameBytes),
		zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxWindow(MaxFrameBytes))
	if err != nil {
		panic(err)
	}
	return &codec{enc: enc, dec: dec}
}

// encode returns the frame of head and, when head carries rows, of rows.
func (c *codec) encode(e Encoding, head any, rows []wallet.Row) ([]byte, error) {
	var t *wallet.Table
	if rc, ok := head.(rowCarrier); ok {
		var err error
		if t, err = wallet.LookupTable(rc.rowTable()); err != nil {
			return nil, fmt.Errorf("encode frame: %w", err)
		}
	} else if len(rows) > 0 {
		return nil, fmt.Errorf("encode frame: rows without a table: %w", wallet.ErrInvalidArgument)
	}
	if e == EncodingJSON {
		return encodeJSON(head, t, rows)
	}
	h, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("encode frame head: %w", err)
	}
	raw := binary.AppendUvarint(nil, uint64(len(h)))
	raw = append(raw, h...)
	raw = binary.AppendUvarint(raw, uint64(len(rows)))
	for _, r := range rows {
		if raw, err = appendRow(raw, t, r); err != nil {
			return nil, fmt.Errorf("encode frame: %w", err)
		}
	}
	if len(raw) > MaxFrameBytes {
		return nil, fmt.Errorf("encode frame: %d bytes over the %d-byte ceiling: %w", len(raw), MaxFrameBytes, ErrBadFrame)
	}
	out := append([]byte(nil), frameMagic...)
	out = binary.AppendUvarint(out, uint64(len(raw)))
	return c.enc.EncodeAll(raw, out), nil
}

// decode reads a frame into head (a pointer) and returns its rows, typed by the table head
// names when it carries rows.
func (c *codec) decode(ctx context.Context, e Encoding, body []byte, head any) ([]wallet.Row, error) {
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("decode frame: body of %d bytes over %d: %w", len(body), MaxBodyBytes, ErrBadFrame)
	}
	if e == EncodingJSON {
		return decodeJSON(body, head)
	}
	if !bytes.HasPrefix(body, frameMagic) {
		return nil, fmt.Errorf("decode frame: no frame magic: %w", ErrBadFrame)
	}
	body = body[len(frameMagic):]
	size, n := binary.Uvarint(body)
	if n <= 0 || size > MaxFrameBytes {
		return nil, fmt.Errorf("decode frame: declared length unreadable or over %d: %w", MaxFrameBytes, ErrBadFrame)
	}
	release, err := c.charge(ctx, int64(size))
	if err != nil {
		return nil, err
	}
	defer release()
	raw, err := c.dec.DecodeAll(body[n:], make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("decode frame: decompress: %v: %w", err, ErrBadFrame)
	}
	if uint64(len(raw)) != size {
		return nil, fmt.Errorf("decode frame: %d bytes, declared %d: %w", len(raw), size, ErrBadFrame)
	}
	r := reader{b: raw}
	h := r.bytes(maxHeadBytes)
	if r.err != nil {
		return nil, fmt.Errorf("decode frame head: %w", r.err)
	}
	if err := json.Unmarshal(h, head); err != nil {
		return nil, fmt.Errorf("decode frame head: %v: %w", err, ErrBadFrame)
	}
	count := r.uvarint()
	t, err := tableOf(head, count)
	if err != nil {
		return nil, err
	}
	var rows []wallet.Row
	if count > 0 {
		rows = make([]wallet.Row, 0, count)
	}
	for i := uint64(0); i < count && r.err == nil; i++ {
		rows = append(rows, r.row(t))
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the last row: %w", len(r.b), ErrBadFrame)
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode frame rows: %w", r.err)
	}
	return rows, nil
}

// charge takes size bytes of the memory budget (see MemoryBudget.Charge); a budget still
// full after its wait is a *wallet.BusyError (503 with Retry-After on the wire).
func (c *codec) charge(ctx context.Context, size int64) (func(), error) {
	if c.frames == nil {
		return func() {}, nil
	}
	release, err := c.frames.Charge(ctx, size, "decompressed frames")
	if err != nil {
		return nil, fmt.Errorf("decode frame: %w", err)
	}
	return release, nil
}

// tableOf returns the table of head's rows and checks a row count against the page limit;
// a head that carries no rows must come with none.
func tableOf(head any, count uint64) (*wallet.Table, error) {
	if count > wallet.MaxPageRows {
		return nil, fmt.Errorf("decode frame: %d rows, more than %d: %w", count, wallet.MaxPageRows, ErrBadFrame)
	}
	rc, ok := head.(rowCarrier)
	if !ok {
		if count > 0 {
			return nil, fmt.Errorf("decode frame: rows in a message that carries none: %w", ErrBadFrame)
		}
		return nil, nil
	}
	t, err := wallet.LookupTable(rc.rowTable())
	if err != nil {
		return nil, fmt.Errorf("decode frame: %v: %w", err, ErrBadFrame)
	}
	return t, nil
}

// Value tags of the binary row encoding.
const (
	tagNull  byte = 0
	tagInt   byte = 1 // zigzag varint
	tagText  byte = 2 // uvarint length, UTF-8 bytes (text and JSON columns)
	tagFalse byte = 3
	tagTrue  byte = 4
	tagTime  byte = 5 // zigzag varint of Unix milliseconds
	tagBlob  byte = 6 // uvarint length, bytes
)

// appendRow appends r, a row of t, value by value; a value of another type than its
// column's kind is refused (it would come back as something else).
func appendRow(dst []byte, t *wallet.Table, r wallet.Row) ([]byte, error) {
	if len(r) != len(t.Columns) {
		return nil, fmt.Errorf("%s row of %d values: %w", t.Name, len(r), wallet.ErrInvalidArgument)
	}
	for i, c := range t.Columns {
		var ok bool
		if dst, ok = appendValue(dst, c.Kind, r[i]); !ok {
			return nil, fmt.Errorf("%s.%s: value of type %T for a %s column: %w", t.Name, c.Name, r[i], c.Kind, wallet.ErrInvalidArgument)
		}
	}
	return dst, nil
}

func appendValue(dst []byte, k wallet.Kind, v any) ([]byte, bool) {
	if v == nil {
		return append(dst, tagNull), true
	}
	switch x := v.(type) {
	case int64:
		if k == wallet.KindInt {
			return binary.AppendVarint(append(dst, tagInt), x), true
		}
	case string:
		if k == wallet.KindText || k == wallet.KindJSON {
			return append(binary.AppendUvarint(append(dst, tagText), uint64(len(x))), x...), true
		}
	case bool:
		if k == wallet.KindBool {
			if x {
				return append(dst, tagTrue), true
			}
			return append(dst, tagFalse), true
		}
	case time.Time:
		if k == wallet.KindTime {
			return binary.AppendVarint(append(dst, tagTime), x.UnixMilli()), true
		}
	case []byte:
		if k == wallet.KindBlob {
			return append(binary.AppendUvarint(append(dst, tagBlob), uint64(len(x))), x...), true
		}
	}
	return dst, false
}

// reader decodes the uncompressed part of a frame; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format+": %w", append(args, ErrBadFrame)...)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("unreadable length")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("unreadable integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns a length-prefixed byte string of at most limit bytes, without copying.
func (r *reader) bytes(limit int) []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) || n > uint64(limit) {
		r.fail("length %d beyond the %d bytes left", n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// row decodes one row of t, checking each value against its column.
func (r *reader) row(t *wallet.Table) wallet.Row {
	row := make(wallet.Row, len(t.Columns))
	for i, c := range t.Columns {
		if r.err != nil {
			return nil
		}
		if len(r.b) == 0 {
			r.fail("row ends before %s.%s", t.Name, c.Name)
			return nil
		}
		tag := r.b[0]
		r.b = r.b[1:]
		if tag == tagNull {
			if !c.Nullable {
				r.fail("null in NOT NULL column %s.%s", t.Name, c.Name)
			}
			continue
		}
		switch {
		case tag == tagInt && c.Kind == wallet.KindInt:
			row[i] = r.varint()
		case tag == tagText && (c.Kind == wallet.KindText || c.Kind == wallet.KindJSON):
			row[i] = string(r.bytes(MaxFrameBytes))
		case (tag == tagFalse || tag == tagTrue) && c.Kind == wallet.KindBool:
			row[i] = tag == tagTrue
		case tag == tagTime && c.Kind == wallet.KindTime:
			row[i] = time.UnixMilli(r.varint()).UTC()
		case tag == tagBlob && c.Kind == wallet.KindBlob:
			row[i] = bytes.Clone(r.bytes(MaxFrameBytes))
		default:
			r.fail("tag %d for %s column %s.%s", tag, c.Kind, t.Name, c.Name)
		}
	}
	return row
}

// jsonFrame is the JSON encoding of a frame.
type jsonFrame struct {
	Head json.RawMessage   `json:"head"`
	Rows []json.RawMessage `json:"rows,omitempty"`
}

func encodeJSON(head any, t *wallet.Table, rows []wallet.Row) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("encode frame head: %w", err)
	}
	f := jsonFrame{Head: h}
	for _, r := range rows {
		if len(r) != len(t.Columns) {
			return nil, fmt.Errorf("encode frame: %s row of %d values: %w", t.Name, len(r), wallet.ErrInvalidArgument)
		}
		vals := make([]any, len(r))
		for i, c := range t.Columns {
			v, ok := jsonValue(c.Kind, r[i])
			if !ok {
				return nil, fmt.Errorf("encode frame: %s.%s: value of type %T for a %s column: %w", t.Name, c.Name, r[i], c.Kind, wallet.ErrInvalidArgument)
			}
			vals[i] = v
		}
		b, err := json.Marshal(vals)
		if err != nil {
			return nil, fmt.Errorf("encode frame row: %w", err)
		}
		f.Rows = append(f.Rows, b)
	}
	out, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode frame: %w", err)
	}
	if len(out) > MaxBodyBytes {
		return nil, fmt.Errorf("encode frame: %d bytes of JSON over %d (the binary encoding is smaller): %w", len(out), MaxBodyBytes, ErrBadFrame)
	}
	return out, nil
}

// jsonValue is a value's JSON form: integers and booleans as themselves, text as strings,
// times in wallet.TimeLayout, blobs in standard base64.
func jsonValue(k wallet.Kind, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch x := v.(type) {
	case int64:
		return x, k == wallet.KindInt
	case string:
		return x, k == wallet.KindText || k == wallet.KindJSON
	case bool:
		return x, k == wallet.KindBool
	case time.Time:
		return wallet.FormatTime(x), k == wallet.KindTime
	case []byte:
		return base64.StdEncoding.EncodeToString(x), k == wallet.KindBlob
	}
	return nil, false
}

// decodeJSON reads a JSON frame as a stream: rows are counted as they come and the frame is
// refused at the first row beyond wallet.MaxPageRows, before the rest is read. A whole-body
// json.Unmarshal would first build a slice of every row (33.5 M tiny rows in a 64 MiB body
// took 3.2 GB) and only then let the count be checked. The head may come before or after
// the rows, so rows are held raw (at most MaxPageRows of them) until the head names their
// table.
func decodeJSON(body []byte, head any) ([]wallet.Row, error) {
	// encoding/json reads invalid UTF-8 and lone surrogates as U+FFFD: refused, never
	// altered.
	if err := wallet.CheckJSONText(body); err != nil {
		return nil, fmt.Errorf("decode JSON frame: %w: %w", err, ErrBadFrame)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var f jsonFrame
	err := jsonObject(dec, func(key string) error {
		switch key {
		case "head":
			return dec.Decode(&f.Head)
		case "rows":
			return jsonRows(dec, &f.Rows)
		}
		var skip json.RawMessage
		return dec.Decode(&skip)
	})
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("data after the frame")
		}
	}
	if err != nil || f.Head == nil || string(f.Head) == "null" {
		if errors.Is(err, ErrBadFrame) {
			return nil, fmt.Errorf("decode JSON frame: %w", err)
		}
		return nil, fmt.Errorf("decode JSON frame: %v: %w", err, ErrBadFrame)
	}
	if err := json.Unmarshal(f.Head, head); err != nil {
		return nil, fmt.Errorf("decode JSON frame head: %v: %w", err, ErrBadFrame)
	}
	t, err := tableOf(head, uint64(len(f.Rows)))
	if err != nil {
		return nil, err
	}
	var rows []wallet.Row
	for _, raw := range f.Rows {
		row, err := jsonRow(t, raw)
		if err != nil {
			return nil, fmt.Errorf("decode JSON frame: %w", err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// jsonObject reads one JSON object from dec, calling member for each key with dec at its
// value, which member must consume.
func jsonObject(dec *json.Decoder, member func(key string) error) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

// jsonRows reads the rows array (or null) into rows raw, refusing the row after
// wallet.MaxPageRows without reading it.
func jsonRows(dec *json.Decoder, rows *[]json.RawMessage) error {
	*rows = nil // a repeated key replaces the rows, as json.Unmarshal does
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return errors.New("rows are not an array")
	}
	count := wallet.RowCounter{Limit: wallet.MaxPageRows}
	for dec.More() {
		if err := count.Next(); err != nil {
			return fmt.Errorf("%w: %w", err, ErrBadFrame)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		*rows = append(*rows, raw)
	}
	_, err = dec.Token() // the closing bracket
	return err
}

// jsonRow decodes one row of t from its JSON array, checking each value against its column.
func jsonRow(t *wallet.Table, raw json.RawMessage) (wallet.Row, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var vals []any
	if err := dec.Decode(&vals); err != nil {
		return nil, fmt.Errorf("%s row: %v: %w", t.Name, err, ErrBadFrame)
	}
	if len(vals) != len(t.Columns) {
		return nil, fmt.Errorf("%s row of %d values: %w", t.Name, len(vals), ErrBadFrame)
	}
	row := make(wallet.Row, len(vals))
	for i, c := range t.Columns {
		v, ok := fromJSON(c, vals[i])
		if !ok {
			return nil, fmt.Errorf("%s.%s: a %T for a %s column: %w", t.Name, c.Name, vals[i], c.Kind, ErrBadFrame)
		}
		row[i] = v
	}
	return row, nil
}

func fromJSON(c wallet.Column, v any) (any, bool) {
	if v == nil {
		return nil, c.Nullable
	}
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil && c.Kind == wallet.KindInt
	case bool:
		return x, c.Kind == wallet.KindBool
	case string:
		switch c.Kind {
		case wallet.KindText, wallet.KindJSON:
			return x, true
		case wallet.KindTime:
			t, err := time.Parse(wallet.TimeLayout, x)
			return t.UTC(), err == nil
		case wallet.KindBlob:
			b, err := base64.StdEncoding.DecodeString(x)
			if b == nil {
				b = []byte{}
			}
			return b, err == nil
		}
	}
	return nil, false
}
