package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/testkit/postgres"
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
		return srv, l.URL, func() { stop(); warnCleanup("stop walletsync serve", <-done) }, nil
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
	return syncer.Options{Active: wallet.KeepSourceActive, Mirror: true, Bulk: true}
}

// httpRequest is one HTTP request a client sent, as requestLog saw it.
type httpRequest struct {
	Path   string
	Status int // 0: no answer (a transport error)
	Took   time.Duration
	Sent   int64 // request body bytes
	// Page is set on the requests that move a page: a commit or a page read of the paged
	// wire, a processSyncChunk or getSyncChunk of the toolbox's.
	Page bool
	// Server is the index of the server it went to, among its router's (0 without one).
	Server int
	// Moved is set on a refusal of a client the router moves between servers that is the
	// BRC-104 session of one server unknown to the other (HTTP 401): the client hand-shakes
	// there and sends the request again, so it is no error of its own.
	Moved bool
}

// requestLog is an http.RoundTripper that records every request a client sends: its path,
// its answer's status, its body's size, and its latency, from the moment the request is
// handed to the transport until its answer's body has been read to the end (or closed).
// BRC-104 signing and verifying happen outside it, in auth.Client. Safe for concurrent use.
type requestLog struct {
	next http.RoundTripper
	// route, when set, chooses the server of each request (a load client moved between
	// servers); without it every request goes where its URL says.
	route *router
	mu    sync.Mutex
	reqs  []httpRequest
}

func newRequestLog() *requestLog { return &requestLog{next: http.DefaultTransport} }

// client returns an HTTP client of its own (its own connections) whose requests l records.
func (l *requestLog) client() *http.Client {
	return &http.Client{Transport: l}
}

// RoundTrip sends req and records it once its answer's body is done.
func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	began := time.Now()
	rec := httpRequest{Path: req.URL.Path, Sent: max(req.ContentLength, 0), Page: isPage(req)}
	if l.route != nil {
		req, rec.Server = l.route.pick(req)
	}
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		rec.Took = time.Since(began)
		l.add(rec)
		return nil, err
	}
	rec.Status = resp.StatusCode
	if l.route != nil {
		rec.Moved = l.route.answered(rec)
	}
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

// dialUser is walletsync's client of the servers at url as `walletsync sync --to URL`
// makes it (remote.Dial on the wire choice), signing as the fixture user of seed, its HTTP
// requests recorded (and routed) by log.
func dialUser(ctx context.Context, url string, seed uint64, choice remote.Wire, log *requestLog) (remote.Provider, error) {
	signer := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed)))
	return remote.Dial(ctx, url, signer, choice, remote.Options{HTTPClient: log.client()})
}

// isPage reports a request that moves a page: a commit or a page read of the paged wire,
// or a processSyncChunk or getSyncChunk of the toolbox's JSON-RPC (its method name is the
// body's second member, within its first bytes).
func isPage(req *http.Request) bool {
	if isCommit(req.URL.Path) || strings.HasSuffix(req.URL.Path, wire.Prefix+"view/read") {
		return true
	}
	if req.URL.Path != "/" || req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	head := make([]byte, 96)
	n, _ := io.ReadFull(body, head)
	return bytes.Contains(head[:n], []byte(`"method":"processSyncChunk"`)) || bytes.Contains(head[:n], []byte(`"method":"getSyncChunk"`))
}

// moveMode is how a load client moves between the servers of a run mid-sync.
type moveMode int

const (
	// stay: every request goes to the client's own server.
	stay moveMode = iota
	// moveOnce: after its first page the client's requests go to the next server.
	moveOnce
	// moveEvery: after every page its requests go to the next server, as a load balancer
	// without session affinity would send them.
	moveEvery
)

// router sends one client's requests to one of a run's servers, and moves the client to
// the next one after a page as its mode says. A server that never saw the client's BRC-104
// session refuses its next request (HTTP 401); the client hand-shakes with it and sends the
// request again (auth.Client), so the sync itself goes on. Safe for concurrent use.
type router struct {
	hosts []string // host:port of each server
	mode  moveMode

	mu      sync.Mutex
	at      int          // the server requests go to now
	moves   int          // how often the client was moved
	reached map[int]bool // the servers that answered one of its pages
}

func newRouter(hosts []string, home int, mode moveMode) *router {
	return &router{hosts: hosts, mode: mode, at: home, reached: map[int]bool{}}
}

// pick returns req aimed at the current server, and that server's index.
func (r *router) pick(req *http.Request) (*http.Request, int) {
	r.mu.Lock()
	at := r.at
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Host, out.Host = r.hosts[at], r.hosts[at]
	return out, at
}

// answered notes the answer to rec and moves the client after a page as its mode says. It
// reports whether the answer is a moved client's expected refusal (see httpRequest.Moved).
func (r *router) answered(rec httpRequest) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Page && rec.Status == http.StatusOK {
		r.reached[rec.Server] = true
		if r.mode == moveEvery || (r.mode == moveOnce && r.moves == 0) {
			r.at = (rec.Server + 1) % len(r.hosts)
			r.moves++
		}
	}
	return r.mode != stay && rec.Status == http.StatusUnauthorized
}

// servers returns how many servers answered the client's pages.
func (r *router) servers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reached)
}

// syncRemote syncs local with the server r as `walletsync sync` does: a push (active
// wallet.KeepSourceActive) or a pull into local (wallet.KeepDestinationActive); the paged
// wire with pages of the default size, the toolbox wire with its adaptive chunks.
func syncRemote(ctx context.Context, r remote.Provider, local *localstore.Store, identity string, active wallet.ActivePolicy) (pagedRun, error) {
	push := active == wallet.KeepSourceActive
	if r.Wire == remote.Walletsync {
		src, dst := wallet.Source(local), wallet.Destination(r.Paged)
		if !push {
			src, dst = r.Paged, local
		}
		run, _, err := timedSync(ctx, src, dst, identity, syncer.Options{Active: active})
		return run, err
	}
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return pagedRun{}, err
	}
	from, to := brc40.ChunkStore(local), brc40.ChunkStore(r.Chunks)
	if !push {
		from, to = r.Chunks, local
	}
	began := time.Now()
	res, err := syncer.RunChunks(ctx, from, to, identity, syncer.ChunkOptions{Active: active, Budget: budget})
	return pagedRun{Seconds: time.Since(began).Seconds(), Rows: res.Rows, Bytes: res.Bytes, Pages: res.Pages}, err
}

// serveProcess is `walletsync serve` run as a child process of the binary exe.
type serveProcess struct {
	URL  string
	cmd  *exec.Cmd
	logs string // its stderr, a file
}

// startServeProcess runs `exe walletsync serve --listen 127.0.0.1:0 --db db --key-file keyFile`, its
// logs into logFile, and returns once it says where it listens. The process gets a
// parent-death signal, so that a killed bench does not leave it running.
func startServeProcess(ctx context.Context, exe, db, keyFile, logFile string) (*serveProcess, error) {
	logs, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	cmd := exec.Command(exe, "walletsync", "serve", "--listen", "127.0.0.1:0", "--db", db, "--key-file", keyFile, "--log-level", "warn")
	cmd.Stderr = logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start walletsync serve: %w", err)
	}
	p := &serveProcess{cmd: cmd, logs: logFile}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout) // keeps the pipe from filling; it ends when the server does
	}()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		_ = p.stop() // ctx's error is the one to report
		return nil, ctx.Err()
	}
	// "walletsync serve: listening on URL (metrics ...), storage KEY"
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[2] != "listening" {
		_ = p.stop() // it never listened: what it said is the error
		return nil, fmt.Errorf("start walletsync serve: it said %q: %s", line, lastLine(p.stderr()))
	}
	p.URL = fields[4]
	return p, nil
}

// stop ends the server gracefully (SIGTERM: it drains its requests) and waits for it; a
// server still running after its shutdown timeout is killed.
func (p *serveProcess) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("walletsync serve at %s: %w: %s", p.URL, err, lastLine(p.stderr()))
		}
		return nil
	case <-time.After(serve.DefaultShutdownTimeout + 5*time.Second):
		p.cmd.Process.Kill()
		_ = <-done // "signal: killed", which the error below says better
		return fmt.Errorf("walletsync serve at %s: killed, still running after its shutdown timeout", p.URL)
	}
}

func (p *serveProcess) stderr() string {
	b, _ := os.ReadFile(p.logs)
	return string(b)
}

// serveBackend is where `bench serve` runs its walletsync serve: on a SQLite store in this
// process (Postgres nil), or as a `walletsync serve` process of the binary exe over a new
// database of a PostgreSQL server (what `walletsync serve --db postgres://...` mounts
// there, which wire.Detect tells).
type serveBackend struct {
	postgres *postgres.Cluster
	exe      string
}

// name is the backend's name in reports: sqlite or postgres.
func (b serveBackend) name() string {
	if b.postgres == nil {
		return "sqlite"
	}
	return "postgres"
}

// start runs walletsync serve on a new store named label (a file in work, or a database)
// under the key in keyFile, and returns its URL and a function that stops it and removes
// the store. clock, when set, is mounted as its paged wire with clocks (SQLite only: the
// clocks of a child process are not this process's to read); a SQLite server without a
// clock serves the toolbox wire alone.
func (b serveBackend) start(ctx context.Context, work, label, keyFile string, clock *serverClock) (string, func(), error) {
	if b.postgres == nil {
		key, err := auth.LoadKeyFile(keyFile)
		if err != nil {
			return "", nil, err
		}
		var mounts []serve.Mount
		if clock != nil {
			mounts = append(mounts, clock.mount())
		}
		db := filepath.Join(work, label+".sqlite")
		_, url, stop, err := startServe(ctx, db, key, mounts...)
		if err != nil {
			return "", nil, err
		}
		return url, func() { stop(); removeStore(db) }, nil
	}
	db, drop, err := b.postgres.CreateDatabase(ctx, label)
	if err != nil {
		return "", nil, err
	}
	p, err := startServeProcess(ctx, b.exe, db, keyFile, filepath.Join(work, label+".log"))
	if err != nil {
		warnCleanup("drop the server's database", drop(context.WithoutCancel(ctx)))
		return "", nil, err
	}
	return p.URL, func() {
		warnCleanup("stop walletsync serve", p.stop())
		warnCleanup("drop the server's database", drop(context.WithoutCancel(ctx)))
	}, nil
}

// openBackend returns the backend --db names (sqlite, postgres: a throwaway cluster, or
// postgres://URL: that server) and a function that releases it.
func openBackend(ctx context.Context, db string, progress io.Writer) (serveBackend, func(), error) {
	if db == "sqlite" {
		return serveBackend{}, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return serveBackend{}, nil, err
	}
	if db != "postgres" {
		c, err := postgres.Attach(ctx, db)
		return serveBackend{postgres: c, exe: exe}, func() {}, err
	}
	fmt.Fprintln(progress, "starting a throwaway PostgreSQL cluster...")
	sctx, cancel := context.WithTimeout(ctx, postgres.StartTimeout)
	defer cancel()
	c, err := postgres.Start(sctx)
	if err != nil {
		return serveBackend{}, nil, err
	}
	return serveBackend{postgres: c, exe: exe}, func() { warnCleanup("stop the PostgreSQL cluster", c.Stop()) }, nil
}

// warnCleanup logs a cleanup that failed: the measurement stands, but a process, a folder or
// a database (on an attached server, one that outlives the bench) may be left behind.
func warnCleanup(what string, err error) {
	if err != nil {
		slog.Warn("bench: "+what, "err", err)
	}
}
