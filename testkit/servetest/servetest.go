// Package servetest is walletsync serve (remote/serve) on 127.0.0.1 as a test's storage
// server, with the path of every request it answers recorded, so that a test can say what
// a sync cost on the wire (an unchanged re-sync on walletsync's wire is one request).
package servetest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
)

// Server is a running walletsync serve on a SQLite store of its own.
type Server struct {
	*serve.Server
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	http  *httptest.Server
	mu    sync.Mutex
	paths []string // of every request answered, in order
}

// Stop stops the server as a stopped process would be: nothing listens at URL afterwards,
// and a request gets a refused connection. The store stays until the test ends.
func (s *Server) Stop() { s.http.Close() }

// Start opens a server on a new SQLite store in the test's temporary folder, signing as a
// new identity, with mounts behind its BRC-104 middleware as serve.Open mounts them, and
// serves it until the test ends. Without mounts it offers the toolbox's wire only (as
// walletsync serve on PostgreSQL does); Paged is the mount of walletsync's paged wire.
func Start(tb testing.TB, mounts ...serve.Mount) *Server {
	tb.Helper()
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := serve.Open(context.Background(), serve.Options{DBPath: filepath.Join(tb.TempDir(), "server.sqlite"),
		Signer: auth.NewProtoWallet(key), Logger: slog.New(slog.DiscardHandler), Mounts: mounts})
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Server: srv}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	s.URL, s.http = hs.URL, hs
	tb.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return s
}

// Paged is walletsync's paged wire as `walletsync serve` mounts it on SQLite.
func Paged() serve.Mount { return serve.WireMount(wire.ViewOptions{}, slog.New(slog.DiscardHandler)) }

// Paths returns the path of every request the server has answered so far, in order: a
// test cuts it where a sync began to see what that sync cost (wire.Prefix alone is
// wire.Detect's unauthenticated GET, /.well-known/auth a BRC-104 handshake, / the
// toolbox's JSON-RPC).
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}
