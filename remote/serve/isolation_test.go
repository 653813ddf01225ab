package serve

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// row builds a row of t from named values.
func row(t *wallet.Table, values map[string]any) wallet.Row {
	r := make(wallet.Row, len(t.Columns))
	for k, v := range values {
		r[t.Col(k)] = v
	}
	return r
}

// Identity A tries every served method, and one it does not serve, on identity B's data:
// naming B, or B's user id without an identity key, or B's rows inside a chunk of its own.
// Every attempt is refused or acts on A alone, no answer carries B's rows or the server's
// paths, and B's rows are exactly what B backed up. On every backend.
func TestServe_IsolatesIdentities(t *testing.T) {
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			isolatesIdentities(t, be.options(t))
		})
	}
}

func isolatesIdentities(t *testing.T, opts Options) {
	srv := startServer(t, opts)
	sik := srv.Settings().StorageIdentityKey
	b := seedWallet(t, localstore.FixtureSmall, 6)
	backup(t, srv.URL, b)
	before := backendWallet(t, srv.Backend(), b.Identity)
	bUser, _, err := srv.Backend().FindOrInsertUserRow(t.Context(), b.Identity)
	if err != nil {
		t.Fatal(err)
	}
	bID := bUser[wallet.Users.Col("userId")].(int64)
	bChunk, err := srv.Backend().GetSyncChunk(t.Context(), brc40.SyncState{StorageIdentityKey: sik, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(b.Identity, "elsewhere", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	// What must never reach A: B's rows (their txids and raw transactions stand for them)
	// and the server's files or database.
	secrets := []string{".sqlite", "postgres://"}
	if srv.opts.DBPath != "" {
		secrets = append(secrets, filepath.Dir(srv.opts.DBPath))
	} else if u, err := url.Parse(srv.opts.PostgresURL); err == nil {
		secrets = append(secrets, u.Path[1:])
	}
	for _, r := range bChunk.Rows[wallet.Transactions.Name] {
		secrets = append(secrets, r[wallet.Transactions.Col("txid")].(string))
	}
	if len(secrets) < 5 {
		t.Fatalf("B has %d transactions on the server", len(secrets)-3)
	}

	aKey := randomKey(t)
	a := pubHex(aKey)
	producer := pubHex(randomKey(t))
	offsets := make([]brc40.SyncOffset, len(wallet.Entities))
	for i, e := range wallet.Entities {
		offsets[i] = brc40.SyncOffset{Name: e.Entity}
	}
	argsFor := func(identity, from, to string) brc40.RequestSyncChunkArgs {
		return brc40.RequestSyncChunkArgs{FromStorageIdentityKey: from, ToStorageIdentityKey: to, IdentityKey: identity, MaxRoughSize: 100000, MaxItems: 100, Offsets: offsets}
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	// A chunk that carries B's user row (made active elsewhere) and a label of B's user id.
	evilChunk := func(userIdentity string) brc40.SyncChunk {
		c := brc40.SyncChunk{FromStorageIdentityKey: producer, ToStorageIdentityKey: sik, UserIdentityKey: userIdentity, Rows: map[wallet.TableName][]wallet.Row{},
			User: row(wallet.Users, map[string]any{"created_at": now, "updated_at": now, "userId": bID, "identityKey": b.Identity, "activeStorage": "evil"})}
		for _, e := range wallet.Entities {
			c.Rows[e.Name] = []wallet.Row{}
		}
		c.Rows[wallet.TxLabels.Name] = []wallet.Row{row(wallet.TxLabels, map[string]any{"created_at": now, "updated_at": now, "txLabelId": int64(1), "userId": bID, "label": "planted", "isDeleted": false})}
		return c
	}
	raw := func(v interface{ MarshalJSON() ([]byte, error) }) json.RawMessage {
		b, err := v.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	c := newCaller(t, srv.URL, aKey)
	if _, body := c.mustCall("findOrInsertSyncStateAuth", map[string]any{"identityKey": a}, producer, "producer"); errorName(t, body) != "" {
		t.Fatalf("A's own sync state: %s", body)
	}
	for _, tc := range []struct {
		name   string
		method string
		params []any
		want   string // the WERR_* name, or "" for an answer that acts on A only
	}{
		{"findOrInsertUser(B)", "findOrInsertUser", []any{b.Identity}, "WERR_UNAUTHORIZED"},
		{"sync state for B", "findOrInsertSyncStateAuth", []any{map[string]any{"identityKey": b.Identity}, producer, "producer"}, "WERR_UNAUTHORIZED"},
		{"getSyncChunk for B", "getSyncChunk", []any{raw(argsFor(b.Identity, sik, producer))}, "WERR_UNAUTHORIZED"},
		{"processSyncChunk into B", "processSyncChunk", []any{raw(argsFor(b.Identity, producer, sik)), raw(evilChunk(b.Identity))}, "WERR_UNAUTHORIZED"},
		{"B's rows in A's chunk", "processSyncChunk", []any{raw(argsFor(a, producer, sik)), raw(evilChunk(b.Identity))}, "WERR_INVALID_PARAMETER"},
		{"B's user row under A's name", "processSyncChunk", []any{raw(argsFor(a, producer, sik)), raw(evilChunk(a))}, "WERR_INVALID_PARAMETER"},
		{"setActive for B", "setActive", []any{map[string]any{"identityKey": b.Identity}, "evil"}, "WERR_UNAUTHORIZED"},
		{"setActive by B's user id", "setActive", []any{map[string]any{"userId": bID}, "evil"}, ""},
		{"sync state by B's user id", "findOrInsertSyncStateAuth", []any{map[string]any{"userId": bID}, sik, "server"}, ""},
		{"A's own chunk", "getSyncChunk", []any{raw(argsFor(a, sik, producer))}, ""},
		{"listActions for B", "listActions", []any{map[string]any{"identityKey": b.Identity}, map[string]any{}}, "WERR_UNAUTHORIZED"},
		{"listOutputs for A", "listOutputs", []any{map[string]any{"identityKey": a}, map[string]any{}}, "WERR_NOT_IMPLEMENTED"},
		{"makeAvailable", "makeAvailable", nil, ""},
		{"getSettings", "getSettings", nil, ""},
	} {
		status, body := c.mustCall(tc.method, tc.params...)
		if status != 200 || errorName(t, body) != tc.want {
			t.Errorf("%s: %d %.300s, want %q", tc.name, status, body, tc.want)
		}
		for _, s := range secrets {
			if strings.Contains(string(body), s) {
				t.Errorf("%s: the answer carries %q: %.300s", tc.name, s, body)
			}
		}
	}
	if d := compare.Diff(before, backendWallet(t, srv.Backend(), b.Identity)); d != "" {
		t.Fatalf("B's rows changed:\n%s", d)
	}
}
