package serve

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/internal/crashtest"
	"walletsync/internal/faultproxy"
	"walletsync/internal/providertest"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/wallet"
)

// faultWire is one of the two wires a walletsync client syncs a wallet through, with the
// requests that commit a page (push) and read one (pull) on it.
type faultWire struct {
	name string
	// commit matches the wire's commit requests, read its page reads (Method, Path and
	// Contains of a Fault).
	commit, read faultproxy.Fault
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
		commit: faultproxy.Fault{Method: http.MethodPost, Path: wire.Prefix + "commit"},
		read:   faultproxy.Fault{Method: http.MethodPost, Path: wire.Prefix + "view/read"},
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
		commit: faultproxy.Fault{Method: http.MethodPost, Path: "/", Contains: `"method":"processSyncChunk"`},
		read:   faultproxy.Fault{Method: http.MethodPost, Path: "/", Contains: `"method":"getSyncChunk"`},
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
func startProxy(t *testing.T, baseURL string) *faultproxy.Proxy {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(u.Host)
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
// on both wires, in both directions, with one fault on the handshake (pushes) or on the second page:
// a push meets it on a commit request, a pull (the server's copy into a new local wallet)
// on a page read. The sync either completes (the client retried what a repeat cannot apply
// twice, or read the server's durable checkpoint or sync state after an answer it lost)
// or fails with the typed error the case names; a clean re-run then completes, and the
// local wallet's rows of the identity equal the server's, table by table: nothing lost,
// nothing applied twice, no corrupted byte applied. A duplicated commit reaches the server
// twice: the BRC-104 nonce refuses the copy, and the request the client sends again after
// that refusal is the duplicate that the checkpoint's compare-and-set (paged wire) or the
// sync state's (wallet.SyncState.Answers, toolbox wire) refuses to apply. A page read
// changes nothing on the server, so a client reads a page again after any fault; the pages
// it applies are only the answers whose BRC-104 signature verified.
func TestServe_SyncSurvivesFaults(t *testing.T) {
	kinds := []faultproxy.Kind{faultproxy.Drop, faultproxy.Reset, faultproxy.LoseAnswer, faultproxy.ResetAfter, faultproxy.Delay,
		faultproxy.Truncate, faultproxy.CorruptRequest, faultproxy.CorruptResponse, faultproxy.Duplicate}
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
		"walletsync/push/handshake/" + string(faultproxy.CorruptRequest): auth.ErrUnauthenticated,
		"toolbox/push/handshake/" + string(faultproxy.CorruptRequest):    auth.ErrUnauthenticated,
		"toolbox/push/page/" + string(faultproxy.CorruptResponse):        auth.ErrBadSignature,
		"walletsync/pull/page/" + string(faultproxy.CorruptResponse):     auth.ErrBadSignature,
	}
	// notApplied is, by fault on a commit, how many of the commit requests the fault rule
	// saw the server did not apply.
	notApplied := map[faultproxy.Kind]int{faultproxy.Drop: 1, faultproxy.Reset: 1, faultproxy.CorruptRequest: 1, faultproxy.Duplicate: 1}
	// The cases share the seeded source (each pushes its own copy), and the pulls of a
	// wire share one server holding it: a pull changes nothing on the server, which the
	// cases check by its commits.
	src := seedWallet(t, localstore.FixtureSmall, 21)
	for _, w := range faultWires {
		pullFrom := newFaultServer(t)
		if _, err := w.sync(t.Context(), pullFrom.URL, src, openStore(t, copyWallet(t, src.Path)), false); err != nil {
			t.Fatalf("push the wallet to the %s server the pulls read: %v", w.name, err)
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
					name := w.name + "/" + dir + "/" + target + "/" + string(kind)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						c := faultCase{w: w, src: src, target: target, kind: kind, want: fails[name], notApplied: notApplied[kind]}
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

// faultServer is a `walletsync serve` with both wires, counting the commits its store makes
// durable.
type faultServer struct {
	*running
	applied *atomic.Int64
}

func newFaultServer(t *testing.T) faultServer {
	t.Helper()
	applied := new(atomic.Int64)
	r := startServer(t, Options{Mounts: []Mount{WireMount(wire.ViewOptions{}, nil)}, Store: localstore.Options{CommitHook: func(point string) {
		if point == localstore.HookCommitted {
			applied.Add(1)
		}
	}}})
	return faultServer{running: r, applied: applied}
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
	kind       faultproxy.Kind
	want       error
	notApplied int
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
		server = newFaultServer(t)
		local = openStore(t, copyWallet(t, c.src.Path))
	}
	proxy := startProxy(t, server.URL)
	f := faultproxy.Fault{Method: http.MethodPost, Path: "/.well-known/auth", Nth: 1}
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
	if c.target == "page" && !pull {
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
	providertest.SameWallet(t, server.Store(), local, c.src.Identity)
}

// TestServe_KilledMidCommitResumes kills `walletsync serve` (a real child process, SIGKILL)
// in the middle of the second commit of a push, at both durable boundaries: the page's rows
// written but its transaction not committed, and committed but the answer not written. The
// server restarts on the same store (at another port, behind the same proxy address), and
// the same run of the client hand-shakes again, settles the commit it lost from the
// server's checkpoint or sync state, and completes; the server's rows equal the source's.
func TestServe_KilledMidCommitResumes(t *testing.T) {
	for _, w := range faultWires {
		for _, at := range []string{localstore.HookRowsWritten, localstore.HookCommitted} {
			t.Run(w.name+"/"+at, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				src := seedWallet(t, localstore.FixtureSmall, 22)
				keyFile := filepath.Join(dir, "server.key")
				if _, err := auth.CreateKeyFile(keyFile); err != nil {
					t.Fatal(err)
				}
				task := crashTask{DB: filepath.Join(dir, "server.sqlite"), KeyFile: keyFile, Wire: true}
				first, wait := startChild(t, crashtest.Command(t, crashtest.Point{At: at, N: 2}, task))
				proxy := startProxy(t, first)
				from := openStore(t, src.Path)

				type outcome struct {
					res syncer.Result
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := w.sync(t.Context(), proxy.URL(), src, from, false)
					done <- outcome{res, err}
				}()
				if out, err := wait(); !killedAt(err, out) {
					t.Fatalf("server: %v, want death by SIGKILL at %s\n%s", err, at, out)
				}
				second, _ := startChild(t, crashtest.Command(t, crashtest.Point{At: "never"}, task))
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
				check, err := localstore.Open(t.Context(), task.DB, localstore.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer check.Close()
				providertest.SameWallet(t, from, check, src.Identity)
			})
		}
	}
}
