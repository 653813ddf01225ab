package toolbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/wallet"
)

// badChunkCase is one chunk a toolbox peer would never send, and the refusal it must get.
type badChunkCase struct {
	name string
	// edit changes the decoded chunk; raw, when set, then changes its JSON.
	edit func(t *testing.T, c *brc40.SyncChunk)
	raw  func(body []byte) []byte
	// param is the parameter the WERR_INVALID_PARAMETER must name ("" for the message's
	// path), text a part of its message.
	param, text string
}

// set sets column col of the first row of table (that has col set when wantSet) to v.
func set(table *wallet.Table, col string, v any) func(*testing.T, *brc40.SyncChunk) {
	return func(t *testing.T, c *brc40.SyncChunk) {
		rows := c.Rows[table.Name]
		if len(rows) == 0 {
			t.Fatalf("the chunk has no %s", table.Plural)
		}
		rows[0][table.Col(col)] = v
	}
}

// marked sets the first transaction's description to a marker that raw then replaces.
func marked(t *testing.T, c *brc40.SyncChunk) {
	set(wallet.Transactions, "description", "MARKER-TEXT")(t, c)
}

func replaceMarker(with string) func([]byte) []byte {
	return func(b []byte) []byte { return bytes.Replace(b, []byte(`"MARKER-TEXT"`), []byte(with), 1) }
}

func badChunkCases() []badChunkCase {
	return []badChunkCase{
		{name: "an output of a transaction never delivered", edit: set(wallet.Outputs, "transactionId", int64(999_999)),
			param: "outputs.transactionId", text: "never delivered"},
		{name: "a transaction of a proof never delivered", edit: set(wallet.Transactions, "provenTxId", int64(999_999)),
			param: "transactions.provenTxId", text: "never delivered"},
		{name: "an output spent by a transaction never delivered", edit: set(wallet.Outputs, "spentBy", int64(999_999)),
			param: "outputs.spentBy", text: "never delivered"},
		{name: "a negative output", edit: set(wallet.Outputs, "satoshis", int64(-1)), param: "outputs.satoshis", text: "negative"},
		{name: "transactionId -1", edit: set(wallet.Transactions, "transactionId", int64(-1)), param: "transactions.transactionId", text: "below 1"},
		{name: "an output's basketId 0", edit: set(wallet.Outputs, "basketId", int64(0)), param: "outputs.basketId", text: "below 1"},
		{name: "a 3-character txid", edit: set(wallet.Transactions, "txid", "abc"), param: "transactions.txid", text: "64 hexadecimal"},
		{name: "a txid that is not hex", edit: set(wallet.Transactions, "txid", strings.Repeat("z", 64)), param: "transactions.txid", text: "64 hexadecimal"},
		{name: "a proof's txid of 65 digits", edit: set(wallet.ProvenTxs, "txid", strings.Repeat("a", 65)), param: "proven_txs.txid", text: "64 hexadecimal"},
		{name: "text that is not UTF-8", edit: marked, raw: replaceMarker("\"ok \xff\xfe\""), param: "$", text: "UTF-8"},
		{name: "a lone high surrogate", edit: marked, raw: replaceMarker(`"\ud800x"`), param: "$", text: "surrogate"},
		{name: "a lone low surrogate", edit: marked, raw: replaceMarker(`"x\udc00"`), param: "$", text: "surrogate"},
		{name: "two high surrogates", edit: marked, raw: replaceMarker(`"\ud800\ud800"`), param: "$", text: "surrogate"},
		{name: "more rows than a chunk carries", edit: func(*testing.T, *brc40.SyncChunk) {}, raw: manyRows,
			param: "txLabels[1000]", text: "more than 1000 rows"},
	}
}

// manyRows makes the chunk 1,001 tx labels followed by a row no table has: a decoder that
// read past the limit would refuse that row's column instead of the count.
func manyRows(b []byte) []byte {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return nil
	}
	row := `{"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z","txLabelId":%d,"userId":1,"label":"l%d","isDeleted":false}`
	var rows []string
	for i := 1; i <= 1001; i++ {
		rows = append(rows, fmt.Sprintf(row, i, i))
	}
	return fmt.Appendf(nil, `{"fromStorageIdentityKey":%s,"toStorageIdentityKey":%s,"userIdentityKey":%s,"txLabels":[%s,{"notAColumn":1}]}`,
		keys["fromStorageIdentityKey"], keys["toStorageIdentityKey"], keys["userIdentityKey"], strings.Join(rows, ","))
}

// Every chunk a toolbox peer would never send (a row referring to a row never delivered,
// in any table and by any key, text a decoder would alter, values out of the toolbox's
// range, more rows than a chunk carries) is answered WERR_INVALID_PARAMETER naming what is
// wrong, on SQLite and PostgreSQL alike, and leaves the store as it was; the chunk itself
// is then accepted.
func TestServer_ProcessSyncChunkRefusesBadData(t *testing.T) {
	caller := localstore.FixtureIdentity(9)
	_, source := fuzzServer(t)
	sqlite, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), "consumer.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Close()
	settings, err := sqlite.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.Open(t.Context(), cluster.NewDatabase(t), pgstore.Options{Chain: settings.Chain, StorageIdentityKey: settings.StorageIdentityKey, StorageName: settings.StorageName})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	src, err := source.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fresh := brc40.SyncState{StorageIdentityKey: src.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}
	args := fresh.MakeRequestSyncChunkArgs(caller, settings.StorageIdentityKey, 0, 0)
	chunk, err := source.GetSyncChunk(t.Context(), args)
	if err != nil {
		t.Fatal(err)
	}
	good, err := chunk.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	argsJSON, err := args.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []struct {
		name  string
		store Store
	}{{"sqlite", sqlite}, {"postgres", pg}} {
		t.Run(backend.name, func(t *testing.T) {
			s := NewServer(backend.store, ServerOptions{})
			call := func(t *testing.T, method string, params ...string) *WalletError {
				t.Helper()
				body := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":%q,"params":[%s],"id":1}`, method, strings.Join(params, ","))
				rec := serve(s, caller, body)
				_, err := ParseResponse(rec.Body.Bytes())
				if err == nil {
					return nil
				}
				we, ok := err.(*WalletError)
				if !ok {
					t.Fatalf("%s: HTTP %d, %v", method, rec.Code, err)
				}
				return we
			}
			if we := call(t, "findOrInsertSyncStateAuth", `{"identityKey":"`+caller+`"}`, `"`+src.StorageIdentityKey+`"`, `"source"`); we != nil {
				t.Fatal(we)
			}
			before := storeState(t, backend.store, caller, src.StorageIdentityKey)
			for _, tc := range badChunkCases() {
				t.Run(tc.name, func(t *testing.T) {
					var c brc40.SyncChunk
					if err := json.Unmarshal(good, &c); err != nil {
						t.Fatal(err)
					}
					tc.edit(t, &c)
					body, err := c.MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					if tc.raw != nil {
						edited := tc.raw(body)
						if bytes.Equal(edited, body) || edited == nil {
							t.Fatal("the raw edit changed nothing")
						}
						body = edited
					}
					we := call(t, "processSyncChunk", string(argsJSON), string(body))
					if we == nil || we.Name != "WERR_INVALID_PARAMETER" || we.Parameter != tc.param || !strings.Contains(we.Message, tc.text) {
						t.Fatalf("answer %+v, want WERR_INVALID_PARAMETER naming %q with %q", we, tc.param, tc.text)
					}
					if after := storeState(t, backend.store, caller, src.StorageIdentityKey); after != before {
						t.Fatalf("the refused chunk changed the store:\nbefore %.300s\nafter  %.300s", before, after)
					}
				})
			}
			if we := call(t, "processSyncChunk", string(argsJSON), string(good)); we != nil {
				t.Fatalf("the chunk itself: %v", we)
			}
			if after := storeState(t, backend.store, caller, src.StorageIdentityKey); after == before {
				t.Fatal("the chunk itself changed nothing")
			}
		})
	}
}

// storeState is what a refused chunk must leave alone: the caller's rows as a producer
// hands them out, and its sync state for producer.
func storeState(t *testing.T, store Store, identity, producer string) string {
	t.Helper()
	st, _, err := store.FindOrInsertSyncStateAuth(t.Context(), identity, producer, "source")
	if err != nil {
		t.Fatal(err)
	}
	settings, err := store.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	args := brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(identity, "elsewhere", 0, 0)
	chunk, err := store.GetSyncChunk(t.Context(), args)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chunk.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	syncMap, err := json.Marshal(st.SyncMap)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %v %s", syncMap, st.When, rows)
}
