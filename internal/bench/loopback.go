package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/wallet"
)

// startServe runs `walletsync serve` in this process on 127.0.0.1: serve.Open and Run, as
// the serve command does, on the store at db under the identity key, with the mounts given
// (the command mounts serve.WireMount). It returns the server, its URL and a function that
// shuts it down gracefully and waits for it.
func startServe(ctx context.Context, db string, key *secp256k1.PrivateKey, mounts ...serve.Mount) (*serve.Server, string, func(), error) {
	srv, err := serve.Open(ctx, serve.Options{DBPath: db, Signer: auth.NewProtoWallet(key), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler), Mounts: mounts})
	if err != nil {
		return nil, "", nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	urls, done := make(chan serve.Listening, 1), make(chan error, 1)
	go func() { done <- srv.Run(sctx, func(l serve.Listening) { urls <- l }) }()
	select {
	case l := <-urls:
		return srv, l.URL, func() { stop(); <-done }, nil
	case err := <-done:
		stop()
		return nil, "", nil, err
	}
}

// benchPushOptions are the options of the full pushes `bench sync` and `bench serve`
// measure: bulk pages, as the agent's backup job sends them to a destination that no
// foreground work waits on. (`bench load` pushes as `sync --to URL` does, with pages of the
// default size.)
func benchPushOptions() syncer.Options {
	return syncer.Options{Active: wallet.KeepSourceActive, Bulk: true}
}

// httpRequest is one HTTP request a client sent, as requestLog saw it.
type httpRequest struct {
	Path   string
	Status int // 0: no answer (a transport error)
	Took   time.Duration
	Sent   int64 // request body bytes
}

// requestLog is an http.RoundTripper that records every request a client sends: its path,
// its answer's status, its body's size, and its latency, from the moment the request is
// handed to the transport until its answer's body has been read to the end (or closed).
// BRC-104 signing and verifying happen outside it, in auth.Client. Safe for concurrent use.
type requestLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []httpRequest
}

func newRequestLog() *requestLog { return &requestLog{next: http.DefaultTransport} }

// client returns an HTTP client of its own (its own connections) whose requests l records.
func (l *requestLog) client() *http.Client {
	return &http.Client{Transport: l}
}

// RoundTrip sends req and records it once its answer's body is done.
func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	began := time.Now()
	rec := httpRequest{Path: req.URL.Path, Sent: max(req.ContentLength, 0)}
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		rec.Took = time.Since(began)
		l.add(rec)
		return nil, err
	}
	rec.Status = resp.StatusCode
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() {
		rec.Took = time.Since(began)
		l.add(rec)
	}}
	return resp, nil
}

func (l *requestLog) add(r httpRequest) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

// requests returns what was recorded so far.
func (l *requestLog) requests() []httpRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// timedBody calls done once: at the body's end or at its close, whichever comes first.
type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

// pagedClient is walletsync's client of the paged wire as `walletsync sync --to URL` makes
// it (wire.Provider over an auth.Client signing as the fixture user of seed), its HTTP
// requests recorded in log.
func pagedClient(url string, seed uint64, log *requestLog) (*wire.Provider, error) {
	ac, err := auth.NewClient(url, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))),
		auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes, HTTPClient: log.client()})
	if err != nil {
		return nil, err
	}
	return wire.NewProvider(ac, wire.ProviderOptions{BusyWait: time.Minute})
}
