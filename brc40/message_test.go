package brc40

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"walletsync/wallet"
)

func ts(s string) time.Time {
	t, err := wallet.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

// sampleReq is a proof request row with every kind of value, including the 0/1 boolean.
func sampleReq() wallet.Row {
	t := wallet.ProvenTxReqs
	r := make(wallet.Row, len(t.Columns))
	set := func(c string, v any) { r[t.Col(c)] = v }
	set("created_at", ts("2026-05-01T10:00:00.123Z"))
	set("updated_at", ts("2026-05-01T10:00:00.373Z"))
	set("provenTxReqId", int64(7))
	set("status", "unmined")
	set("attempts", int64(1))
	set("notified", true)
	set("txid", "ab")
	set("history", `{"notes":[{"what":"x","ü":"é"}]}`)
	set("notify", `{"transactionIds":[2]}`)
	set("rawTx", []byte{0, 1, 255})
	set("wasBroadcast", true)
	set("rebroadcastAttempts", int64(0))
	return r
}

func sampleChunk() SyncChunk {
	user := wallet.Row{ts("2026-01-01T00:00:00Z"), ts("1971-01-01T00:00:00Z"), int64(1), "03aa", "02bb"}
	label := wallet.Row{ts("2026-05-01T10:00:00Z"), ts("2026-05-01T10:00:01Z"), int64(3), int64(1), "café 😀", false}
	return SyncChunk{FromStorageIdentityKey: "02bb", ToStorageIdentityKey: "02cc", UserIdentityKey: "03aa", User: user,
		Rows: map[wallet.TableName][]wallet.Row{wallet.TableProvenTxs: {}, wallet.TableOutputBaskets: {}, wallet.TableOutputTags: {}, wallet.TableTxLabels: {label},
			wallet.TableProvenTxReqs: {sampleReq()}}}
}

func TestAppendRowJSON_JavaScriptForm(t *testing.T) {
	label := func(name string) wallet.Row {
		return wallet.Row{ts("2026-05-01T10:00:00Z"), ts("2026-05-01T10:00:00.5Z"), int64(3), int64(1), name, true}
	}
	for _, tc := range []struct {
		name  string
		table *wallet.Table
		row   wallet.Row
		want  string
	}{
		{"escapes only what JSON.stringify escapes", wallet.TxLabels, label("a\"b\\c\x01\x1f\x7f\u2028<>&é😀\b\f\n\r\t"),
			`{"created_at":"2026-05-01T10:00:00.000Z","updated_at":"2026-05-01T10:00:00.500Z","txLabelId":3,"userId":1,"label":"a\"b\\c\u0001\u001f` + "\x7f\u2028" + `<>&é😀\b\f\n\r\t","isDeleted":true}`},
		{"nulls left out, blobs as number[], wasBroadcast as 0/1", wallet.ProvenTxReqs, sampleReq(),
			`{"created_at":"2026-05-01T10:00:00.123Z","updated_at":"2026-05-01T10:00:00.373Z","provenTxReqId":7,"status":"unmined","attempts":1,"notified":true,"txid":"ab","history":"{\"notes\":[{\"what\":\"x\",\"ü\":\"é\"}]}","notify":"{\"transactionIds\":[2]}","rawTx":[0,1,255],"wasBroadcast":1,"rebroadcastAttempts":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendRowJSON(nil, tc.table, tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAppendRowJSON_Refusals(t *testing.T) {
	r := sampleReq()
	for _, tc := range []struct {
		name    string
		col     string
		v       any
		notJSON bool // also a *JSValueError (ErrNotJSValue)
	}{
		{"null in NOT NULL", "txid", nil, false},
		{"wrong type", "attempts", "1", false},
		{"integer beyond 2^53", "attempts", int64(wallet.MaxJSInt + 1), true},
		{"invalid UTF-8", "status", "a\xffb", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := append(wallet.Row{}, r...)
			bad[wallet.ProvenTxReqs.Col(tc.col)] = tc.v
			_, err := AppendRowJSON(nil, wallet.ProvenTxReqs, bad)
			if !errors.Is(err, wallet.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.col) {
				t.Fatalf("got %v, want an invalid-argument error naming %s", err, tc.col)
			}
			var je *wallet.JSValueError
			if errors.As(err, &je) != tc.notJSON || errors.Is(err, wallet.ErrNotJSValue) != tc.notJSON {
				t.Fatalf("got %v; a *JSValueError (ErrNotJSValue): %v, want %v", err, errors.As(err, &je), tc.notJSON)
			}
		})
	}
}

func TestRowJSONSize_CountsUTF16Units(t *testing.T) {
	base, err := RowJSONSize(wallet.TxLabels, wallet.Row{ts("2026-05-01T10:00:00Z"), ts("2026-05-01T10:00:00Z"), int64(3), int64(1), "", false})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		label string
		extra int64 // UTF-16 units beyond the empty label
	}{{"a", 1}, {"é", 1}, {"日本", 2}, {"😀", 2}, {"\n", 2}, {"\x01", 6}} {
		got, err := RowJSONSize(wallet.TxLabels, wallet.Row{ts("2026-05-01T10:00:00Z"), ts("2026-05-01T10:00:00Z"), int64(3), int64(1), tc.label, false})
		if err != nil {
			t.Fatal(err)
		}
		if got-base != tc.extra {
			t.Errorf("%q: %d units more than an empty label, want %d", tc.label, got-base, tc.extra)
		}
	}
}

func TestSyncChunk_RoundTrip(t *testing.T) {
	c := sampleChunk()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// Present-and-empty arrays stay, untried ones stay out, in Entities order.
	if !strings.Contains(string(b), `"provenTxs":[],"outputBaskets":[],"outputTags":[],"txLabels":[{`) || strings.Contains(string(b), "transactions") {
		t.Fatalf("chunk JSON %s", b)
	}
	var back SyncChunk
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip:\n got  %#v\n want %#v", back, c)
	}
	if c.Complete() {
		t.Fatal("a chunk with rows is complete")
	}
	empty := SyncChunk{Rows: map[wallet.TableName][]wallet.Row{}}
	for _, tb := range wallet.Entities {
		empty.Rows[tb.Name] = []wallet.Row{}
	}
	if !empty.Complete() {
		t.Fatal("all 12 arrays present and empty is not complete")
	}
	delete(empty.Rows, wallet.TableCommissions)
	if empty.Complete() {
		t.Fatal("a chunk missing one array is complete")
	}
}

func TestSyncChunk_UnmarshalRefusals(t *testing.T) {
	good, err := json.Marshal(sampleChunk())
	if err != nil {
		t.Fatal(err)
	}
	req := string(mustRowJSON(t, wallet.ProvenTxReqs, sampleReq()))
	withReq := func(from, to string) string {
		return strings.Replace(string(good), req, strings.Replace(req, from, to, 1), 1)
	}
	for _, tc := range []struct {
		name, input, path string
	}{
		{"unknown array", strings.Replace(string(good), `"provenTxs"`, `"provenTx"`, 1), "provenTx"},
		{"unknown column", withReq(`"status"`, `"statu"`), "provenTxReqs[0].statu"},
		{"null in NOT NULL column", withReq(`"status":"unmined"`, `"status":null`), "provenTxReqs[0].status"},
		{"missing NOT NULL column", withReq(`"status":"unmined",`, ``), "provenTxReqs[0].status"},
		{"base64 for a binary column", withReq(`"rawTx":[0,1,255]`, `"rawTx":"AAH/"`), "provenTxReqs[0].rawTx"},
		{"byte value above 255", withReq(`[0,1,255]`, `[0,1,256]`), "provenTxReqs[0].rawTx"},
		{"signed byte", withReq(`[0,1,255]`, `[0,-1,255]`), "provenTxReqs[0].rawTx"},
		{"fraction for an integer", withReq(`"attempts":1`, `"attempts":1.5`), "provenTxReqs[0].attempts"},
		{"integer beyond 2^53", withReq(`"attempts":1`, `"attempts":9007199254740993`), "provenTxReqs[0].attempts"},
		{"boolean as 2", withReq(`"wasBroadcast":1`, `"wasBroadcast":2`), "provenTxReqs[0].wasBroadcast"},
		{"time that is no time", withReq(`"2026-05-01T10:00:00.123Z"`, `"yesterday"`), "provenTxReqs[0].created_at"},
		{"JSON column that is not JSON", withReq(`"notify":"{\"transactionIds\":[2]}"`, `"notify":"{"`), "provenTxReqs[0].notify"},
		{"key given twice", withReq(`"attempts":1`, `"attempts":1,"attempts":2`), "provenTxReqs[0].attempts"},
		{"row that is no object", strings.Replace(string(good), `"provenTxs":[]`, `"provenTxs":[1]`, 1), "provenTxs[0]"},
		{"missing userIdentityKey", strings.Replace(string(good), `"userIdentityKey":"03aa",`, ``, 1), "userIdentityKey"},
		{"data after the message", string(good) + `{}`, "$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c SyncChunk
			err := c.UnmarshalJSON([]byte(tc.input))
			var me *wallet.SyncMessageError
			if !errors.As(err, &me) || me.Path != tc.path || !errors.Is(err, wallet.ErrBadSyncMessage) || !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("got %v, want a *SyncMessageError at %s", err, tc.path)
			}
		})
	}
	t.Run("over the frame ceiling", func(t *testing.T) {
		var c SyncChunk
		big := make([]byte, wallet.MaxFrameBytes+1)
		if err := c.UnmarshalJSON(big); !errors.Is(err, wallet.ErrBadSyncMessage) {
			t.Fatalf("got %v", err)
		}
	})
}

func mustRowJSON(tb testing.TB, t *wallet.Table, r wallet.Row) []byte {
	tb.Helper()
	b, err := AppendRowJSON(nil, t, r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestSyncChunk_UnmarshalTolerates(t *testing.T) {
	good, err := json.Marshal(sampleChunk())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a toolbox 1.x proof request takes the column defaults", func(t *testing.T) {
		in := strings.Replace(string(good), `,"wasBroadcast":1,"rebroadcastAttempts":0`, ``, 1)
		var c SyncChunk
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		r := c.Rows[wallet.TableProvenTxReqs][0]
		if r[wallet.ProvenTxReqs.Col("wasBroadcast")] != false || r[wallet.ProvenTxReqs.Col("rebroadcastAttempts")] != int64(0) {
			t.Fatalf("defaults: %v", r)
		}
	})
	t.Run("null arrays and user are absent", func(t *testing.T) {
		in := `{"fromStorageIdentityKey":"a","toStorageIdentityKey":"b","userIdentityKey":"c","user":null,"provenTxs":null,"outputs":[]}`
		var c SyncChunk
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		want := SyncChunk{FromStorageIdentityKey: "a", ToStorageIdentityKey: "b", UserIdentityKey: "c", Rows: map[wallet.TableName][]wallet.Row{wallet.TableOutputs: {}}}
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("got %#v", c)
		}
	})
	t.Run("null in a nullable column", func(t *testing.T) {
		in := strings.Replace(string(good), `"txid":"ab"`, `"txid":"ab","batch":null`, 1)
		var c SyncChunk
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		if r := c.Rows[wallet.TableProvenTxReqs][0]; r[wallet.ProvenTxReqs.Col("batch")] != nil {
			t.Fatalf("batch %v", r[wallet.ProvenTxReqs.Col("batch")])
		}
	})
	t.Run("booleans as 0/1 anywhere", func(t *testing.T) {
		in := strings.Replace(string(good), `"isDeleted":false`, `"isDeleted":0`, 1)
		var c SyncChunk
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		if c.Rows[wallet.TableTxLabels][0][wallet.TxLabels.Col("isDeleted")] != false {
			t.Fatal("0 did not decode as false")
		}
	})
}

func TestRequestSyncChunkArgs_JSON(t *testing.T) {
	since := ts("2026-05-01T10:00:00.5Z")
	st := SyncState{StorageIdentityKey: "02bb", SyncMap: NewSyncMap(), When: &since}
	st.SyncMap.Entity(wallet.Outputs).Count = 4
	a := st.MakeRequestSyncChunkArgs("03aa", "02cc", 0, 0)
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	// The toolbox's makeRequestSyncChunkArgs key order, its defaults, offsets from counts.
	want := `{"identityKey":"03aa","maxRoughSize":10000000,"maxItems":1000,"offsets":[` +
		`{"name":"provenTx","offset":0},{"name":"outputBasket","offset":0},{"name":"outputTag","offset":0},{"name":"txLabel","offset":0},` +
		`{"name":"transaction","offset":0},{"name":"output","offset":4},{"name":"txLabelMap","offset":0},{"name":"outputTagMap","offset":0},` +
		`{"name":"certificate","offset":0},{"name":"certificateField","offset":0},{"name":"commission","offset":0},{"name":"provenTxReq","offset":0}],` +
		`"since":"2026-05-01T10:00:00.500Z","fromStorageIdentityKey":"02bb","toStorageIdentityKey":"02cc"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back RequestSyncChunkArgs
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Fatalf("round trip: %+v", back)
	}
	for _, tc := range []struct {
		name, input, path string
	}{
		{"offset named out of order", strings.Replace(want, `"name":"outputTag"`, `"name":"txLabel"`, 1), "offsets[2].name"},
		{"13 offsets", strings.Replace(want, `],"since"`, `,{"name":"provenTx","offset":0}],"since"`, 1), "offsets"},
		{"negative offset", strings.Replace(want, `"offset":4`, `"offset":-4`, 1), "offsets[5].offset"},
		{"no items", strings.Replace(want, `"maxItems":1000`, `"maxItems":0`, 1), "maxItems"},
		{"unknown key", strings.Replace(want, `"maxItems"`, `"userId":1,"maxItems"`, 1), "userId"},
		{"missing offsets", strings.Replace(want, `"offsets"`, `"x"`, 1), "x"},
		{"null identity key", strings.Replace(want, `"identityKey":"03aa"`, `"identityKey":null`, 1), "identityKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a RequestSyncChunkArgs
			err := json.Unmarshal([]byte(tc.input), &a)
			var me *wallet.SyncMessageError
			if !errors.As(err, &me) || me.Path != tc.path {
				t.Fatalf("got %v, want a *SyncMessageError at %s", err, tc.path)
			}
		})
	}
	t.Run("fewer offsets and a null since", func(t *testing.T) {
		in := `{"identityKey":"03aa","maxRoughSize":0,"maxItems":1,"offsets":[{"name":"provenTx","offset":2}],"since":null,"fromStorageIdentityKey":"a","toStorageIdentityKey":"b"}`
		var a RequestSyncChunkArgs
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			t.Fatal(err)
		}
		if a.Since != nil || len(a.Offsets) != 1 || a.Offsets[0].Offset != 2 {
			t.Fatalf("%+v", a)
		}
	})
}

func TestProcessSyncChunkResult_JSON(t *testing.T) {
	at := ts("2026-05-01T10:00:00Z")
	for _, tc := range []struct {
		r    ProcessSyncChunkResult
		want string
	}{
		{ProcessSyncChunkResult{Done: true, MaxUpdatedAt: &at, Updates: 1, Inserts: 2}, `{"done":true,"maxUpdated_at":"2026-05-01T10:00:00.000Z","updates":1,"inserts":2}`},
		{ProcessSyncChunkResult{}, `{"done":false,"updates":0,"inserts":0}`},
		{ProcessSyncChunkResult{Error: &SyncError{Name: "WERR_INTERNAL", Message: "boom"}}, `{"done":false,"updates":0,"inserts":0,"error":{"isError":true,"name":"WERR_INTERNAL","message":"boom"}}`},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
		var back ProcessSyncChunkResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, tc.r) {
			t.Errorf("round trip %+v", back)
		}
		if (tc.r.Error != nil) != errors.Is(back.Err(), wallet.ErrDestinationFailed) {
			t.Errorf("Err() = %v", back.Err())
		}
	}
	var r ProcessSyncChunkResult
	if err := json.Unmarshal([]byte(`{"done":true,"updates":0}`), &r); !errors.Is(err, wallet.ErrBadSyncMessage) {
		t.Fatalf("a result without inserts: %v", err)
	}
}

func TestSyncMap_ToolboxText(t *testing.T) {
	// JSON.stringify(createSyncMap()), as the toolbox stores a new sync state.
	fresh := `{"provenTx":{"entityName":"provenTx","idMap":{},"count":0},"outputBasket":{"entityName":"outputBasket","idMap":{},"count":0},"transaction":{"entityName":"transaction","idMap":{},"count":0},"provenTxReq":{"entityName":"provenTxReq","idMap":{},"count":0},"txLabel":{"entityName":"txLabel","idMap":{},"count":0},"txLabelMap":{"entityName":"txLabelMap","idMap":{},"count":0},"output":{"entityName":"output","idMap":{},"count":0},"outputTag":{"entityName":"outputTag","idMap":{},"count":0},"outputTagMap":{"entityName":"outputTagMap","idMap":{},"count":0},"certificate":{"entityName":"certificate","idMap":{},"count":0},"certificateField":{"entityName":"certificateField","idMap":{},"count":0},"commission":{"entityName":"commission","idMap":{},"count":0}}`
	b, err := json.Marshal(NewSyncMap())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != fresh {
		t.Fatalf("got  %s\nwant %s", b, fresh)
	}
	m := NewSyncMap()
	at := ts("2026-05-01T10:00:00.5Z")
	e := m.Entity(wallet.Transactions)
	e.IDMap[10], e.IDMap[2], e.MaxUpdatedAt, e.Count = 3, 4, &at, 7
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// What node prints for the same entry: integer keys ascending, maxUpdated_at appended.
	if want := `"transaction":{"entityName":"transaction","idMap":{"2":4,"10":3},"count":7,"maxUpdated_at":"2026-05-01T10:00:00.500Z"}`; !strings.Contains(string(b), want) {
		t.Fatalf("got %s\nwant it to contain %s", b, want)
	}
	var back SyncMap
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip %v", back)
	}
	if err := json.Unmarshal([]byte(`{}`), &back); err != nil || !reflect.DeepEqual(back, NewSyncMap()) {
		t.Fatalf("{} gives %v, %v", back, err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"unknown entity", `"commission":`, `"commissions":`},
		{"non-canonical id", `"2":4`, `"02":4`},
		{"entity named for another", `"entityName":"transaction"`, `"entityName":"output"`},
		{"missing entity", `,"commission":{"entityName":"commission","idMap":{},"count":0}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(string(b), tc.from, tc.to, 1)
			if in == string(b) {
				t.Fatal("the test did not change the input")
			}
			var m SyncMap
			if err := json.Unmarshal([]byte(in), &m); !errors.Is(err, wallet.ErrBadSyncMessage) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestSyncState_RowRoundTrip(t *testing.T) {
	when := ts("2026-05-01T10:00:00Z")
	sats := int64(5)
	st := SyncState{SyncStateID: 2, CreatedAt: when, UpdatedAt: when, UserID: 1, StorageIdentityKey: "02bb", StorageName: "b",
		Status: "unknown", RefNum: "r", SyncMap: NewSyncMap(), When: &when, Satoshis: &sats, ErrorOther: `{"code":"x"}`}
	r, err := st.Row()
	if err != nil {
		t.Fatal(err)
	}
	back, err := SyncStateFromRow(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("round trip:\n got  %+v\n want %+v", back, st)
	}
	r[wallet.SyncStates.Col("syncMap")] = ""
	if back, err = SyncStateFromRow(r); err != nil || !reflect.DeepEqual(back.SyncMap, NewSyncMap()) {
		t.Fatalf("an empty syncMap: %v %v", back.SyncMap, err)
	}
}

// FuzzDecodeSyncChunk holds the chunk decoder, which reads another process's bytes, to three
// properties: it never panics, it refuses only with a *SyncMessageError, and what it accepts
// encodes to a text that decodes to the same chunk and encodes to the same text again.
func FuzzDecodeSyncChunk(f *testing.F) {
	good, err := json.Marshal(sampleChunk())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"fromStorageIdentityKey":"a","toStorageIdentityKey":"b","userIdentityKey":"c"}`))
	f.Add([]byte(`{"fromStorageIdentityKey":"a","toStorageIdentityKey":"b","userIdentityKey":"c","outputs":[{"outputId":1}]}`))
	f.Add([]byte(`{"fromStorageIdentityKey":"a","toStorageIdentityKey":"b","userIdentityKey":"c","user":null,"provenTxs":null}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c SyncChunk
		err := c.UnmarshalJSON(data)
		if err != nil {
			var me *wallet.SyncMessageError
			if !errors.As(err, &me) {
				t.Fatalf("refused with %T %v, not a *SyncMessageError", err, err)
			}
			return
		}
		text, err := json.Marshal(c)
		if err != nil {
			// Accepted values that have no toolbox form (invalid UTF-8 text) are refused on
			// the way out, never sent altered.
			if !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("encode: %v", err)
			}
			return
		}
		var back SyncChunk
		if err := json.Unmarshal(text, &back); err != nil {
			t.Fatalf("decode own encoding %s: %v", text, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("decode(encode(c)) != c:\n%#v\n%#v", back, c)
		}
		again, err := json.Marshal(back)
		if err != nil || string(again) != string(text) {
			t.Fatalf("encoding is not a fixed point: %s vs %s (%v)", again, text, err)
		}
	})
}

func ExampleSyncChunk_MarshalJSON() {
	c := SyncChunk{FromStorageIdentityKey: "02bb", ToStorageIdentityKey: "02cc", UserIdentityKey: "03aa",
		Rows: map[wallet.TableName][]wallet.Row{wallet.TableProvenTxs: {}}}
	b, _ := json.Marshal(c)
	fmt.Println(string(b))
	// Output: {"fromStorageIdentityKey":"02bb","toStorageIdentityKey":"02cc","userIdentityKey":"03aa","provenTxs":[]}
}

// FuzzSyncMap feeds arbitrary text to the sync map decoder: a toolbox peer's sync_states row
// carries it, so it is outside bytes. It refuses with ErrBadSyncMessage or decodes to a map
// whose encoding decodes back to the same map.
func FuzzSyncMap(f *testing.F) {
	m := NewSyncMap()
	at := ts("2026-05-01T10:00:00.5Z")
	e := m.Entity(wallet.Transactions)
	e.IDMap[10], e.IDMap[2], e.MaxUpdatedAt, e.Count = 3, 4, &at, 7
	full, err := json.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"transaction":{"entityName":"transaction","idMap":{"1":-1},"count":0}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m SyncMap
		if err := m.UnmarshalJSON(data); err != nil {
			if !errors.Is(err, wallet.ErrBadSyncMessage) {
				t.Fatalf("refused with %v, not ErrBadSyncMessage", err)
			}
			return
		}
		text, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("encode an accepted map: %v", err)
		}
		var back SyncMap
		if err := back.UnmarshalJSON(text); err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("decode(encode(m)) = %v, %v; want %v", back, err, m)
		}
	})
}

// A consumer merges a chunk only for the request its state makes next: a repeat of one it
// merged, or one of a state that moved on, is a checkpoint conflict.
func TestSyncState_Answers(t *testing.T) {
	since := ts("2026-05-01T10:00:00.5Z")
	later := ts("2026-05-01T10:00:01Z")
	st := SyncState{StorageIdentityKey: "02bb", SyncMap: NewSyncMap(), When: &since}
	st.SyncMap.Entity(wallet.Outputs).Count = 4
	next := func() RequestSyncChunkArgs { return st.MakeRequestSyncChunkArgs("03aa", "02cc", 0, 0) }
	tests := []struct {
		name string
		edit func(*RequestSyncChunkArgs)
		ok   bool
	}{
		{"the next request", func(*RequestSyncChunkArgs) {}, true},
		{"the same since to the millisecond", func(a *RequestSyncChunkArgs) { s := since.Add(300 * time.Microsecond); a.Since = &s }, true},
		{"fewer offsets", func(a *RequestSyncChunkArgs) { a.Offsets = a.Offsets[:6] }, true},
		{"a repeat after the state moved", func(a *RequestSyncChunkArgs) { a.Offsets[5].Offset = 0 }, false},
		{"an offset past the state", func(a *RequestSyncChunkArgs) { a.Offsets[0].Offset = 1 }, false},
		{"another since", func(a *RequestSyncChunkArgs) { a.Since = &later }, false},
		{"no since for a state that has one", func(a *RequestSyncChunkArgs) { a.Since = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := next()
			tc.edit(&a)
			err := st.Answers(a)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, wallet.ErrCheckpointConflict)) {
				t.Fatalf("Answers: %v, want ok %v (else a checkpoint conflict)", err, tc.ok)
			}
		})
	}
	fresh := SyncState{SyncMap: NewSyncMap()}
	if err := fresh.Answers(fresh.MakeRequestSyncChunkArgs("03aa", "02cc", 0, 0)); err != nil {
		t.Fatalf("a new state refuses its first request: %v", err)
	}
}
