package brc38

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// decodeAll decodes a document and returns the rows emitted per table.
func decodeAll(t testing.TB, doc []byte, opts DecodeOptions) (Document, map[wallet.TableName][]wallet.Row, error) {
	t.Helper()
	rows := map[wallet.TableName][]wallet.Row{}
	d, err := Decode(context.Background(), bytes.NewReader(doc), func(tb *wallet.Table, r wallet.Row) error {
		rows[tb.Name] = append(rows[tb.Name], r)
		return nil
	}, opts)
	return d, rows, err
}

// reencode encodes decoded rows again, through a view that serves exactly them: a decoder
// that loses nothing gives back the bytes it read.
func reencode(t testing.TB, d Document, rows map[wallet.TableName][]wallet.Row) []byte {
	t.Helper()
	v := &synthView{identity: d.IdentityKey, user: d.User, rows: map[wallet.TableName]func(int) wallet.Row{}}
	for name, rs := range rows {
		v.rows[name] = func(i int) wallet.Row {
			if i < len(rs) {
				return rs[i]
			}
			return nil
		}
	}
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), v, d.Source, d.IdentityKey, d.ExportedAt, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecode_RoundTrip decodes walletsync's own documents (the small fixture, the tricky
// values, the toolbox fixture) and checks that every row equals the store's and that the
// rows encode back to the same bytes.
func TestDecode_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(testing.TB) (string, string)
	}{
		{"small", func(tb testing.TB) (string, string) {
			return fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
		}},
		{"tricky-values", mustTrickyStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := tc.store(t)
			doc, stats := encodeFile(t, path, id, false)
			d, rows, err := decodeAll(t, doc, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := backuptest.WithView(t, path, false, func(v wallet.View, s wallet.Settings) (map[wallet.TableName][]wallet.Row, error) {
				m := map[wallet.TableName][]wallet.Row{}
				for _, tb := range append([]*wallet.Table{wallet.Users}, DocumentTables...) {
					m[tb.Name] = readTable(t, v, tb, id)
				}
				if !reflect.DeepEqual(d.Source, s) || !d.ExportedAt.Equal(backuptest.ExportedAt) || d.IdentityKey != id {
					t.Errorf("header: source %+v exported %v identity %s\nwant     %+v %v %s", d.Source, d.ExportedAt, d.IdentityKey, s, backuptest.ExportedAt, id)
				}
				return m, nil
			})
			if !reflect.DeepEqual(d.User, want[wallet.TableUsers][0]) || d.Rows[wallet.TableUsers] != 1 {
				t.Errorf("user %v, want %v", d.User, want[wallet.TableUsers][0])
			}
			for _, tb := range DocumentTables {
				got := rows[tb.Name]
				if int64(len(got)) != stats.Rows[tb.Name] || d.Rows[tb.Name] != stats.Rows[tb.Name] {
					t.Errorf("%s: %d rows emitted, %d counted, %d encoded", tb.Name, len(got), d.Rows[tb.Name], stats.Rows[tb.Name])
				}
				sameRows(t, tb, got, want[tb.Name])
			}
			backuptest.RequireSameBytes(t, reencode(t, d, rows), doc)
		})
	}
}

// sameRows compares decoded rows with stored ones in any order (certificate fields differ
// in order between the store's key and the document), JSON-text columns as the values
// JavaScript reads from them (so -0 equals 0, as JSON.stringify writes it).
func sameRows(t testing.TB, tb *wallet.Table, got, want []wallet.Row) {
	t.Helper()
	norm := func(rs []wallet.Row) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			r = append(wallet.Row(nil), r...)
			for j, c := range tb.Columns {
				if s, ok := r[j].(string); ok && c.Kind == wallet.KindJSON {
					sc := scanner{r: bufio.NewReader(strings.NewReader(s)), maxString: 1 << 20, maxDepth: 64}
					v, err := sc.parseValue(1)
					if err != nil {
						t.Fatalf("%s.%s: %v", tb.Name, c.Name, err)
					}
					text, _ := appendJSValue(nil, &v, true)
					r[j] = string(text)
				}
			}
			b, _ := json.Marshal(toolboxpeer.DumpRows(tb, []wallet.Row{r})[0])
			out[i] = string(b)
		}
		return out
	}
	g, w := norm(got), norm(want)
	if len(g) != len(w) {
		t.Errorf("%s: %d rows, want %d", tb.Name, len(g), len(w))
		return
	}
	for _, x := range g {
		if !strings.Contains(strings.Join(w, "\n"), x) {
			t.Errorf("%s: decoded row not in the store:\n %s", tb.Name, x)
			return
		}
	}
}

// TestDecode_ToolboxDocument decodes what the toolbox's exportBRC38Json writes for its own
// wallet: it validates, and its rows encode back to the toolbox's bytes.
func TestDecode_ToolboxDocument(t *testing.T) {
	t.Parallel()
	path, id := fixtures.ToolboxStore(t)
	doc := backuptest.ToolboxExport38(t, path, id)
	d, rows, err := decodeAll(t, doc, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.IdentityKey != id || d.Rows[wallet.TableCertificateFields] != 10 || d.Rows[wallet.TableTransactions] != 5 {
		t.Fatalf("decoded %s with %v", d.IdentityKey, d.Rows)
	}
	backuptest.RequireSameBytes(t, reencode(t, d, rows), doc)
}

// TestDecode_BaseDocumentIsValidForToolbox anchors the refusal tests below: the document
// they break one rule at a time restores in the toolbox, and decodes here.
func TestDecode_BaseDocumentIsValidForToolbox(t *testing.T) {
	t.Parallel()
	doc := backuptest.Canonical(t, backuptest.BaseDoc())
	if _, _, err := decodeAll(t, doc, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "base.brc38.json")
	if err := os.WriteFile(in, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "target.sqlite")
	toolboxpeer.Run(t, nil, "create", "--db", db, "--chain", "test", "--sik", "target", "--name", "target")
	var res struct{ Inserts int }
	toolboxpeer.Run(t, &res, "import38", "--db", db, "--in", in, "--mode", "restore")
	if res.Inserts != 14 {
		t.Fatalf("toolbox restore inserted %d rows, want 14", res.Inserts)
	}
}

func TestDecode_AcceptsNonCanonicalDocuments(t *testing.T) {
	doc := backuptest.BaseDoc()
	_, want, err := decodeAll(t, backuptest.Canonical(t, doc), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Unknown keys at every level, with nested values; the user first; whitespace; another
	// key order; escapes where none are needed; numbers written differently.
	doc["future"] = map[string]any{"a": []any{int64(1), "x", map[string]any{"deep": true}}}
	doc["tables"].(map[string]any)["futureTable"] = []any{map[string]any{"id": int64(1)}}
	backuptest.DocRow(doc, "outputs", 0)["futureColumn"] = map[string]any{"k": []any{}}
	user := backuptest.AppendCanonical(t, nil, doc["user"])
	delete(doc, "user")
	pretty, err := json.MarshalIndent(doc, " ", "\t")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(pretty), `"brc": 38`, `"brc": 3.8e1`, 1)
	text = strings.Replace(text, `"label": "payment"`, `"label": "pa\u0079ment"`, 1)
	text = strings.Replace(text, "{", "{ \"user\" :\n"+string(user)+" ,", 1)
	d, got, err := decodeAll(t, []byte(text+"\r\n"), DecodeOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !reflect.DeepEqual(got, want) || d.UserID != 1 {
		t.Fatalf("rows of the non-canonical document differ from the canonical one's")
	}
}

func TestDecode_FillsSQLiteDefaultsForOmittedColumns(t *testing.T) {
	doc := backuptest.BaseDoc()
	delete(backuptest.DocRow(doc, "certificateFields", 0), "masterKey")
	delete(backuptest.DocRow(doc, "provenTxReqs", 0), "wasBroadcast")
	delete(backuptest.DocRow(doc, "provenTxReqs", 0), "rebroadcastAttempts")
	_, rows, err := decodeAll(t, backuptest.Canonical(t, doc), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := rows[wallet.TableProvenTxReqs][0]
	if rows[wallet.TableCertificateFields][0][wallet.CertificateFields.Col("masterKey")] != "" ||
		req[wallet.ProvenTxReqs.Col("wasBroadcast")] != false || req[wallet.ProvenTxReqs.Col("rebroadcastAttempts")] != int64(0) {
		t.Fatalf("defaults not filled: %v / %v", rows[wallet.TableCertificateFields][0], req)
	}
}

// TestDecode_RefusesInvalidDocuments breaks one rule per case and checks the typed error
// and the JSON path it names.
func TestDecode_RefusesInvalidDocuments(t *testing.T) {
	type tcase struct {
		name  string
		edit  func(doc map[string]any) // applied to baseDoc before it is serialized
		text  func(doc []byte) []byte  // applied to the serialized document
		opts  DecodeOptions
		path  string
		limit bool
	}
	set := func(plural, key string, v any) func(map[string]any) {
		return func(doc map[string]any) { backuptest.DocRow(doc, plural, 0)[key] = v }
	}
	replace := func(old, new string) func([]byte) []byte {
		return func(doc []byte) []byte {
			if !bytes.Contains(doc, []byte(old)) {
				panic("test document lacks " + old)
			}
			return bytes.Replace(doc, []byte(old), []byte(new), 1)
		}
	}
	cases := []tcase{
		{name: "NotJSON", text: func([]byte) []byte { return []byte("{brc: 38}") }, path: ""},
		{name: "NotAnObject", text: func([]byte) []byte { return []byte("[]") }, path: ""},
		{name: "Empty", text: func([]byte) []byte { return nil }, path: ""},
		{name: "Truncated", text: func(doc []byte) []byte { return doc[:bytes.Index(doc, []byte(`"providedBy":"storage"`))+17] }, path: "tables.outputs[0].providedBy"},
		{name: "TruncatedBetweenValues", text: func(doc []byte) []byte { return doc[:bytes.Index(doc, []byte(`,"providedBy":"storage"`))] }, path: "tables.outputs[0]"},
		{name: "TrailingData", text: func(doc []byte) []byte { return append(doc, " {}"...) }, path: ""},
		{name: "NullAtTopLevel", edit: func(doc map[string]any) { doc["title"] = backuptest.JSNull }, path: "title"},
		{name: "NullInRow", edit: set("transactions", "description", backuptest.JSNull), path: "tables.transactions[0].description"},
		{name: "NullInJSONColumn", edit: set("provenTxReqs", "history", map[string]any{"notes": []any{backuptest.JSNull}}), path: "tables.provenTxReqs[0].history.notes[0]"},
		{name: "NullInUnknownKey", edit: set("outputs", "future", map[string]any{"a": []any{int64(1), backuptest.JSNull}}), path: "tables.outputs[0].future.a[1]"},
		{name: "NullRow", edit: func(doc map[string]any) { doc["tables"].(map[string]any)["txLabels"] = []any{backuptest.JSNull} }, path: "tables.txLabels[0]"},
		{name: "WrongBRC", edit: func(doc map[string]any) { doc["brc"] = int64(39) }, path: "brc"},
		{name: "BRCAsString", edit: func(doc map[string]any) { doc["brc"] = "38" }, path: "brc"},
		{name: "WrongTitle", edit: func(doc map[string]any) { doc["title"] = "User Wallet Data" }, path: "title"},
		{name: "WrongFormatVersion", edit: func(doc map[string]any) { doc["formatVersion"] = int64(2) }, path: "formatVersion"},
		{name: "MissingTopLevelKey", edit: func(doc map[string]any) { delete(doc, "user") }, path: "user"},
		{name: "MissingTable", edit: func(doc map[string]any) { delete(doc["tables"].(map[string]any), "syncStates") }, path: "tables.syncStates"},
		{name: "TableNotAnArray", edit: func(doc map[string]any) { doc["tables"].(map[string]any)["outputs"] = map[string]any{} }, path: "tables.outputs"},
		{name: "RepeatedKey", text: replace(`"label":"payment"`, `"label":"payment","label":"again"`), path: "tables.txLabels[0].label"},
		{name: "BadTimeNoMilliseconds", edit: set("outputs", "created_at", "2026-04-23T20:00:00Z"), path: "tables.outputs[0].created_at"},
		{name: "BadTimeFebruary30", edit: func(doc map[string]any) { doc["exportedAt"] = "2026-02-30T00:00:00.000Z" }, path: "exportedAt"},
		{name: "BadTimeHour24", edit: set("syncStates", "when", "2026-04-23T24:00:00.000Z"), path: "tables.syncStates[0].when"},
		{name: "BadTimeOffset", edit: func(doc map[string]any) {
			backuptest.DocRow(doc, "certificates", 0)["updated_at"] = "2026-04-23T20:00:00.000+00:00"
		}, path: "tables.certificates[0].updated_at"},
		{name: "BadBase64Length", edit: set("transactions", "rawTx", "AQIDB"), path: "tables.transactions[0].rawTx"},
		{name: "BadBase64Unpadded", edit: set("provenTxs", "merklePath", "AQI"), path: "tables.provenTxs[0].merklePath"},
		{name: "BadBase64Whitespace", edit: set("commissions", "lockingScript", "dq\nk="), path: "tables.commissions[0].lockingScript"},
		{name: "BadBase64PaddingInside", edit: set("outputs", "lockingScript", "d=k="), path: "tables.outputs[0].lockingScript"},
		{name: "BadBase64URLAlphabet", edit: set("provenTxReqs", "rawTx", "AQ-_"), path: "tables.provenTxReqs[0].rawTx"},
		{name: "IntegerAsString", edit: set("outputs", "satoshis", "5000"), path: "tables.outputs[0].satoshis"},
		{name: "IntegerWithFraction", edit: set("outputs", "vout", 0.5), path: "tables.outputs[0].vout"},
		{name: "IntegerBeyond2To53", text: replace(`"satoshis":5000,"status"`, `"satoshis":9007199254740993,"status"`), path: "tables.transactions[0].satoshis"},
		{name: "BooleanAsString", edit: set("outputs", "spendable", "true"), path: "tables.outputs[0].spendable"},
		{name: "BooleanAsTwo", edit: set("certificates", "isDeleted", int64(2)), path: "tables.certificates[0].isDeleted"},
		{name: "JSONColumnAsString", edit: set("provenTxReqs", "notify", `{"transactionIds":[1]}`), path: "tables.provenTxReqs[0].notify"},
		{name: "TextAsNumber", edit: set("txLabels", "label", int64(7)), path: "tables.txLabels[0].label"},
		{name: "MissingRequiredColumn", edit: func(doc map[string]any) { delete(backuptest.DocRow(doc, "transactions", 0), "status") }, path: "tables.transactions[0].status"},
		{name: "MissingSourceChain", edit: func(doc map[string]any) { delete(doc["sourceStorage"].(map[string]any), "chain") }, path: "sourceStorage.chain"},
		{name: "LoneSurrogate", text: replace(`"label":"payment"`, `"label":"pay\ud800ment"`), path: "tables.txLabels[0].label"},
		{name: "InvalidUTF8", text: replace(`"label":"payment"`, "\"label\":\"pay\xffment\""), path: "tables.txLabels[0].label"},
		{name: "ControlCharacter", text: replace(`"label":"payment"`, "\"label\":\"pay\tment\""), path: "tables.txLabels[0].label"},
		{name: "DuplicateID", edit: func(doc map[string]any) {
			tables := doc["tables"].(map[string]any)
			dup := map[string]any{}
			for k, v := range backuptest.DocRow(doc, "outputs", 0) {
				dup[k] = v
			}
			dup["vout"] = int64(1)
			tables["outputs"] = append(tables["outputs"].([]any), dup)
		}, path: "tables.outputs[1].outputId"},
		{name: "DuplicateIDOutOfOrder", edit: func(doc map[string]any) {
			tables := doc["tables"].(map[string]any)
			rows := tables["txLabels"].([]any)
			l2, l3 := map[string]any{}, map[string]any{}
			for k, v := range rows[0].(map[string]any) {
				l2[k], l3[k] = v, v
			}
			l2["txLabelId"], l2["label"] = int64(5), "five"
			l3["label"] = "again"
			tables["txLabels"] = []any{l2, rows[0], l3}
		}, path: "tables.txLabels[2].txLabelId"},
		{name: "UserIDMismatch", edit: set("outputs", "userId", int64(2)), path: "tables.outputs[0].userId"},
		{name: "UserIDMismatchEverywhere", edit: func(doc map[string]any) {
			for _, plural := range []string{"certificateFields", "certificates", "commissions", "outputBaskets", "outputTags", "outputs", "syncStates", "transactions", "txLabels"} {
				backuptest.DocRow(doc, plural, 0)["userId"] = int64(7)
			}
		}, path: "tables.certificateFields[0].userId"},
		{name: "OversizeString", opts: DecodeOptions{MaxValueBytes: 1024}, edit: set("outputs", "customInstructions", strings.Repeat("x", 1025)), path: "tables.outputs[0].customInstructions", limit: true},
		{name: "OversizeBase64", opts: DecodeOptions{MaxValueBytes: 1024}, edit: set("transactions", "inputBEEF", strings.Repeat("AAAA", 300)), path: "tables.transactions[0].inputBEEF", limit: true},
		{name: "OversizeUnknownValue", opts: DecodeOptions{MaxValueBytes: 1024}, edit: func(doc map[string]any) { doc["future"] = strings.Repeat("y", 2000) }, path: "future", limit: true},
		{name: "OversizeRow", opts: DecodeOptions{MaxRowBytes: 4096}, edit: set("outputs", "lockingScript", strings.Repeat("AAAA", 600)), path: "tables.outputs[0]", limit: true},
		{name: "DeepNesting", opts: DecodeOptions{MaxDepth: 16}, edit: set("syncStates", "syncMap", nested(20)), path: "tables.syncStates[0].syncMap" + strings.Repeat(".n[0]", 6), limit: true},
		{name: "DeepNestingUnknown", edit: func(doc map[string]any) { doc["future"] = nested(100) }, path: "future" + strings.Repeat(".n[0]", 31) + ".n", limit: true},
		{name: "ProofRequestTxidMatchesNoTransaction", edit: set("provenTxReqs", "txid", strings.Repeat("0", 64)), path: "tables.provenTxReqs[0].txid"},
	}
	// Every reference kind, dangling.
	for _, tb := range DocumentTables {
		for _, ref := range tb.Refs {
			cases = append(cases, tcase{name: "Dangling/" + tb.Plural + "." + ref.Column, edit: set(tb.Plural, ref.Column, int64(99)),
				path: "tables." + tb.Plural + "[0]." + ref.Column})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := backuptest.BaseDoc()
			if tc.edit != nil {
				tc.edit(doc)
			}
			text := backuptest.Canonical(t, doc)
			if tc.text != nil {
				text = tc.text(text)
			}
			emitted := 0
			_, err := Decode(context.Background(), bytes.NewReader(text), func(*wallet.Table, wallet.Row) error { emitted++; return nil }, tc.opts)
			var de *DocumentError
			if !errors.As(err, &de) || !errors.Is(err, ErrInvalidDocument) || errors.Is(err, ErrDocumentLimit) != tc.limit {
				t.Fatalf("Decode: %v\nwant a *DocumentError (limit %v)", err, tc.limit)
			}
			if de.Path != tc.path {
				t.Fatalf("error at %q, want %q: %v", de.Path, tc.path, err)
			}
			if strings.Contains(err.Error(), "payment") && tc.name != "RepeatedKey" {
				t.Errorf("the error quotes a value: %v", err)
			}
		})
	}
}

// nested returns an object nested depth levels deep.
func nested(depth int) map[string]any {
	v := map[string]any{}
	for range depth {
		v = map[string]any{"n": []any{v}}
	}
	return v
}

func TestDecode_ReadErrorsPassThrough(t *testing.T) {
	boom := errors.New("disk gone")
	doc := backuptest.Canonical(t, backuptest.BaseDoc())
	_, err := Decode(context.Background(), &errAfter{r: bytes.NewReader(doc[:100]), err: boom}, nil, DecodeOptions{})
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalidDocument) {
		t.Fatalf("Decode over a failing reader: %v, want the read error itself", err)
	}
}

// errAfter reads r, then fails with err instead of ending.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		return n, e.err
	}
	return n, nil
}

func TestDecode_StopsOnCancelAndEmitError(t *testing.T) {
	path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	doc, _ := encodeFile(t, path, id, false)
	stop := errors.New("staging full")
	_, err := Decode(context.Background(), bytes.NewReader(doc), func(*wallet.Table, wallet.Row) error { return stop }, DecodeOptions{})
	if !errors.Is(err, stop) {
		t.Fatalf("Decode with a failing emit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Decode(ctx, bytes.NewReader(doc), nil, DecodeOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decode with a cancelled context: %v", err)
	}
}

// FuzzDecodeBRC38 feeds the decoder arbitrary bytes, seeded with real documents and broken
// ones: it must never panic, must fail only with a *DocumentError, and must emit exactly the
// rows it counts when it accepts a document. The limits are small so that every input is
// cheap.
func FuzzDecodeBRC38(f *testing.F) {
	base := backuptest.Canonical(f, backuptest.BaseDoc())
	f.Add(base)
	f.Add(base[:len(base)/2])
	f.Add(bytes.Replace(base, []byte(`"outputId":1`), []byte(`"outputId":null`), 1))
	f.Add(bytes.Replace(base, []byte(`"label":"payment"`), []byte(`"label":"\ud83d\ude00\u2028"`), 1))
	path, id := fixtures.Store(f, localstore.FixtureSmall, backuptest.SmallSeed)
	small, _ := encodeFile(f, path, id, false)
	f.Add(small)
	opts := DecodeOptions{MaxValueBytes: 64 << 10, MaxRowBytes: 256 << 10, MaxDepth: 24}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		emitted := int64(0)
		d, err := Decode(ctx, bytes.NewReader(doc), func(*wallet.Table, wallet.Row) error { emitted++; return nil }, opts)
		if err != nil {
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		var counted int64
		for _, n := range d.Rows {
			counted += n
		}
		if counted != emitted+1 || d.User == nil {
			t.Fatalf("accepted a document: %d rows emitted, %d counted (with the user)", emitted, counted)
		}
	})
}
