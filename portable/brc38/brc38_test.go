package brc38

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/testkit/backuptest"
	"walletsync/wallet"
)

// fixtures are the wallet files the tests copy.
var fixtures *backuptest.Fixtures

func TestMain(m *testing.M) { os.Exit(backuptest.Main(m, &fixtures)) }

// encodeFile encodes the user's wallet in the file at path with walletsync's encoder. With
// lookup, the view also answers RowLookup from the same (quiescent) file. The store is
// closed on return: a toolbox-made file is in rollback-journal mode, where an open reader
// would block the next test edit.
func encodeFile(tb testing.TB, path, identity string, lookup bool) ([]byte, Stats) {
	tb.Helper()
	var buf bytes.Buffer
	stats, err := backuptest.WithView(tb, path, lookup, func(v wallet.View, settings wallet.Settings) (Stats, error) {
		return Encode(context.Background(), v, settings, identity, backuptest.ExportedAt, &buf)
	})
	if err != nil {
		tb.Fatal(err)
	}
	if stats.Bytes != int64(buf.Len()) {
		tb.Fatalf("Stats.Bytes %d, wrote %d", stats.Bytes, buf.Len())
	}
	return buf.Bytes(), stats
}

var _ RowLookup = (*localstore.Snapshot)(nil)

func TestDocumentTables_CanonicalKeyOrder(t *testing.T) {
	var plurals []string
	for _, tb := range DocumentTables {
		plurals = append(plurals, tb.Plural)
	}
	want := "certificateFields,certificates,commissions,outputBaskets,outputTagMaps,outputTags,outputs,provenTxReqs,provenTxs,syncStates,transactions,txLabelMaps,txLabels"
	if got := strings.Join(plurals, ","); got != want {
		t.Fatalf("DocumentTables order\n got %s\nwant %s (the reference's list)", got, want)
	}
	if !slices.IsSortedFunc(plurals, CompareKeysUTF16) {
		t.Fatal("DocumentTables is not sorted by UTF-16 code units")
	}
	all := slices.DeleteFunc(slices.Clone(wallet.AllTables), func(tb *wallet.Table) bool { return tb == wallet.Users })
	if len(all) != len(DocumentTables) {
		t.Fatalf("%d document tables, wallet has %d besides users", len(DocumentTables), len(all))
	}
	for _, tb := range all {
		if !slices.Contains(DocumentTables, tb) {
			t.Errorf("%s is missing from DocumentTables", tb.Name)
		}
	}
	if !slices.IsSortedFunc(topKeys, CompareKeysUTF16) || topKeys[len(topKeys)-1] != "user" {
		t.Fatalf("top-level keys %v are not in canonical order with user last", topKeys)
	}
}

func TestDocTables_ColumnsInCanonicalOrder(t *testing.T) {
	for tb, dt := range docTables {
		if !slices.IsSortedFunc(dt.cols, func(a, b docColumn) int { return CompareKeysUTF16(a.Name, b.Name) }) {
			t.Errorf("%s: columns not in canonical order", tb.Name)
		}
		for _, c := range dt.cols {
			if c.def != nil && c.Nullable {
				t.Errorf("%s.%s: a default on a nullable column", tb.Name, c.Name)
			}
			if c.def != nil {
				if n, err := wallet.NormalizeValue(c.Column, c.def); err != nil || n != c.def {
					t.Errorf("%s.%s: default %#v is not a value of the column's kind (%v)", tb.Name, c.Name, c.def, err)
				}
			}
		}
	}
}

// walkJSON visits every object of a document in order, with its keys as written, and
// reports a null anywhere.
func walkJSON(tb testing.TB, doc []byte, object func(path string, keys []string)) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	token := func(path string) json.Token {
		tok, err := dec.Token()
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		return tok
	}
	var value func(path string)
	value = func(path string) {
		switch tok := token(path); tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				k := token(path).(string)
				keys = append(keys, k)
				value(path + "." + k)
			}
			token(path) // the closing brace
			object(path, keys)
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				value(fmt.Sprintf("%s[%d]", path, i))
			}
			token(path) // the closing bracket
		case nil:
			tb.Errorf("%s: null", path)
		}
	}
	value("")
}

func TestEncode_CanonicalForm(t *testing.T) {
	t.Parallel()
	path, id := mustTrickyStore(t)
	doc, stats := encodeFile(t, path, id, false)

	t.Run("KeysSortedByUTF16NoWhitespaceNoNulls", func(t *testing.T) {
		objects := 0
		walkJSON(t, doc, func(path string, keys []string) {
			objects++
			if !slices.IsSortedFunc(keys, CompareKeysUTF16) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
				t.Errorf("%s: keys %v not strictly sorted by UTF-16 code units", path, keys)
			}
		})
		var compact bytes.Buffer
		if err := json.Compact(&compact, doc); err != nil || !bytes.Equal(compact.Bytes(), doc) {
			t.Error("the document has whitespace between tokens")
		}
		if !bytes.HasPrefix(doc, []byte(`{"brc":38,"exportedAt":"`+backuptest.ExportedAtISO+`","formatVersion":1,"sourceStorage":{"chain":"test","created_at":`)) ||
			!bytes.Contains(doc, []byte(`]},"title":"User Wallet Data Format","user":{"activeStorage":`)) {
			t.Errorf("top-level layout: %.200s ...", doc)
		}
		if objects < 100 {
			t.Fatalf("walked %d objects", objects)
		}
	})
	t.Run("StringsAsJSONStringify", func(t *testing.T) {
		for _, want := range []string{
			"\"label\":\"sep\u2028para\u2029<>&\\\"\\\\/\\t\\n\\r\\u0001\\u001f\u007f\ufeff\U0001F600end\"", // raw U+2028/9, <>&, U+007F, U+FEFF, astral
			`"label":""`,
			`"fieldValue":"` + "\u2028" + `\"quoted\"\\"`,
			`"description":"party ` + "\U0001F389" + `"`,
		} {
			if !bytes.Contains(doc, []byte(want)) {
				t.Errorf("document lacks %s", want)
			}
		}
	})
	t.Run("NumbersAndBooleans", func(t *testing.T) {
		for _, want := range []string{`"satoshis":9007199254740992,`, `"satoshis":-9007199254740992,`, `"satoshis":9007199254740991,`,
			`"wasBroadcast":0`, `"notified":true`, `"isDeleted":false`} {
			if !bytes.Contains(doc, []byte(want)) {
				t.Errorf("document lacks %s", want)
			}
		}
		if bytes.Contains(doc, []byte(`"wasBroadcast":false`)) || bytes.Contains(doc, []byte(`"wasBroadcast":true`)) {
			t.Error("wasBroadcast written as a boolean; the toolbox writes 0 or 1")
		}
	})
	t.Run("NullsOmitted", func(t *testing.T) {
		tx := backuptest.Generic(t, doc)["tables"].(map[string]any)["transactions"].([]any)[2].(map[string]any)
		if _, ok := tx["description"]; ok || tx["transactionId"] != json.Number("3") {
			t.Errorf("transaction 3 (NULL description): %v", tx)
		}
	})
	t.Run("JSONTextColumnsAsCanonicalObjects", func(t *testing.T) {
		for _, want := range []string{
			`"history":{"Z":2,"a":4,"notes":[{"big":18446744073709552000,"f":1.5,"n":1e+21,"nested":{"a":"é` + "\U0001F600" + `","b":[1,{"x":false,"y":true}]},"tiny":1e-7,"what":"x` + "\u2028" + `y","when":"2026-01-01T00:00:00.000Z","z":0}],"é":1}`,
			`"notify":{"transactionIds":[3,1,2]}`,
			`"idMap":{"-1":4,"01":5,"10":1,"100":3,"9":2}`,
			`"errorLocal":{"code":"E","description":"d","stack":"s\n t"}`,
		} {
			if !bytes.Contains(doc, []byte(want)) {
				t.Errorf("document lacks %s", want)
			}
		}
	})
	t.Run("TimesAsISO", func(t *testing.T) {
		if !bytes.Contains(doc, []byte(`"created_at":"2026-02-03T04:05:06.000Z","isDeleted":false,"outputTagId":1,"tag":"tag-000","updated_at":"2026-02-03T04:05:06.000Z"`)) {
			t.Error("the output tag's SQLite-default and second-precision times are not written as YYYY-MM-DDTHH:MM:SS.sssZ")
		}
	})
	t.Run("BinaryAsPaddedBase64", func(t *testing.T) {
		rows, _ := backuptest.WithView(t, path, false, func(v wallet.View, _ wallet.Settings) ([]wallet.Row, error) {
			return readTable(t, v, wallet.Transactions, id), nil
		})
		txs := backuptest.Generic(t, doc)["tables"].(map[string]any)["transactions"].([]any)
		for i, r := range rows {
			for _, col := range []string{"rawTx", "inputBEEF"} {
				stored := r[wallet.Transactions.Col(col)]
				written, ok := txs[i].(map[string]any)[col]
				if stored == nil {
					if ok {
						t.Errorf("transactions[%d].%s: written though NULL", i, col)
					}
					continue
				}
				if want := base64.StdEncoding.EncodeToString(stored.([]byte)); written != want {
					t.Errorf("transactions[%d].%s = %.40v, want padded base64 of the stored bytes", i, col, written)
				}
			}
		}
	})
	t.Run("CertificateFieldsInLocaleOrder", func(t *testing.T) {
		var names []string
		for _, f := range backuptest.Generic(t, doc)["tables"].(map[string]any)["certificateFields"].([]any) {
			if f.(map[string]any)["certificateId"] == json.Number("1") {
				names = append(names, f.(map[string]any)["fieldName"].(string))
			}
		}
		want := []string{"_id", "10", "9", "a", "ä", "Ä", "a b", "a-b", "b", "B", "email", "Email", "EMAIL", "émigré",
			"name", "Resume", "résumé", "zeta", "Zeta", "ωmega", "Ωmega", "ёlka", "Ёlka", "日本"}
		if !slices.Equal(names, want) {
			t.Errorf("certificate 1's fields in order\n %q\nwant\n %q", names, want)
		}
		if !hasWarning(stats, WarnCollationUnverified, "tables.certificateFields[23].fieldName") || stats.WarningCount != int64(len(stats.Warnings)) {
			t.Errorf("warnings %v: want the Han name flagged as unverified", stats.Warnings)
		}
	})
}

// readTable pages a whole table of the user through v.
func readTable(tb testing.TB, v wallet.View, t *wallet.Table, identity string) []wallet.Row {
	tb.Helper()
	var out []wallet.Row
	req := wallet.PageRequest{Table: t.Name, IdentityKey: identity, Limits: wallet.Limits{Rows: 1}}
	for {
		req.Limits.Bytes = wallet.MaxFrameBytes
		p, err := v.ReadPage(context.Background(), req)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, p.Rows...)
		if p.Done {
			return out
		}
		req.After = p.Next
	}
}

func TestEncode_RefusesValuesWithoutAJSONForm(t *testing.T) {
	for _, tc := range []struct {
		name, sql, path string
		want            error
	}{
		{"InvalidUTF8", `UPDATE tx_labels SET label = CAST(X'61C3' AS TEXT) WHERE txLabelId = 1`, "tables.txLabels[0].label", wallet.ErrNotJSValue},
		{"IntegerBeyond2To53", `UPDATE transactions SET satoshis = 9007199254740993 WHERE transactionId = 2`, "tables.transactions[1].satoshis", wallet.ErrNotJSValue},
		{"JSONTextTruncated", `UPDATE proven_tx_reqs SET history = '{"notes":' WHERE provenTxReqId = 1`, "tables.provenTxReqs[0].history", ErrNotExportable},
		{"JSONTextNotAnObject", `UPDATE proven_tx_reqs SET notify = '[1,2]' WHERE provenTxReqId = 2`, "tables.provenTxReqs[1].notify", ErrNotExportable},
		{"JSONTextWithNull", `UPDATE sync_states SET syncMap = '{"a":{"b":null}}'`, "tables.syncStates[0].syncMap", ErrNotExportable},
		{"JSONTextLoneSurrogate", `UPDATE sync_states SET errorOther = '{"a":"\ud800"}'`, "tables.syncStates[0].errorOther", ErrNotExportable},
		{"JSONTextEmpty", `UPDATE proven_tx_reqs SET history = '' WHERE provenTxReqId = 1`, "tables.provenTxReqs[0].history", ErrNotExportable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
			backuptest.Mutate(t, path, tc.sql)
			_, err := backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (Stats, error) {
				return Encode(context.Background(), v, settings, id, backuptest.ExportedAt, io.Discard)
			})
			var ee *EncodeError
			if !errors.As(err, &ee) || ee.Path != tc.path || !errors.Is(err, tc.want) || ee.Key == nil {
				t.Fatalf("Encode: %v\nwant an *EncodeError at %s with its key, matching %v", err, tc.path, tc.want)
			}
		})
	}
}

func TestEncode_UnknownIdentityWritesNothing(t *testing.T) {
	path, _ := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	var buf bytes.Buffer
	_, err := backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (Stats, error) {
		return Encode(context.Background(), v, settings, localstore.FixtureIdentity(999), backuptest.ExportedAt, &buf)
	})
	if !errors.Is(err, wallet.ErrNotFound) || buf.Len() != 0 {
		t.Fatalf("Encode for an unknown identity: %v, %d bytes written; want wallet.ErrNotFound and nothing", err, buf.Len())
	}
}

// TestEncode_RowLargerThanAPage checks that a row over the encoder's page budget is read
// alone and written, not skipped. It lowers the budget (not in parallel with other tests)
// so that the row need not be megabytes.
func TestEncode_RowLargerThanAPage(t *testing.T) {
	defer func(l wallet.Limits) { pageLimits = l }(pageLimits)
	pageLimits.Bytes = 64 << 10
	path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	backuptest.Mutate(t, path, `UPDATE proven_txs SET rawTx = randomblob(100000) WHERE provenTxId = (SELECT min(provenTxId) FROM proven_txs)`)
	doc, _ := encodeFile(t, path, id, false)
	rows, _ := backuptest.WithView(t, path, false, func(v wallet.View, _ wallet.Settings) ([]wallet.Row, error) {
		return readTable(t, v, wallet.ProvenTxs, id), nil
	})
	want := `"rawTx":"` + base64.StdEncoding.EncodeToString(rows[0][wallet.ProvenTxs.Col("rawTx")].([]byte)) + `"`
	if wallet.ProvenTxs.Charge(rows[0]) <= pageLimits.Bytes || !bytes.Contains(doc, []byte(want)) {
		t.Fatal("the 3 MB proof is not in the document, or not larger than a page")
	}
}

// TestSQLiteSubstr_MatchesSQLite compares the encoder's substr with SQLite's own on blobs,
// including the negative, zero and out-of-range arguments the toolbox could pass.
func TestSQLiteSubstr_MatchesSQLite(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blob := []byte("0123456789")
	for _, y := range []int64{-12, -10, -3, -1, 0, 1, 2, 9, 10, 11, 30} {
		for _, z := range []int64{-12, -3, -1, 0, 1, 3, 10, 40} {
			var want []byte
			if err := db.QueryRow(`SELECT substr(?, ?, ?)`, blob, y, z).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got := sqliteSubstr(blob, y, z); !bytes.Equal(got, want) || got == nil {
				t.Errorf("substr(blob, %d, %d) = %q, SQLite gives %q", y, z, got, want)
			}
		}
	}
}

// synthView serves one user's rows from generator functions, without a database, so that a
// test can stream a document far larger than any memory bound it checks.
type synthView struct {
	identity string
	user     wallet.Row
	rows     map[wallet.TableName]func(i int) wallet.Row // nil past the end
}

func (v *synthView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	if err := ctx.Err(); err != nil {
		return wallet.Page{}, err
	}
	if req.IdentityKey != v.identity {
		return wallet.Page{}, wallet.ErrNotFound
	}
	t, err := wallet.LookupTable(req.Table)
	if err != nil {
		return wallet.Page{}, err
	}
	gen := v.rows[req.Table]
	if t == wallet.Users {
		gen = func(i int) wallet.Row { return map[bool]wallet.Row{true: v.user}[i == 0] }
	}
	start, _ := strconv.Atoi(string(req.After))
	page := wallet.Page{Table: req.Table}
	for i := start; ; i++ {
		var r wallet.Row
		if gen != nil {
			r = gen(i)
		}
		if r == nil {
			page.Done = true
			break
		}
		charge := t.Charge(r)
		if len(page.Rows) == req.Limits.Rows || page.Bytes+charge > req.Limits.Bytes {
			if len(page.Rows) == 0 {
				return page, &wallet.RowTooLargeError{Table: t.Name, Charge: charge, Limit: req.Limits.Bytes}
			}
			break
		}
		page.Rows = append(page.Rows, r)
		page.Bytes += charge
	}
	page.Next = wallet.Cursor(strconv.Itoa(start + len(page.Rows)))
	return page, nil
}

func (v *synthView) ID() string                  { return "synthetic" }
func (v *synthView) Journal(int64) (int64, bool) { return 0, false }
func (v *synthView) Resume(_ wallet.TableName, c wallet.Cursor) (wallet.Cursor, error) {
	return c, nil // a synthetic cursor is a row number, the same in every view
}
func (v *synthView) Close() error { return nil }

// bigSynthView is a user with n transactions of a 64 KiB raw transaction each.
func bigSynthView(n int) *synthView {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := bytes.Repeat([]byte{0xA5, 0x5A, 0x00, 0xFF}, 16<<10)
	identity := localstore.FixtureIdentity(5)
	return &synthView{identity: identity,
		user: wallet.Row{at, at, int64(1), identity, "storage"},
		rows: map[wallet.TableName]func(int) wallet.Row{wallet.TableTransactions: func(i int) wallet.Row {
			if i >= n {
				return nil
			}
			return wallet.Row{at, at, int64(i + 1), int64(1), nil, "completed", "ref-" + strconv.Itoa(i), false, int64(1000),
				int64(1), int64(0), "synthetic", fmt.Sprintf("%064x", i), nil, raw}
		}}}
}

// heapProbe is a writer that measures the live heap every 8 MiB written through it.
type heapProbe struct {
	w          io.Writer
	n, next    int64
	base, peak uint64
}

func newHeapProbe(w io.Writer) *heapProbe {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return &heapProbe{w: w, base: m.HeapAlloc}
}

func (p *heapProbe) Write(b []byte) (int, error) {
	if p.n += int64(len(b)); p.n >= p.next {
		p.next = p.n + 8<<20
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		p.peak = max(p.peak, m.HeapAlloc)
	}
	return p.w.Write(b)
}

// TestCodec_MemoryIsBounded streams a document of about 26 MB through the encoder and, at
// the same time, the decoder, and checks that the live heap never grows by more than 4 MiB:
// neither side holds the document or a table. (It grows by about 300 KB.)
func TestCodec_MemoryIsBounded(t *testing.T) {
	const rows, budget = 300, 4 << 20
	v := bigSynthView(rows)
	pr, pw := io.Pipe()
	decoded := make(chan error, 1)
	var n int
	go func() {
		_, err := Decode(context.Background(), pr, func(*wallet.Table, wallet.Row) error { n++; return nil }, DecodeOptions{})
		pr.CloseWithError(err)
		decoded <- err
	}()
	probe := newHeapProbe(pw)
	stats, err := Encode(context.Background(), v, wallet.Settings{Chain: wallet.ChainTest, DBType: "SQLite"}, v.identity, backuptest.ExportedAt, probe)
	pw.CloseWithError(err)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-decoded; err != nil || n != rows {
		t.Fatalf("decode: %v after %d rows", err, n)
	}
	if stats.Bytes < 6*budget {
		t.Fatalf("document of %d bytes is too small to show anything", stats.Bytes)
	}
	if grew := int64(probe.peak) - int64(probe.base); grew > budget {
		t.Fatalf("live heap grew by %d bytes while streaming %d bytes, want at most %d", grew, stats.Bytes, budget)
	}
}
