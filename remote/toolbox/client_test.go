package toolbox

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// newTestClient returns a client of srv signing as the fixture identity of seed.
func newTestClient(t *testing.T, srv *toolboxpeer.Server, seed uint64) *Client {
	t.Helper()
	c, err := Dial(srv.URL, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func serverKey(seed uint64) string { return hex.EncodeToString(localstore.FixtureRootKey(seed)) }

// TestClient_BackupMethods calls each backup method of the real toolbox StorageServer.
func TestClient_BackupMethods(t *testing.T) {
	t.Parallel()
	srv := toolboxpeer.StartServer(t, serverKey(900))
	c := newTestClient(t, srv, 901)
	ctx := t.Context()
	me := localstore.FixtureIdentity(901)

	st, err := c.MakeAvailable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.StorageIdentityKey != srv.IdentityKey || st.Chain != wallet.Chain("test") {
		t.Fatalf("settings %+v, server %s", st, srv.IdentityKey)
	}
	u, err := c.FindOrInsertUser(ctx, me)
	if err != nil {
		t.Fatal(err)
	}
	// (The server made the user already, when makeAvailable authenticated: IsNew is false.)
	if u.ActiveStorage != srv.IdentityKey || u.UpdatedAt.Year() != 1971 {
		t.Fatalf("new user %+v", u)
	}
	if u2, err := c.FindOrInsertUser(ctx, me); err != nil || u2.IsNew || u2.UserID != u.UserID {
		t.Fatalf("second findOrInsertUser: %+v, %v", u2, err)
	}

	// Another identity than the one the client signs as: the server's typed refusal.
	_, err = c.FindOrInsertUser(ctx, localstore.FixtureIdentity(902))
	var we *WalletError
	if !errors.Is(err, wallet.ErrUnauthorized) || !errors.As(err, &we) || we.Name != "WERR_UNAUTHORIZED" {
		t.Fatalf("findOrInsertUser for another identity: %v", err)
	}
	_, err = c.FindOrInsertSyncState(ctx, localstore.FixtureIdentity(902), "02"+hex.EncodeToString(make([]byte, 32)), "x")
	if !errors.Is(err, wallet.ErrUnauthorized) {
		t.Fatalf("findOrInsertSyncStateAuth for another identity: %v", err)
	}

	producer := localstore.FixtureIdentity(903)
	ss, err := c.FindOrInsertSyncState(ctx, me, producer, "a producer")
	if err != nil {
		t.Fatal(err)
	}
	if ss.StorageIdentityKey != producer || ss.When != nil || len(ss.SyncMap) != 12 || ss.UserID != u.UserID {
		t.Fatalf("sync state %+v", ss)
	}
	if again, err := c.FindOrInsertSyncState(ctx, me, producer, "a producer"); err != nil || again.SyncStateID != ss.SyncStateID {
		t.Fatalf("second findOrInsertSyncStateAuth: %+v, %v", again, err)
	}

	// The server as producer: its chunk for a consumer named by the args.
	args := brc40.SyncState{SyncMap: brc40.NewSyncMap(), StorageIdentityKey: srv.IdentityKey}.MakeRequestSyncChunkArgs(me, producer, 0, 0)
	chunk, err := c.GetSyncChunk(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if chunk.User == nil || len(chunk.Rows[wallet.OutputBaskets.Name]) != 1 || chunk.Complete() {
		t.Fatalf("first chunk of a new user: user %v, %d baskets", chunk.User, len(chunk.Rows[wallet.OutputBaskets.Name]))
	}

	// processSyncChunk of the server's own chunk back into the state made above.
	in := brc40.SyncChunk{FromStorageIdentityKey: producer, ToStorageIdentityKey: srv.IdentityKey, UserIdentityKey: me, Rows: map[wallet.TableName][]wallet.Row{}}
	for _, tb := range wallet.Entities {
		in.Rows[tb.Name] = []wallet.Row{}
	}
	pargs := ss.MakeRequestSyncChunkArgs(me, srv.IdentityKey, 0, 0)
	res, err := c.ProcessSyncChunk(ctx, pargs, in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Inserts != 0 {
		t.Fatalf("empty complete chunk: %+v", res)
	}
	if err := c.SetActive(ctx, me, producer); err != nil {
		t.Fatal(err)
	}
	if u3, err := c.FindOrInsertUser(ctx, me); err != nil || u3.ActiveStorage != producer || u3.UpdatedAt.Year() == 1971 {
		t.Fatalf("after setActive: %+v, %v", u3, err)
	}
	if s := c.Stats(); s.Requests < 10 || s.BytesSent == 0 || s.Retries != 0 || s.Waiting <= 0 || s.Decoding <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

// answerDoer answers every request with one fixed HTTP 200 body.
type answerDoer []byte

func (d answerDoer) Do(context.Context, string, string, []byte) (*auth.Response, error) {
	return &auth.Response{Status: http.StatusOK, Body: d}, nil
}

// FuzzClientAnswers gives every client method arbitrary answers from the server: each
// either decodes one or fails with an error matching wallet.ErrRemote; none panics.
func FuzzClientAnswers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","result":{"storageIdentityKey":"02aa","storageName":"s","chain":"test","dbtype":"SQLite","maxOutputScript":1024,"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z"},"id":1}`,
		`{"jsonrpc":"2.0","result":{"user":{"userId":1,"identityKey":"02aa","activeStorage":"02bb","created_at":"2026-01-01T00:00:00.000Z","updated_at":"1971-01-01T00:00:00.000Z"},"isNew":false},"id":1}`,
		`{"jsonrpc":"2.0","result":{"syncState":{"syncStateId":1,"userId":1,"storageIdentityKey":"02cc","storageName":"n","status":"unknown","init":0,"refNum":"r","syncMap":"{}","created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z"},"isNew":true},"id":1}`,
		`{"jsonrpc":"2.0","result":{"done":true,"updates":0,"inserts":0},"id":1}`,
		`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_UNAUTHORIZED","message":"no"},"id":1}`,
		`{"jsonrpc":"2.0","result":{"user":{"userId":"x"}},"id":1}`,
		`{"jsonrpc":"2.0","result":null,"id":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := NewClient(answerDoer(body), ClientOptions{Retries: -1})
		ctx := context.Background()
		key := localstore.FixtureIdentity(1)
		args := brc40.SyncState{SyncMap: brc40.NewSyncMap(), StorageIdentityKey: key}.MakeRequestSyncChunkArgs(key, key, 0, 0)
		chunk := brc40.SyncChunk{FromStorageIdentityKey: key, ToStorageIdentityKey: key, UserIdentityKey: key, Rows: map[wallet.TableName][]wallet.Row{}}
		_, err1 := c.MakeAvailable(ctx)
		_, err2 := c.FindOrInsertUser(ctx, key)
		_, err3 := c.FindOrInsertSyncState(ctx, key, key, "n")
		_, err4 := c.GetSyncChunk(ctx, args)
		_, err5 := c.ProcessSyncChunk(ctx, args, chunk)
		err6 := c.SetActive(ctx, key, key)
		for i, err := range []error{err1, err2, err3, err4, err5, err6} {
			if err != nil && !errors.Is(err, wallet.ErrRemote) && !errors.Is(err, wallet.ErrBadSyncMessage) {
				t.Fatalf("call %d: %v does not match ErrRemote", i+1, err)
			}
		}
	})
}
