package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"walletsync/wallet"
)

// sampleRows is one row per value shape of every kind: NULLs, an empty blob, large and
// negative integers, text that JSON escapes, times at the millisecond.
func sampleRows() (pageHead, []wallet.Row) {
	t := wallet.Transactions
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	row := func(id int64, desc any, raw any) wallet.Row {
		r := make(wallet.Row, len(t.Columns))
		vals := map[string]any{"created_at": at, "updated_at": at.Add(time.Millisecond), "transactionId": id, "userId": int64(1),
			"provenTxId": nil, "status": "completed", "reference": "ref\u2028<&>\"\\\x01", "isOutgoing": id%2 == 0,
			"satoshis": int64(-1) << 62, "version": int64(1), "lockTime": nil, "description": desc, "txid": "ab",
			"inputBEEF": []byte{}, "rawTx": raw}
		for i, c := range t.Columns {
			r[i] = vals[c.Name]
		}
		return r
	}
	rows := []wallet.Row{row(1, nil, nil), row(1<<53+1, "ünïcödé 🎉", []byte{0, 1, 2, 255}), row(3, "", bytes.Repeat([]byte("x"), 70_000))}
	return pageHead{Table: t.Name, Next: "cursor", Done: true, Bytes: 12345}, rows
}

func TestCodec_RoundTrip(t *testing.T) {
	c := newCodec()
	head, rows := sampleRows()
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		t.Run(string(enc), func(t *testing.T) {
			b, err := c.encode(enc, head, rows)
			if err != nil {
				t.Fatal(err)
			}
			var got pageHead
			gotRows, err := c.decode(t.Context(), enc, b, &got)
			if err != nil {
				t.Fatal(err)
			}
			if got != head || !reflect.DeepEqual(gotRows, rows) {
				t.Fatalf("round trip changed the page:\n got %+v %v\nwant %+v %v", got, gotRows, head, rows)
			}
			// A message that carries no rows comes back without any.
			b, err = c.encode(enc, sessionRequest{Session: wallet.SessionKey{SourceStorage: "s", IdentityKey: "i"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sr sessionRequest
			if r, err := c.decode(t.Context(), enc, b, &sr); err != nil || r != nil || sr.Session.IdentityKey != "i" {
				t.Fatalf("session request: %+v %v %v", sr, r, err)
			}
		})
	}
	// The binary frame is the smaller: the 70 kB blob compresses, and nothing is base64.
	z, _ := c.encode(EncodingZstd, head, rows)
	j, _ := c.encode(EncodingJSON, head, rows)
	if len(z)*10 > len(j) {
		t.Fatalf("zstd frame %d bytes, JSON %d: want the binary at most a tenth", len(z), len(j))
	}
}

// TestCodec_EncodeRefusesMistypedValues: a value whose Go type is not its column's kind
// would come back as something else, so it never leaves.
func TestCodec_EncodeRefusesMistypedValues(t *testing.T) {
	c := newCodec()
	head, rows := sampleRows()
	rows[0] = append(wallet.Row{}, rows[0]...)
	rows[0][wallet.Transactions.Col("satoshis")] = "12"
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		if _, err := c.encode(enc, head, rows); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", enc, err)
		}
	}
	if _, err := c.encode(EncodingZstd, empty{}, rows); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Errorf("rows in a message without a table: err = %v", err)
	}
}

// frameOf builds a binary frame around raw, declaring declared bytes.
func frameOf(raw []byte, declared uint64) []byte {
	enc, _ := zstd.NewWriter(nil)
	out := binary.AppendUvarint(append([]byte(nil), frameMagic...), declared)
	return enc.EncodeAll(raw, out)
}

// frame builds a binary frame around raw, declaring its true length.
func frame(raw []byte) []byte { return frameOf(raw, uint64(len(raw))) }

// rawFrame is the uncompressed part of a frame: a head and a row count, then tail.
func rawFrame(head string, count uint64, tail []byte) []byte {
	raw := binary.AppendUvarint(nil, uint64(len(head)))
	raw = append(raw, head...)
	raw = binary.AppendUvarint(raw, count)
	return append(raw, tail...)
}

// TestCodec_DecodeRefusesBeforeAllocating: every size is checked against its limit, and
// every length against the bytes that remain, before anything is allocated or parsed.
func TestCodec_DecodeRefusesBeforeAllocating(t *testing.T) {
	c := newCodec()
	ok := rawFrame(`{"table":"tx_labels"}`, 0, nil)
	labels := func(count uint64, tail ...byte) []byte { return frame(rawFrame(`{"table":"tx_labels"}`, count, tail)) }
	cases := map[string][]byte{
		"no magic":                     []byte("XXXX\x01\x00"),
		"declared over the ceiling":    binary.AppendUvarint(append([]byte(nil), frameMagic...), MaxFrameBytes+1),
		"declared longer than content": frameOf(ok, uint64(len(ok))+1),
		// 4 MiB of zeros compress to a few hundred bytes; the decoder stops at the
		// declared length instead of inflating them.
		"declared shorter than content, a bomb": frameOf(append(append([]byte(nil), ok...), make([]byte, 4<<20)...), uint64(len(ok))),
		"not zstd":                              append(binary.AppendUvarint(append([]byte(nil), frameMagic...), 10), "not zstd!!"...),
		"head length beyond the frame":          frame(binary.AppendUvarint(nil, 1<<30)),
		"head not JSON":                         frame(rawFrame("{", 0, nil)),
		"too many rows":                         labels(wallet.MaxPageRows + 1),
		"unknown table":                         frame(rawFrame(`{"table":"nope"}`, 1, nil)),
		"row shorter than its columns":          labels(1, tagTime, 2),
		"text length beyond the frame":          labels(1, tagTime, 2, tagTime, 2, tagInt, 2, tagInt, 2, tagText, 0xff, 0xff, 0x03),
		"null in a NOT NULL column":             labels(1, tagNull),
		"a text tag for a time column":          labels(1, tagText, 0),
		"bytes after the last row":              labels(0, 1),
		"body over the ceiling":                 make([]byte, MaxBodyBytes+1),
	}
	for name, body := range cases {
		var head pageHead
		if _, err := c.decode(t.Context(), EncodingZstd, body, &head); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: err = %v, want ErrBadFrame", name, err)
		}
	}
	// A frame of rows decoded as a message that carries none.
	head, rows := sampleRows()
	b, _ := c.encode(EncodingZstd, head, rows)
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		if enc == EncodingJSON {
			b, _ = c.encode(EncodingJSON, head, rows)
		}
		if _, err := c.decode(t.Context(), enc, b, &sessionRequest{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: rows where none belong: err = %v", enc, err)
		}
	}
	jsonCases := map[string]string{
		"not JSON":           `{`,
		"no head":            `{"rows":[]}`,
		"a row too short":    `{"head":{"table":"tx_labels"},"rows":[[1]]}`,
		"a string for an id": `{"head":{"table":"tx_labels"},"rows":[["2026-01-01T00:00:00.000Z","2026-01-01T00:00:00.000Z","1",1,"l",false]]}`,
		"a bad time":         `{"head":{"table":"tx_labels"},"rows":[["yesterday","2026-01-01T00:00:00.000Z",1,1,"l",false]]}`,
		"too many rows":      `{"head":{"table":"tx_labels"},"rows":[` + strings.TrimSuffix(strings.Repeat("[],", wallet.MaxPageRows+1), ",") + `]}`,
		// encoding/json would read both as U+FFFD: refused, never altered.
		"a lone surrogate": `{"head":{"table":"tx_labels"},"rows":[["2026-01-01T00:00:00.000Z","2026-01-01T00:00:00.000Z",1,1,"\ud800",false]]}`,
		"invalid UTF-8":    "{\"head\":{\"table\":\"tx_labels\"},\"rows\":[[\"2026-01-01T00:00:00.000Z\",\"2026-01-01T00:00:00.000Z\",1,1,\"\xff\",false]]}",
	}
	for name, body := range jsonCases {
		var head pageHead
		if _, err := c.decode(t.Context(), EncodingJSON, []byte(body), &head); !errors.Is(err, ErrBadFrame) {
			t.Errorf("JSON %s: err = %v, want ErrBadFrame", name, err)
		}
	}
}

// TestCodec_RefusesRowsPastTheLimitUnread: a frame of more rows than a page holds is refused
// at the row past the limit, in both encodings, without the rest being decoded: 4 MiB of
// tiny rows (about 1.4 M) cost a whole-body decode some 210 MB of allocations, a stream that
// stops at row 1,001 a few hundred KiB.
func TestCodec_RefusesRowsPastTheLimitUnread(t *testing.T) {
	const bodyBytes = 4 << 20
	head := `{"table":"transactions","next":"","done":true}`
	jsonBody := func(headFirst bool) []byte {
		rows := "[" + strings.TrimSuffix(strings.Repeat("[],", bodyBytes/3), ",") + "]"
		if headFirst {
			return []byte(`{"head":` + head + `,"rows":` + rows + `}`)
		}
		return []byte(`{"rows":` + rows + `,"head":` + head + `}`)
	}
	zstdBody := func() []byte {
		raw := binary.AppendUvarint(nil, uint64(len(head)))
		raw = append(raw, head...)
		raw = binary.AppendUvarint(raw, bodyBytes) // a row count far past the limit
		raw = append(raw, make([]byte, bodyBytes)...)
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		out := binary.AppendUvarint(append([]byte(nil), frameMagic...), uint64(len(raw)))
		return enc.EncodeAll(raw, out)
	}
	c := newCodec()
	for _, tc := range []struct {
		name string
		enc  Encoding
		body []byte
		// allowed is the allocation budget of the refusal beyond the body itself; the zstd
		// frame is decompressed whole (its declared length, capped) before its count is read.
		allowed uint64
	}{
		{"json head first", EncodingJSON, jsonBody(true), 1 << 20},
		{"json rows first", EncodingJSON, jsonBody(false), 1 << 20},
		{"zstd", EncodingZstd, zstdBody(), bodyBytes + 1<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var h pageHead
			rows, err := c.decode(t.Context(), tc.enc, tc.body, &h)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadFrame) || rows != nil {
				t.Fatalf("decode = %d rows, %v; want ErrBadFrame", len(rows), err)
			}
			got := after.TotalAlloc - before.TotalAlloc
			t.Logf("refusal allocated %d bytes", got)
			if got > tc.allowed {
				t.Fatalf("refusing the frame allocated %d bytes, more than %d: rows were decoded before they were counted", got, tc.allowed)
			}
		})
	}
}
