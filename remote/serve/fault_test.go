package serve

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/testkit/httpproxy"
	"walletsync/wallet"
)

// faultWire is one of the two wires a walletsync client syncs a wallet through, with the
// requests that commit a page (push) and read one (pull) on it.
type faultWire struct {
	name string
	// commit matches the wire's commit requests, read its page reads (Method, Path and
	// Contains of a Fault).
	commit, read httpproxy.Fault
	// sync syncs the local wallet (src's identity, open as local) with the server at url,
	// as `walletsync sync` does: pushes it there, or pulls the server's copy into it with
	// the local wallet kept active. Pages are small so that the small fixture takes several
	// commits and reads.
	sync func(ctx context.Context, url string, src fixtureWallet, local *localstore.Store, pull bool) (syncer.Result, error)
}

// faultWires are walletsync's paged wire (syncer.Run over a wire.Provider) and the toolbox's
// JSON-RPC (syncer.RunChunks over a toolbox client), each with its default retries.
var faultWires = []faultWire{
	{
		name:   "walletsync",
		commit: httpproxy.Fault{Method: http.MethodPost, Path: wire.Prefix + "commit"},
		read:   httpproxy.Fault{Method: http.MethodPost, Path: wire.Prefix + "view/read"},
		sync: func(ctx context.Context, url string, src fixtureWallet, local *localstore.Store, pull bool) (syncer.Result, error) {
			ac, err := auth.NewClient(url, fixtureSigner(src), auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
			if err != nil {
				return syncer.Result{}, err
			}
			p, err := wire.NewProvider(ac, wire.ProviderOptions{BusyWait: 10 * time.Second})
			if err != nil {
				return syncer.Result{}, err
			}
			if pull {
				return syncer.Run(ctx, p, local, src.Identity, syncer.Options{Active: wallet.KeepDestinationActive, MaxRows: 8})
			}
			return syncer.Run(ctx, local, p, src.Identity, syncer.Options{Active: wallet.KeepSourceActive, MaxRows: 8})
		},
	},
	{
		name:   "toolbox",
		commit: httpproxy.Fault{Method: http.MethodPost, Path: "/", Contains: `"method":"processSyncChunk"`},
		read:   httpproxy.Fault{Method: http.MethodPost, Path: "/", Contains: `"method":"getSyncChunk"`},
		sync: func(ctx context.Context, url string, src fixtureWallet, local *localstore.Store, pull bool) (syncer.Result, error) {
			c, err := toolbox.Dial(url, fixtureSigner(src), toolbox.ClientOptions{})
			if err != nil {
				return syncer.Result{}, err
			}
			// Settle -1: the server answers a chunk once its merge has committed, and every
			// fault here acts on a request that the server has answered, never saw, or
			// died with, so no chunk of an earlier run can still be landing.
			if pull {
				return syncer.RunChunks(ctx, c, local, src.Identity, syncer.ChunkOptions{Active: wallet.KeepDestinationActive, MaxItems: 8, Settle: -1})
			}
			return syncer.RunChunks(ctx, local, c, src.Identity, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 8, Settle: -1})
		},
	},
}

// fixtureSigner signs as the fixture wallet's identity.
func fixtureSigner(src fixtureWallet) auth.Signer {
	b, _ := hex.DecodeString(src.KeyHex) // seedWallet wrote it
	return auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(b))
}

// startProxy runs a fault proxy in front of the server at baseURL.
func startProxy(t *testing.T, baseURL string) *httpproxy.Proxy {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := httpproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func openStore(t *testing.T, path string) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestServe_SyncSurvivesFaults syncs a wallet through a fault proxy with `walletsync serve`
// on every backend (SQLite and PostgreSQL: one suite, two backends), on both wires (each
// server must offer both: wire.Detect), in both directions, with one fault on the handshake (pushes) or on the second
// page: a push meets it on a commit request, a pull (the server's copy into a new local
// wallet) on a page read. The sync either completes (the client retried what a repeat
// cannot apply twice, or read the server's durable checkpoint or sync state after an
// answer it lost) or fails with the typed error the case names; a clean re-run then
// completes, and the local wallet's rows of the identity equal the server's, table by
// table: nothing lost, nothing applied twice, no corrupted byte applied. A duplicated
// commit reaches the server twice: the BRC-104 nonce refuses the copy, and the request the
// client sends again after that refusal is the duplicate that the checkpoint's
// compare-and-set (paged wire) or the sync state's (brc40.SyncState.Answers, toolbox wire)
// refuses to apply. A page read changes nothing on the server, so a client reads a page
// again after any fault; the pages it applies are only the answers whose BRC-104 signature
// verified.
//
// On PostgreSQL a subset runs (faultOnBackend), to keep CI's race stage short: on a commit,
// where the store's transaction and compare-and-set act, a request that never arrived
// (drop), one applied whose answer was lost (lose-answer, reset-after), one refused
// unapplied (corrupt-request) and one that arrived twice (duplicate); on a page read, a
// dropped one and a corrupted answer. The others differ from these only on the client's
// side of the connection, and the handshake's faults are the BRC-104 layer's, the same
// code on both backends.
func TestServe_SyncSurvivesFaults(t *testing.T) {
	kinds := []httpproxy.Kind{httpproxy.Drop, httpproxy.Reset, httpproxy.LoseAnswer, httpproxy.ResetAfter, httpproxy.Delay,
		httpproxy.Truncate, httpproxy.CorruptRequest, httpproxy.CorruptResponse, httpproxy.Duplicate}
	// fails names the faults after which the first run fails, with the error it matches;
	// every other one completes. A corrupted handshake request is malformed JSON, which the
	// server refuses (HTTP 400) before any session exists; the client does not send a
	// refused handshake again. A corrupted answer to a commit does not verify: the paged
	// session then reads the checkpoint, which says the page landed; the chunk session
	// stops with the verification error (it never takes an answer it cannot verify for
	// a lost one, which a server that always answers so would turn into an endless loop),
	// and the next run goes on from the state, which the chunk moved. A corrupted page
	// read likewise: the paged pull stops with the verification error, unapplied (a read
	// is retried only while the server is unavailable), and the next run reads it again.
	fails := map[string]error{
		"walletsync/push/handshake/" + string(httpproxy.CorruptRequest): auth.ErrUnauthenticated,
		"toolbox/push/handshake/" + string(httpproxy.CorruptRequest):    auth.ErrUnauthenticated,
		"toolbox/push/page/" + string(httpproxy.CorruptResponse):        auth.ErrBadSignature,
		"walletsync/pull/page/" + string(httpproxy.CorruptResponse):     auth.ErrBadSignature,
	}
	// notApplied is, by fault on a commit, how many of the commit requests the fault rule
	// saw the server did not apply.
	notApplied := map[httpproxy.Kind]int{httpproxy.Drop: 1, httpproxy.Reset: 1, httpproxy.CorruptRequest: 1, httpproxy.Duplicate: 1}
	// The cases share the seeded source (each pushes its own copy), and the pulls of a
	// backend's wire share one server holding it: a pull changes nothing on the server,
	// which the cases check by its commits.
	src := seedWallet(t, localstore.FixtureSmall, 21)
	for _, b := range serverBackends {
		var probe *faultServer
		for _, w := range faultWires {
			pullFrom := newFaultServer(t, b.name, b.options)
			if probe == nil {
				probe = &pullFrom
			}
			if !probe.offers(t, w) {
				t.Fatalf("%s: the server offers no %s wire; both are mounted on every backend", b.name, w.name)
			}
			if _, err := w.sync(t.Context(), pullFrom.URL, src, openStore(t, copyWallet(t, src.Path)), false); err != nil {
				t.Fatalf("push the wallet to the %s %s server the pulls read: %v", b.name, w.name, err)
			}
			for _, dir := range []string{"push", "pull"} {
				// The BRC-104 handshake is the same whichever way the rows then go, so the
				// pushes alone meet faults on it.
				targets := []string{"handshake", "page"}
				if dir == "pull" {
					targets = targets[1:]
				}
				for _, target := range targets {
					for _, kind := range kinds {
						if !faultOnBackend(b.name, dir, target, kind) {
							continue
						}
						key := w.name + "/" + dir + "/" + target + "/" + string(kind)
						t.Run(b.name+"/"+key, func(t *testing.T) {
							t.Parallel()
							c := faultCase{w: w, src: src, target: target, kind: kind, want: fails[key], notApplied: notApplied[kind]}
							c.server = func(t *testing.T) faultServer { return newFaultServer(t, b.name, b.options) }
							if dir == "pull" {
								c.pullFrom = pullFrom
							}
							c.run(t)
						})
					}
				}
			}
		}
	}
}

// faultOnBackend reports whether the fault case runs on the backend: every case on SQLite,
// the subset TestServe_SyncSurvivesFaults names on PostgreSQL.
func faultOnBackend(backend, dir, target string, kind httpproxy.Kind) bool {
	switch {
	case backend == "sqlite":
		return true
	case target == "handshake":
		return false
	case dir == "push":
		return slices.Contains([]httpproxy.Kind{httpproxy.Drop, httpproxy.LoseAnswer, httpproxy.ResetAfter, httpproxy.CorruptRequest, httpproxy.Duplicate}, kind)
	}
	return kind == httpproxy.Drop || kind == httpproxy.CorruptResponse
}

// faultServer is a `walletsync serve` with every wire it offers (walletsync's paged wire
// is asked for, and left out where the backend refuses it as not implemented), counting
// the commits its store makes durable: on SQLite every commit of both wires (the store's
// commit hook), on PostgreSQL the toolbox wire's processSyncChunk calls that returned
// without error (each commits its merge and state in one transaction). On PostgreSQL it
// counts the toolbox wire's getSyncChunk answers too (reads).
type faultServer struct {
	*running
	backend        string
	applied, reads *atomic.Int64
}

func newFaultServer(t *testing.T, backend string, options func(testing.TB) Options) faultServer {
	t.Helper()
	applied, reads := new(atomic.Int64), new(atomic.Int64)
	opts := options(t)
	if opts.DBPath != "" {
		opts.Store = localstore.Options{CommitHook: func(point string) {
			if point == localstore.HookCommitted {
				applied.Add(1)
			}
		}}
	} else {
		opts.wrapStore = func(s toolbox.Store) toolbox.Store { return countingStore{Store: s, applied: applied, reads: reads} }
	}
	if opts.Signer == nil {
		opts.Signer = auth.NewProtoWallet(randomKey(t))
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Mounts = []Mount{WireMount(wire.ViewOptions{}, nil)}
	return faultServer{running: startServer(t, opts), backend: backend, applied: applied, reads: reads}
}

// offers reports whether the server serves wire w.
func (s faultServer) offers(t *testing.T, w faultWire) bool {
	return w.name == "toolbox" || wire.Detect(t.Context(), s.URL)
}

// counts reports whether applied counts the commits of wire w.
func (s faultServer) counts(w faultWire) bool {
	return s.Store() != nil || w.name == "toolbox"
}

// countingStore counts the processSyncChunk calls that applied their chunk, and the
// getSyncChunk calls answered.
type countingStore struct {
	toolbox.Store
	applied, reads *atomic.Int64
}

func (s countingStore) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	chunk, err := s.Store.GetSyncChunk(ctx, args)
	if err == nil {
		s.reads.Add(1)
	}
	return chunk, err
}

func (s countingStore) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	res, err := s.Store.ProcessSyncChunk(ctx, args, chunk)
	if err == nil {
		s.applied.Add(1)
	}
	return res, err
}

// requireSame fails unless the local wallet's rows of identity equal the server's, table
// by table: read through the store's view on SQLite, through its BRC-40 producer on
// PostgreSQL.
func requireSame(t *testing.T, server *Server, local *localstore.Store, identity string) {
	t.Helper()
	if server.Store() != nil {
		compare.SameWallet(t, server.Store(), local, identity)
		return
	}
	if d := compare.Diff(readLocal(t, local, identity), readChunks(t, server.Backend(), identity)); d != "" {
		t.Fatalf("the wallets differ:\n%s", d)
	}
}

// readLocal reads identity's rows of a local wallet, as a sync's two sides are compared.
func readLocal(t *testing.T, s *localstore.Store, identity string) compare.Wallet {
	t.Helper()
	w, err := compare.Read(t.Context(), s, identity, compare.AfterSync())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// readChunks reads identity's rows of a server's store through its BRC-40 producer, as a
// sync's two sides are compared.
func readChunks(t *testing.T, s compare.ChunkReader, identity string) compare.Wallet {
	t.Helper()
	w, err := compare.ReadChunks(t.Context(), s, identity, compare.AfterSync())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// copyWallet copies the closed wallet file at path into the test's directory.
func copyWallet(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// faultCase is one case of TestServe_SyncSurvivesFaults: a sync of src on wire w meets
// fault kind on the handshake or on the second page (target), and fails matching want
// (nil: completes). It is a push of a copy of src to a server of its own, on which
// notApplied of the commit requests the fault rule saw were not applied; or, with
// pullFrom, a pull from that server (holding src) into a new local wallet.
type faultCase struct {
	w          faultWire
	src        fixtureWallet
	target     string
	kind       httpproxy.Kind
	want       error
	notApplied int
	server     func(*testing.T) faultServer // a new server of the case's backend
	pullFrom   faultServer
}

func (c faultCase) run(t *testing.T) {
	pull := c.pullFrom.running != nil
	server := c.pullFrom
	var local *localstore.Store
	if pull {
		var err error
		local, err = localstore.Create(t.Context(), filepath.Join(t.TempDir(), "pulled.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { local.Close() })
	} else {
		server = c.server(t)
		local = openStore(t, copyWallet(t, c.src.Path))
	}
	proxy := startProxy(t, server.URL)
	f := httpproxy.Fault{Method: http.MethodPost, Path: "/.well-known/auth", Nth: 1}
	if c.target == "page" {
		f = c.w.commit
		if pull {
			f = c.w.read
		}
		f.Nth = 2
	}
	f.Kind, f.Delay, f.Offset = c.kind, 50*time.Millisecond, -1
	rule := proxy.Add(f)
	before := server.applied.Load()

	res, err := c.w.sync(t.Context(), proxy.URL(), c.src, local, pull)
	if rule.Fired() != 1 {
		t.Fatalf("the fault fired %d times", rule.Fired())
	}
	switch {
	case c.want == nil && err != nil:
		t.Fatalf("the sync through the fault failed: %v", err)
	case c.want != nil && !errors.Is(err, c.want):
		t.Fatalf("the sync through the fault ended %s with %v, want an error matching %v", res.State, err, c.want)
	case c.want == nil && res.Pages == 0:
		t.Fatalf("the sync through the fault moved nothing: %+v", res)
	}
	if c.target == "page" && !pull && server.counts(c.w) {
		// Every commit request the server got whole was applied once: the ones it never
		// got (dropped, reset) were sent again, the corrupted one was refused unapplied
		// (its BRC-104 signature failed) and sent again, and the copy the client sent
		// again after the duplicate's refusal (a replayed nonce) found the checkpoint or
		// state moved.
		if got, want := server.applied.Load()-before, int64(rule.Seen()-c.notApplied); got != want {
			t.Fatalf("the server applied %d commits of the %d it was sent, want %d", got, rule.Seen(), want)
		}
	}
	if _, err := c.w.sync(t.Context(), proxy.URL(), c.src, local, pull); err != nil {
		t.Fatalf("clean re-run: %v", err)
	}
	if pull && server.applied.Load() != before {
		t.Fatalf("the pulls committed %d times on the server", server.applied.Load()-before)
	}
	requireSame(t, server.Server, local, c.src.Identity)
}

// TestServe_KilledMidCommitResumes kills `walletsync serve` (a real child process, SIGKILL)
// in the middle of the second commit of a push, at both durable boundaries, and restarts
// it on the same store (at another port, behind the same proxy address); the same run of
// the client hand-shakes again, settles the commit it lost from the server's checkpoint or
// sync state, and completes; the server's rows equal the source's.
//
// On SQLite, on both wires, the boundaries are the store's own (localstore's commit hook):
// the page's rows written but its transaction not committed, and committed but the answer
// not written. On PostgreSQL, on the toolbox wire, they are around the store's
// processSyncChunk (killAround): the chunk received but its transaction not begun (a
// process killed inside the transaction leaves the same: PostgreSQL rolls back the
// transaction of a connection that dies), and its transaction committed but the answer
// not written. The paged wire's commits on PostgreSQL have no boundary this test can reach
// from outside the store, so its cases are SQLite's.
func TestServe_KilledMidCommitResumes(t *testing.T) {
	type killCase struct {
		backend string
		w       faultWire
		at      string
	}
	var cases []killCase
	for _, w := range faultWires {
		for _, at := range []string{localstore.HookRowsWritten, localstore.HookCommitted} {
			cases = append(cases, killCase{"sqlite", w, at})
		}
		if w.name == "toolbox" {
			for _, at := range []string{pointChunkReceived, pointChunkCommitted} {
				cases = append(cases, killCase{"postgres", w, at})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.backend+"/"+c.w.name+"/"+c.at, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := seedWallet(t, localstore.FixtureSmall, 22)
			keyFile := filepath.Join(dir, "server.key")
			if _, err := auth.CreateKeyFile(keyFile); err != nil {
				t.Fatal(err)
			}
			task := crashTask{KeyFile: keyFile, Wire: c.w.name == "walletsync"}
			if c.backend == "postgres" {
				task.Postgres = cluster.NewDatabase(t)
			} else {
				task.DB = filepath.Join(dir, "server.sqlite")
			}
			first, wait := startChild(t, crash.Command(t, crash.Point{At: c.at, N: 2}, task))
			proxy := startProxy(t, first)
			from := openStore(t, src.Path)

			type outcome struct {
				res syncer.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.w.sync(t.Context(), proxy.URL(), src, from, false)
				done <- outcome{res, err}
			}()
			if out, err := wait(); !killedAt(err, out) {
				t.Fatalf("server: %v, want death by SIGKILL at %s\n%s", err, c.at, out)
			}
			second, _ := startChild(t, crash.Command(t, crash.Point{At: "never"}, task))
			proxy.SetUpstream(strings.TrimPrefix(second, "http://"))
			var o outcome
			select {
			case o = <-done:
			case <-t.Context().Done():
				t.Fatal("the push did not end")
			}
			if o.err != nil {
				t.Fatalf("the push across the restart failed: %v", o.err)
			}
			if o.res.Pages == 0 {
				t.Fatalf("the push across the restart moved nothing: %+v", o.res)
			}
			if c.backend == "postgres" {
				check, err := pgstore.Open(t.Context(), task.Postgres, pgstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer check.Close()
				if d := compare.Diff(readLocal(t, from, src.Identity), readChunks(t, check, src.Identity)); d != "" {
					t.Fatalf("the server's rows differ from the source's:\n%s", d)
				}
				return
			}
			check, err := localstore.Open(t.Context(), task.DB, localstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer check.Close()
			compare.SameWallet(t, from, check, src.Identity)
		})
	}
}

// The kill points of a crash child on PostgreSQL (see killAround).
const (
	pointChunkReceived  = "chunk-received"
	pointChunkCommitted = "chunk-committed"
)

// killAround is a crash child's store on PostgreSQL: its processSyncChunk reaches
// pointChunkReceived before the store's call and pointChunkCommitted after it returned
// without error, where the Killer may end the process.
type killAround struct {
	toolbox.Store
	k *crash.Killer
}

func (s killAround) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	s.k.Reach(pointChunkReceived, nil)
	res, err := s.Store.ProcessSyncChunk(ctx, args, chunk)
	if err == nil {
		s.k.Reach(pointChunkCommitted, nil)
	}
	return res, err
}
