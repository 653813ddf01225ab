// Package serve is `walletsync serve`: a multi-tenant wallet storage server over one
// localstore file or one PostgreSQL database (pgstore), speaking the toolbox's
// JSON-RPC (remote/toolbox) behind BRC-104 authentication (remote/auth), so that every
// @bsv/wallet-toolbox wallet can use it as a backup store unchanged, with room for more
// wires mounted beside it (Options.Mounts: walletsync's paged wire, WireMount, on either
// store; on PostgreSQL its views are shared by every server process over the database).
//
// Routes, as the toolbox's StorageServer has them: GET / (a text banner naming the chain)
// and GET /robots.txt without authentication, permissive CORS on every route, then the
// BRC-104 middleware for POST /.well-known/auth (the handshake), POST / (the JSON-RPC) and
// every mounted prefix. Beside them, unauthenticated: GET /healthz (the process answers),
// GET /readyz (the store answers, can write after a write failed for want of space, and
// the server is not shutting down) and GET /metrics
// (Prometheus text), the last on its own listener when Options.MetricsListen is set.
package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/wallet"
)

var (
	_ toolbox.Store = (*localstore.Store)(nil)
	_ toolbox.Store = (*pgstore.Store)(nil)
)

// backend is the store a server runs on: the toolbox wire's store, closed when the server
// stops.
type backend interface {
	toolbox.Store
	Close() error
}

// DefaultShutdownTimeout bounds how long a shutdown waits for in-flight requests (a
// processSyncChunk commit among them) before it closes their connections.
const DefaultShutdownTimeout = 30 * time.Second

// Mount is a handler served under a path prefix behind the same BRC-104 middleware as the
// toolbox wire (auth.Identity gives it the caller). The paged wire is mounted this way.
type Mount struct {
	// Prefix is the path it owns, ending in "/" (e.g. "/walletsync/v1/").
	Prefix string
	// MaxBodyBytes is the largest request body it takes (at least wallet.MaxFrameBytes is
	// allowed); the BRC-104 middleware refuses a larger one before reading it.
	MaxBodyBytes int64
	// Views is how many snapshot views of the store the mount holds open at once at most
	// (the paged wire's view quota). A SQLite store is opened with at least this many view
	// slots, each a read transaction on a connection of its own, so that the mount's own
	// quotas, not the store, decide who waits.
	Views int
	// Hello, when set, answers an unauthenticated GET of Prefix, so that a client can tell
	// which wires a server has before it authenticates.
	Hello string
	// New builds the handler over the server's store, seen as the paged wire's backend
	// (wire.StoreBackend over SQLite; over PostgreSQL the store itself, whose views are
	// wire.SharedViews), when the server opens. budget is the server's memory budget, for
	// the handler to charge what it allocates per request (the paged wire's decompressed
	// frames) to the same budget as the bodies. A handler that is also a MetricsWriter adds
	// its samples to /metrics.
	New func(backend wire.Backend, budget *wire.MemoryBudget) (http.Handler, error)
}

// Options configure a Server.
type Options struct {
	// DBPath is the SQLite store. A missing file is created on the first start, with the
	// server's identity key as its storageIdentityKey (as the toolbox's migrate writes the
	// key it is given) and StorageName.
	DBPath string
	// PostgresURL, set instead of DBPath, is a PostgreSQL database (postgres://...) that
	// pgstore migrates on the first start and writes the same settings into. Several
	// servers may share it, and the paged wire's views with it.
	PostgresURL string
	// Chain is the network the store must be on (default test); a store of another chain
	// is refused with wallet.ErrWrongChain.
	Chain wallet.Chain
	// StorageName names a store created on the first start (default "walletsync serve").
	StorageName string
	// Signer is the server's identity for BRC-104 (its key file).
	Signer auth.Signer
	// Listen is the address to serve on, e.g. ":8080" or "127.0.0.1:0".
	Listen string
	// MetricsListen, when set, serves /metrics, /healthz and /readyz on this address
	// instead of on Listen.
	MetricsListen string
	// TLSCert and TLSKey, both set, serve HTTPS on Listen.
	TLSCert, TLSKey string
	// Mounts are more handlers behind the BRC-104 middleware.
	Mounts []Mount
	// Conns bound the connections to Listen and their deadlines (zero values: the
	// defaults of ConnLimits); the metrics listener takes the deadlines only.
	Conns ConnLimits
	// Quotas bound what each identity may store (zero values: the defaults of Quotas), on
	// both wires.
	Quotas Quotas
	// MemoryBudget bounds the request memory in flight, in bytes (0: wire.DefaultMemoryBudget,
	// at least wire.MinMemoryBudget): every request body is charged before it is read (its
	// Content-Length, or its route's limit when it declares none) and held once, and the
	// paged wire's decompressed frames are charged to the same budget. A request that does
	// not fit within MemoryWait (0: wire.DefaultMemoryWait) is answered 503 with
	// Retry-After, before a byte of its body is read.
	MemoryBudget int64
	MemoryWait   time.Duration
	// ShutdownTimeout overrides DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger receives structured logs (default slog.Default()). Payloads and private keys
	// are never logged.
	Logger *slog.Logger
	// Store tunes the store (tests set CommitHook to kill the process mid-commit).
	Store localstore.Options

	wrapStore func(toolbox.Store) toolbox.Store // test seam: hold a call in flight
}

// Server is an open storage server: its store, its handlers and its metrics. Run serves it.
type Server struct {
	opts     Options
	log      *slog.Logger
	store    backend
	local    *localstore.Store // the SQLite store, nil on PostgreSQL
	pg       *pgstore.Store    // the PostgreSQL store, nil on SQLite
	settings wallet.Settings
	metrics  *metrics
	quota    *quotaGuard
	budget   *wire.MemoryBudget
	handler  http.Handler
	ready    atomic.Bool
	// closers are the mounted handlers that hold state to release when the server stops
	// (the paged wire's retained views).
	closers []interface{ Close() }
}

// Open opens (or creates) the store and builds the handlers. It refuses a store of another
// chain than opts.Chain.
func Open(ctx context.Context, opts Options) (*Server, error) {
	if opts.Chain == "" {
		opts.Chain = wallet.ChainTest
	}
	if _, err := wallet.ParseChain(string(opts.Chain)); err != nil {
		return nil, fmt.Errorf("open server: %w", err)
	}
	if opts.StorageName == "" {
		opts.StorageName = "walletsync serve"
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Conns = opts.Conns.withDefaults()
	opts.Quotas = opts.Quotas.withDefaults()
	if opts.Signer == nil {
		return nil, fmt.Errorf("open server: no identity key: %w", wallet.ErrInvalidArgument)
	}
	pub, err := opts.Signer.IdentityKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("open server: %w", err)
	}
	identity := fmt.Sprintf("%x", pub.SerializeCompressed())
	s := &Server{opts: opts, log: opts.Logger, metrics: newMetrics(), budget: wire.NewMemoryBudget(opts.MemoryBudget, opts.MemoryWait)}
	s.metrics.budget = s.budget
	switch {
	case (opts.DBPath == "") == (opts.PostgresURL == ""):
		return nil, fmt.Errorf("open server: one of DBPath and PostgresURL: %w", wallet.ErrInvalidArgument)
	case opts.PostgresURL != "":
		pg, err := pgstore.Open(ctx, opts.PostgresURL, pgstore.Options{Chain: opts.Chain, StorageIdentityKey: identity, StorageName: opts.StorageName, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("open server: %w", err)
		}
		s.store, s.pg = pg, pg
	default:
		for _, m := range opts.Mounts {
			opts.Store.MaxViews = max(opts.Store.MaxViews, m.Views)
		}
		local, err := localstore.OpenOrCreate(ctx, opts.DBPath, localstore.CreateOptions{Chain: opts.Chain, StorageIdentityKey: identity, StorageName: opts.StorageName}, opts.Store)
		if err != nil {
			return nil, fmt.Errorf("open server: %w", err)
		}
		s.store, s.local = local, local
	}
	store := s.store
	s.quota = newQuotaGuard(opts.Quotas, store.(usageStore), s.metrics, opts.Logger)
	s.metrics.extra = append(s.metrics.extra, metricsFunc(s.quota.writeMetrics))
	if err := s.build(ctx); err != nil {
		store.Close()
		return nil, fmt.Errorf("open server: %w", err)
	}
	return s, nil
}

func (s *Server) build(ctx context.Context) error {
	st, err := s.store.Settings(ctx)
	if err != nil {
		return err
	}
	if err := wallet.CheckSameChain(s.opts.Chain, st.Chain); err != nil {
		return fmt.Errorf("store %s is on chain %q, the server on %q: %w", s.where(), st.Chain, s.opts.Chain, err)
	}
	s.settings = st
	// The toolbox route caps its own bodies at toolbox.MaxBodyBytes before the middleware
	// reads them (see ServeHTTP); a mounted wire may carry frames up to the sync engine's
	// ceiling, with their framing.
	maxBody := int64(wallet.MaxFrameBytes)
	for _, m := range s.opts.Mounts {
		maxBody = max(maxBody, m.MaxBodyBytes)
	}
	authServer, err := auth.NewServer(ctx, s.opts.Signer, auth.ServerOptions{Logger: s.log, MaxBodyBytes: maxBody})
	if err != nil {
		return err
	}
	inner := http.NewServeMux()
	var backend toolbox.Store = quotaToolbox{s.store, s.quota}
	if s.opts.wrapStore != nil {
		backend = s.opts.wrapStore(backend)
	}
	inner.Handle("/{$}", toolbox.NewServer(backend, toolbox.ServerOptions{Logger: s.log, Observe: s.metrics.call}))
	for _, m := range s.opts.Mounts {
		if !strings.HasPrefix(m.Prefix, "/") || !strings.HasSuffix(m.Prefix, "/") || m.Prefix == "/" {
			return fmt.Errorf("mount %q: a prefix is a path of its own ending in /: %w", m.Prefix, wallet.ErrInvalidArgument)
		}
		h, err := m.New(newQuotaBackend(s.wireBackend(), s.quota), s.budget)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Prefix, err)
		}
		inner.Handle(m.Prefix, h)
		if mw, ok := h.(MetricsWriter); ok {
			s.metrics.extra = append(s.metrics.extra, mw)
		}
		if c, ok := h.(interface{ Close() }); ok {
			s.closers = append(s.closers, c)
		}
	}
	s.handler = authServer.Middleware(inner)
	return nil
}

// Store returns the server's SQLite store (nil on PostgreSQL).
func (s *Server) Store() *localstore.Store { return s.local }

// Backend returns the store the server runs on, SQLite or PostgreSQL.
func (s *Server) Backend() toolbox.Store { return s.store }

// where names the server's store in logs and errors (a PostgreSQL URL without its
// password).
func (s *Server) where() string {
	if s.opts.PostgresURL == "" {
		return s.opts.DBPath
	}
	u, err := url.Parse(s.opts.PostgresURL)
	if err != nil {
		return "postgres"
	}
	return u.Redacted()
}

// Settings returns the store's settings as the server opened it.
func (s *Server) Settings() wallet.Settings { return s.settings }

// Handler returns the server's routes (everything but a separate metrics listener's).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Close closes the store. Run closes it itself; Close is for a Server that never ran.
func (s *Server) Close() error { return s.store.Close() }

// banner is the StorageServer's GET / text. The toolbox writes `${wallet.chain}Net`,
// which a server started with a bare ProtoWallet (no chain) answers as "undefinedNet";
// walletsync names its store's chain.
func (s *Server) banner() string {
	return fmt.Sprintf("BRC-100 %sNet Storage Provider.", s.settings.Chain)
}

// serveHTTP routes one request and counts its bytes.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.metrics.inFlight.Add(1)
	defer s.metrics.inFlight.Add(-1)
	r.Body = countingBody{r.Body, &s.metrics.bytesIn}
	w = countingWriter{w, &s.metrics.bytesOut}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "*")
	h.Set("Access-Control-Allow-Methods", "*")
	h.Set("Access-Control-Expose-Headers", "*")
	h.Set("Access-Control-Allow-Private-Network", "true")
	if r.Method == http.MethodOptions {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("OK")) // Express's sendStatus(200)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		switch r.URL.Path {
		case "/":
			text(w, http.StatusOK, s.banner())
			return
		case "/robots.txt":
			text(w, http.StatusOK, "User-agent: *\nDisallow: /")
			return
		case "/healthz", "/readyz", "/metrics":
			if s.opts.MetricsListen == "" {
				s.ops().ServeHTTP(w, r)
				return
			}
		}
		for _, m := range s.opts.Mounts {
			if m.Hello != "" && r.URL.Path == m.Prefix {
				text(w, http.StatusOK, m.Hello)
				return
			}
		}
	}
	limit := s.bodyLimit(r.URL.Path)
	if !s.mounted(r.URL.Path) {
		// The toolbox's 30 MB, checked before a byte is read (express.json refuses a
		// larger body with 413 too).
		if r.ContentLength > toolbox.MaxBodyBytes {
			text(w, http.StatusRequestEntityTooLarge, "request body larger than 30 MB")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, toolbox.MaxBodyBytes)
	}
	release, ok := s.chargeBody(w, r, limit)
	if !ok {
		return
	}
	defer release()
	s.handler.ServeHTTP(w, r)
}

// refusedMemory is the refusal reason of a charge the memory budget had no room for (a
// body here, a frame in the paged wire), counted by the budget itself.
const refusedMemory = "memory_budget"

// bodyLimit is the largest body the route of path takes: a mount's own limit, the auth
// handshake's 64 KiB, else the toolbox's 30 MB.
func (s *Server) bodyLimit(path string) int64 {
	for _, m := range s.opts.Mounts {
		if strings.HasPrefix(path, m.Prefix) {
			return max(m.MaxBodyBytes, wallet.MaxFrameBytes)
		}
	}
	if path == "/.well-known/auth" {
		return 64 << 10
	}
	return toolbox.MaxBodyBytes
}

// chargeBody charges r's body to the memory budget before a byte of it is read: its
// Content-Length when declared (and the body is then held to it), else limit. A request
// without a body is not charged. Over budget, it answers 503 with Retry-After itself (an
// unsigned refusal, which a client reads as the server unavailable for now) and ok is false.
func (s *Server) chargeBody(w http.ResponseWriter, r *http.Request, limit int64) (release func(), ok bool) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, true
	}
	n := limit
	if r.ContentLength > 0 && r.ContentLength <= limit {
		n = r.ContentLength
		r.Body = http.MaxBytesReader(w, r.Body, n)
	}
	release, err := s.budget.Charge(r.Context(), n, "request bodies")
	if err != nil {
		var busy *wallet.BusyError
		if !errors.As(err, &busy) {
			return nil, false // the client went away while it waited
		}
		w.Header().Set("Retry-After", strconv.FormatInt(int64((busy.RetryAfter+time.Second-1)/time.Second), 10))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]any{"status": "error", "code": "ERR_SERVER_BUSY", "description": busy.Error(),
			"error": map[string]any{"code": "server_busy", "message": busy.Reason, "retryAfterMs": busy.RetryAfter.Milliseconds()}})
		w.Write(b)
		return nil, false
	}
	return release, true
}

func (s *Server) mounted(path string) bool {
	for _, m := range s.opts.Mounts {
		if strings.HasPrefix(path, m.Prefix) {
			return true
		}
	}
	return false
}

// ops serves /healthz, /readyz and /metrics.
func (s *Server) ops() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			text(w, http.StatusServiceUnavailable, "not ready: starting or shutting down\n")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := s.store.Settings(ctx); err != nil {
			s.log.Warn("readiness: the store does not answer", "err", err)
			text(w, http.StatusServiceUnavailable, "not ready: the store does not answer\n")
			return
		}
		if err := s.quota.probe(ctx); err != nil {
			s.log.Warn("readiness: the store cannot write", "err", err)
			text(w, http.StatusServiceUnavailable, "not ready: the store cannot write ("+writeClass(err)+")\n")
			return
		}
		text(w, http.StatusOK, "ready\n")
	})
	mux.Handle("GET /metrics", s.metrics)
	return mux
}

// writeClass names why a write failed, for /readyz.
func writeClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{{wallet.ErrDiskFull, "disk full"}, {wallet.ErrReadOnly, "read-only"}, {wallet.ErrBusy, "busy"}} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "error"
}

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// Listening is what Run reports once it accepts connections.
type Listening struct {
	// URL is the server's base URL (http or https, with the bound port).
	URL string
	// MetricsURL is the base URL of /metrics (the same as URL unless MetricsListen is set).
	MetricsURL string
}

// Run serves until ctx ends, then shuts down gracefully: readiness turns false, no new
// connection is accepted, requests in flight (a commit among them) run to their end for
// up to ShutdownTimeout, then the remaining connections are closed and the store is
// closed. ready, when set, is called once the listeners accept connections. Request
// contexts do not end with ctx, so that a commit that started is never cut short by the
// shutdown that waits for it.
func (s *Server) Run(ctx context.Context, ready func(Listening)) error {
	defer s.store.Close()
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	scheme := "http"
	if s.opts.TLSCert != "" || s.opts.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.opts.TLSCert, s.opts.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve: load TLS certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	ln = newLimitListener(ln, s.opts.Conns, s.metrics)
	base := context.WithoutCancel(ctx)
	servers := []*http.Server{s.httpServer(s.Handler(), base)}
	listeners := []net.Listener{ln}
	at := Listening{URL: scheme + "://" + ln.Addr().String()}
	at.MetricsURL = at.URL
	if s.opts.MetricsListen != "" {
		mln, err := net.Listen("tcp", s.opts.MetricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve metrics: %w", err)
		}
		servers = append(servers, s.httpServer(s.ops(), base))
		listeners = append(listeners, mln)
		at.MetricsURL = "http://" + mln.Addr().String()
	}
	errs := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errs <- srv.Serve(listeners[i]) }()
	}
	s.ready.Store(true)
	s.log.Info("serving", "url", at.URL, "metrics", at.MetricsURL, "storageIdentityKey", s.settings.StorageIdentityKey, "chain", s.settings.Chain, "db", s.where())
	if ready != nil {
		ready(at)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	s.ready.Store(false)
	s.log.Info("shutting down: draining requests in flight", "timeout", s.opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			s.log.Warn("shutdown: requests still in flight at the timeout; closing their connections", "err", err)
			srv.Close()
		}
	}
	for _, c := range s.closers {
		c.Close()
	}
	s.log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}

func (s *Server) httpServer(h http.Handler, base context.Context) *http.Server {
	return &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: s.opts.Conns.ReadHeaderTimeout,
		ReadTimeout:       s.opts.Conns.ReadTimeout,
		WriteTimeout:      s.opts.Conns.WriteTimeout,
		IdleTimeout:       s.opts.Conns.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
