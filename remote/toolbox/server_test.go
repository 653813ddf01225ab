package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/wallet"
)

// fuzzServer is a Server over a store that holds identity other's small fixture.
func fuzzServer(tb testing.TB) (*Server, *localstore.Store) {
	tb.Helper()
	store, err := localstore.Create(context.Background(), filepath.Join(tb.TempDir(), "server.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	if _, err := localstore.Seed(context.Background(), store, localstore.FixtureSmall, localstore.SeedOptions{Seed: 9}); err != nil {
		tb.Fatal(err)
	}
	return NewServer(store, ServerOptions{}), store
}

// serve posts body as caller and returns the answer.
func serve(s *Server, caller string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req.WithContext(auth.WithIdentity(req.Context(), caller)))
	return rec
}

// callSeeds are the calls FuzzServer_Call starts from, made by caller on a store that holds
// the rows of other: every served method, refusals, a method the server does not run,
// and bodies that are not calls.
func callSeeds(caller, other string) []string {
	return []string{
		`{"jsonrpc":"2.0","method":"makeAvailable","params":[],"id":1}`,
		`{"jsonrpc":"2.0","method":"findOrInsertUser","params":["` + caller + `"],"id":2}`,
		`{"jsonrpc":"2.0","method":"findOrInsertUser","params":["` + other + `"],"id":2}`,
		`{"jsonrpc":"2.0","method":"findOrInsertSyncStateAuth","params":[{"identityKey":"` + caller + `"},"02aa","x"],"id":3}`,
		`{"jsonrpc":"2.0","method":"getSyncChunk","params":[{"identityKey":"` + other + `","maxRoughSize":1000,"maxItems":10,"offsets":[],"fromStorageIdentityKey":"a","toStorageIdentityKey":"b"}],"id":4}`,
		`{"jsonrpc":"2.0","method":"getSyncChunk","params":[{"userId":1,"maxRoughSize":1000,"maxItems":10,"offsets":[],"fromStorageIdentityKey":"a","toStorageIdentityKey":"b"}],"id":4}`,
		`{"jsonrpc":"2.0","method":"processSyncChunk","params":[{"identityKey":"` + caller + `","maxRoughSize":1,"maxItems":1,"offsets":[],"fromStorageIdentityKey":"02aa","toStorageIdentityKey":"b"},{"fromStorageIdentityKey":"02aa","toStorageIdentityKey":"b","userIdentityKey":"` + caller + `"}],"id":5}`,
		`{"jsonrpc":"2.0","method":"setActive","params":[{"userId":1},"x"],"id":6}`,
		`{"jsonrpc":"2.0","method":"destroy","id":null}`,
		`{"jsonrpc":"2.0","method":"listOutputs","params":[7],"id":"x"}`,
		`{"jsonrpc":"2.0","method":"toString","params":{}}`,
		`[1,2]`, `{"jsonrpc":"2.0"}`, ``,
	}
}

// Whatever body a caller sends, the server answers 200 or 400 with one JSON object in the
// StorageServer's envelope, and never with the rows of the store's other user.
func FuzzServer_Call(f *testing.F) {
	const caller = "02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	other := localstore.FixtureIdentity(9)
	for _, seed := range callSeeds(caller, other) {
		f.Add([]byte(seed))
	}
	s, store := fuzzServer(f)
	settings, err := store.Settings(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	chunk, err := store.GetSyncChunk(context.Background(), brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(other, "elsewhere", 0, 0))
	if err != nil {
		f.Fatal(err)
	}
	var txids [][]byte
	for _, r := range chunk.Rows[wallet.Transactions.Name] {
		txids = append(txids, []byte(r[wallet.Transactions.Col("txid")].(string)))
	}
	if len(txids) == 0 {
		f.Fatal("the other user has no transactions")
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(s, caller, body)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var ans map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
			t.Fatalf("answer %q to %q: %v", rec.Body.Bytes(), body, err)
		}
		if _, ok := ans["error"]; !ok && rec.Code != 200 {
			t.Fatalf("a 400 without an error: %q", rec.Body.Bytes())
		}
		for _, txid := range txids {
			if bytes.Contains(rec.Body.Bytes(), txid) && !bytes.Contains(body, txid) {
				t.Fatalf("the answer to %q carries the other user's rows: %s", body, rec.Body.Bytes())
			}
		}
	})
}
