package wire

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote/auth"
	"walletsync/testkit/postgres"
	"walletsync/wallet"
)

// user is one identity: its key and its compressed hex identity key.
type user struct {
	key *secp256k1.PrivateKey
	id  string
}

// fixtureUser is the identity localstore.Seed uses for seed, with its private key, so that
// a client can sign as the owner of a seeded wallet.
func fixtureUser(seed uint64) user {
	h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("walletsync fixture identity "), seed))
	k := secp256k1.PrivKeyFromBytes(h[:])
	return user{key: k, id: string(auth.CounterpartyKey(k.PubKey()))}
}

// server is a walletsync wire server on 127.0.0.1 behind the real BRC-104 middleware.
type server struct {
	*httptest.Server
	handler *Handler
	store   *localstore.Store
	// requests counts every HTTP request, handshakes included.
	requests atomic.Int64
}

// newStore makes an empty wallet file on chain.
func newStore(t testing.TB, chain wallet.Chain) *localstore.Store {
	t.Helper()
	s, err := localstore.Create(context.Background(), filepath.Join(t.TempDir(), "wallet.sqlite"), localstore.CreateOptions{Chain: chain, StorageName: "test"}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seed fills s with the small fixture for u.
func seed(t testing.TB, s *localstore.Store, u user, n uint64) {
	t.Helper()
	if _, err := localstore.Seed(context.Background(), s, localstore.FixtureSmall, localstore.SeedOptions{Seed: n, IdentityKey: u.id}); err != nil {
		t.Fatal(err)
	}
}

// cluster is the package's throwaway PostgreSQL (testkit/postgres), for the tests that run
// on both backends.
var cluster *postgres.Cluster

func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }

// The PostgreSQL store is a backend whose views every server process shares.
var (
	_ Backend     = (*pgstore.Store)(nil)
	_ SharedViews = (*pgstore.Store)(nil)
)

// newPGStore makes an empty PostgreSQL store on chain, in a database of its own.
func newPGStore(t testing.TB, chain wallet.Chain) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), cluster.NewDatabase(t), pgstore.Options{Chain: chain,
		StorageIdentityKey: fixtureUser(1 << 41).id, StorageName: "wire test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startServer serves store through a Handler behind auth.Server's middleware.
func startServer(t testing.TB, store *localstore.Store, opts HandlerOptions) *server {
	t.Helper()
	return startBackend(t, StoreBackend{store}, store, opts)
}

func startBackend(t testing.TB, b Backend, store *localstore.Store, opts HandlerOptions) *server {
	t.Helper()
	serverKey := fixtureUser(1 << 40).key
	as, err := auth.NewServer(context.Background(), auth.NewProtoWallet(serverKey), auth.ServerOptions{MaxBodyBytes: MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	srv := &server{handler: NewHandler(b, opts), store: store}
	mux := http.NewServeMux()
	mux.Handle(Prefix, srv.handler)
	wrapped := as.Middleware(mux)
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.requests.Add(1)
		wrapped.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		srv.handler.Close()
	})
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server on %s, want loopback", srv.URL)
	}
	return srv
}

// authClient signs as u against srv.
func authClient(t testing.TB, srv *server, u user) *auth.Client {
	t.Helper()
	c, err := auth.NewClient(srv.URL, auth.NewProtoWallet(u.key), auth.ClientOptions{MaxResponseBytes: MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// provider is a Provider signing as u against srv.
func provider(t testing.TB, srv *server, u user, opts ProviderOptions) *Provider {
	t.Helper()
	p, err := NewProvider(authClient(t, srv, u), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
