package toolbox

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/syncer"
	"walletsync/testkit/postgres"
	"walletsync/wallet"
)

// cluster is the package's throwaway PostgreSQL (testkit/postgres).
var cluster *postgres.Cluster

func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }

// answerSummary is what two backends must agree on in an answer: its status, its error
// class (or JSON-RPC code), and its result's type and keys; values that are each store's
// own (times, ids) are left out.
func answerSummary(t testing.TB, status int, body []byte) string {
	t.Helper()
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Name string `json:"name"`
			Code int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("answer %.200q: %v", body, err)
	}
	if ans.Error != nil {
		return fmt.Sprintf("%d error %s %d", status, ans.Error.Name, ans.Error.Code)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(ans.Result, &obj) != nil {
		return fmt.Sprintf("%d result %.40s", status, ans.Result)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprintf("%d result {%s}", status, strings.Join(keys, ","))
}

// The toolbox wire's server answers FuzzServer_Call's calls alike on SQLite and on
// PostgreSQL (the same store identity, the same other user's rows), and neither answer
// carries that user's rows.
func TestServer_BackendsAnswerAlike(t *testing.T) {
	const caller = "02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	other := localstore.FixtureIdentity(9)
	sqliteServer, local := fuzzServer(t)
	settings, err := local.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.Open(t.Context(), cluster.NewDatabase(t), pgstore.Options{Chain: settings.Chain, StorageIdentityKey: settings.StorageIdentityKey, StorageName: settings.StorageName})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	// The same rows, pushed from a wallet of their own (a sync never runs between two stores
	// of one storage identity).
	_, seeded := fuzzServer(t)
	if _, err := syncer.RunChunks(t.Context(), seeded, pg, other, syncer.ChunkOptions{Active: wallet.KeepSourceActive, Settle: -1}); err != nil {
		t.Fatal(err)
	}
	chunk, err := pg.GetSyncChunk(t.Context(), brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(other, "elsewhere", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var txids []string
	for _, r := range chunk.Rows[wallet.Transactions.Name] {
		txids = append(txids, r[wallet.Transactions.Col("txid")].(string))
	}
	if len(txids) == 0 {
		t.Fatal("the other user has no transactions on PostgreSQL")
	}
	pgServer := NewServer(pg, ServerOptions{})
	for _, body := range callSeeds(caller, other) {
		var got []string
		for _, s := range []*Server{sqliteServer, pgServer} {
			rec := serve(s, caller, []byte(body))
			for _, txid := range txids {
				if strings.Contains(rec.Body.String(), txid) {
					t.Fatalf("the answer to %q carries the other user's rows: %s", body, rec.Body.Bytes())
				}
			}
			got = append(got, answerSummary(t, rec.Code, rec.Body.Bytes()))
		}
		if got[0] != got[1] {
			t.Errorf("%.120s:\n sqlite:   %s\n postgres: %s", body, got[0], got[1])
		} else {
			t.Logf("%.60s: %s", body, got[0])
		}
	}
}
