package serve

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/jackc/pgx/v5"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote/auth"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/testkit/httpproxy"
	"walletsync/testkit/providertest"
	"walletsync/wallet"
)

// pgServers are walletsync servers over one PostgreSQL database with the paged wire
// mounted, behind a proxy that moves a client to the other server after every request.
type pgServers struct {
	db      string
	servers []*running
	proxy   *httpproxy.Switcher
}

// startPGServers starts n in-process servers with one identity over a new database on
// chain that holds the wallets of the fixture's users seeds (pushed in through the BRC-40
// consumer).
func startPGServers(t *testing.T, n int, views wire.ViewOptions, chain wallet.Chain, seeds ...uint64) *pgServers {
	t.Helper()
	ps := &pgServers{db: cluster.NewDatabase(t)}
	key := randomKey(t)
	signer := auth.NewProtoWallet(key)
	store, err := pgstore.Open(t.Context(), ps.db, pgstore.Options{Chain: chain, StorageIdentityKey: pubHex(key), StorageName: "walletsync serve"})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range seeds {
		src := openStore(t, seedWallet(t, localstore.FixtureSmall, seed).Path)
		if _, err := syncer.RunChunks(t.Context(), src, store, localstore.FixtureIdentity(seed), syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 100, Settle: -1}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	urls := make([]string, n)
	for i := range n {
		r := startServer(t, Options{PostgresURL: ps.db, Chain: chain, Signer: signer, Mounts: []Mount{WireMount(views, nil)}})
		ps.servers = append(ps.servers, r)
		urls[i] = r.URL
	}
	if ps.proxy, err = httpproxy.StartSwitcher(urls...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ps.proxy.Close)
	return ps
}

// wireProvider is a paged-wire client signing as seed's user against url.
func wireProvider(t testing.TB, url string, seed uint64) *wire.Provider {
	t.Helper()
	c, err := auth.NewClient(url, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))), auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	p, err := wire.NewProvider(c, wire.ProviderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// viewsOpen reads the walletsync_serve_views_open gauge of r.
func viewsOpen(t testing.TB, r *running) string {
	t.Helper()
	_, metrics := get(t, r.MetricsURL+"/metrics")
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(line, "walletsync_serve_views_open "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no views gauge in /metrics:\n%s", metrics)
	return ""
}

// TestServe_PostgresPullAcrossServers: two servers over one PostgreSQL with the paged wire
// (wire.Detect finds it), a pull in 3-row pages whose every request lands on the other
// server than the one before: its view opens on one, its pages are read through both, and
// a change committed to the database after the first page is not in the pull, which
// restores the wallet exactly as it was when the view opened. Both servers' gauges are
// back to 0 views at the end.
func TestServe_PostgresPullAcrossServers(t *testing.T) {
	t.Parallel()
	const seed = 51
	ps := startPGServers(t, 2, wire.ViewOptions{}, wallet.ChainTest, seed, seed+1)
	for _, r := range ps.servers {
		if !wire.Detect(t.Context(), r.URL) {
			t.Fatalf("%s does not offer the paged wire on PostgreSQL", r.URL)
		}
	}
	want := seedWallet(t, localstore.FixtureSmall, seed)
	restored := emptyWallet(t)
	changed := false
	res, err := syncer.Run(t.Context(), wireProvider(t, ps.proxy.URL, seed), restored, want.Identity, syncer.Options{MaxRows: 3, Active: wallet.KeepDestinationActive,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted && !changed {
				changed = true
				pgQuery(t, ps.db, `UPDATE tx_labels SET label = label || ' renamed later'`)
			}
			return nil
		}})
	if err != nil || !changed {
		t.Fatalf("pull: %+v, %v", res, err)
	}
	compare.SameWallet(t, openStore(t, want.Path), restored, want.Identity)
	read := wire.Prefix + "view/read"
	if ps.proxy.Served(0, read) == 0 || ps.proxy.Served(1, read) == 0 {
		t.Fatalf("pages read through %d and %d: the pull did not move between the servers", ps.proxy.Served(0, read), ps.proxy.Served(1, read))
	}
	// The view's close lands on either server; the other releases its view at its reaper's
	// next poll (pgstore's reapInterval), so the gauges reach 0 then, not at once.
	for i, r := range ps.servers {
		waitFor(t, fmt.Sprintf("server %d to release its views after the pull", i), func() bool { return viewsOpen(t, r) == "0" })
	}
}

// TestServe_PostgresConformance runs the Provider suite against the paged wire on
// PostgreSQL (remote/wire's TestConformance runs it on SQLite), every request on the other
// of two servers than the request before.
func TestServe_PostgresConformance(t *testing.T) {
	t.Parallel()
	const seed = 53
	providertest.Run(t, providertest.Harness{
		NewSource: func(t *testing.T) (wallet.Source, string) {
			ps := startPGServers(t, 2, wire.ViewOptions{}, wallet.ChainTest, seed)
			return wireProvider(t, ps.proxy.URL, seed), localstore.FixtureIdentity(seed)
		},
		NewDestination: func(t *testing.T, chain wallet.Chain) (wallet.Destination, wallet.Source) {
			ps := startPGServers(t, 2, wire.ViewOptions{}, chain)
			p := wireProvider(t, ps.proxy.URL, seed)
			return p, p
		},
	})
}

// TestServe_PostgresViewQuotasAcrossServers: the view quotas hold over both servers (one
// view per identity): with a view open on one server, a second view of the identity
// through the other is refused busy; the view's close, landing on the server that does not
// hold it, frees the quota at once, and the server that holds the view releases it (its
// gauge drops to 0).
func TestServe_PostgresViewQuotasAcrossServers(t *testing.T) {
	t.Parallel()
	const seed = 55
	ps := startPGServers(t, 2, wire.ViewOptions{MaxViewsPerIdentity: 1}, wallet.ChainTest, seed)
	v, err := wireProvider(t, ps.proxy.URL, seed).OpenView(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	owner := 0
	if viewsOpen(t, ps.servers[1]) == "1" {
		owner = 1
	}
	other := 1 - owner
	if viewsOpen(t, ps.servers[owner]) != "1" || viewsOpen(t, ps.servers[other]) != "0" {
		t.Fatalf("gauges %s and %s, want one view on one server", viewsOpen(t, ps.servers[0]), viewsOpen(t, ps.servers[1]))
	}
	b := wireProvider(t, ps.servers[other].URL, seed)
	var busy *wallet.BusyError
	if _, err := b.OpenView(t.Context(), time.Minute); !errors.As(err, &busy) {
		t.Fatalf("a second view through the other server: %v, want busy", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ps.proxy.Served(other, wire.Prefix+"view/close"); n != 1 {
		t.Fatalf("the close landed %d times on the server that does not hold the view", n)
	}
	w, err := b.OpenView(t.Context(), time.Minute)
	if err != nil {
		t.Fatalf("a view after the close: %v", err)
	}
	defer w.Close()
	waitFor(t, "the server holding the view to release it after its close through the other", func() bool { return viewsOpen(t, ps.servers[owner]) == "0" })
	if n := viewsOpen(t, ps.servers[other]); n != "1" {
		t.Fatalf("the other server holds %s views, want its 1", n)
	}
}

// emptyWallet makes an empty test-chain wallet.
func emptyWallet(t testing.TB) *localstore.Store {
	t.Helper()
	s, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), "restored.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "restored"}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestServe_PostgresOwnerKilledMidPull: two server processes (real children) over one
// PostgreSQL, a pull moving between them after every request; once its first page is
// committed, the process that holds its view is killed (SIGKILL) and dropped by the
// balancer. The next read, on the survivor, finds the view's snapshot gone
// (wallet.ErrSnapshotExpired); the client opens a new view there, resumes from its
// checkpoint, and the pull completes exactly.
func TestServe_PostgresOwnerKilledMidPull(t *testing.T) {
	t.Parallel()
	const seed = 57
	ps := startPGServers(t, 0, wire.ViewOptions{}, wallet.ChainTest, seed)
	keyFile := filepath.Join(t.TempDir(), "server.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	task := crashTask{Postgres: ps.db, KeyFile: keyFile, Wire: true}
	var urls []string
	var cmds []*exec.Cmd
	for range 2 {
		cmd := crash.Command(t, crash.Point{At: "never"}, task)
		url, _ := startChild(t, cmd)
		urls, cmds = append(urls, url), append(cmds, cmd)
	}
	proxy, err := httpproxy.StartSwitcher(urls...)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	gauge := func(url string) string { return viewsOpen(t, &running{Listening: Listening{MetricsURL: url}}) }

	want := seedWallet(t, localstore.FixtureSmall, seed)
	restored := emptyWallet(t)
	killed := -1
	res, err := syncer.Run(t.Context(), wireProvider(t, proxy.URL, seed), restored, want.Identity, syncer.Options{MaxRows: 3, Active: wallet.KeepDestinationActive,
		Progress: func(p syncer.Progress) error {
			if p.State != syncer.StateCommitted || killed >= 0 {
				return nil
			}
			for i, url := range urls {
				if gauge(url) == "1" {
					killed = i
				}
			}
			if killed < 0 {
				t.Fatal("no server holds the pull's view")
			}
			cmds[killed].Process.Kill()
			_ = cmds[killed].Wait() // killed on purpose: "signal: killed" is all it could say
			proxy.Drop(killed)
			// The database ends the dead process's backends as their sockets close, and
			// with them the view's lock (the only two-key advisory lock held between
			// requests); a balancer's health check takes longer than that.
			waitFor(t, "the database to end the killed server's connections", func() bool {
				var n int
				pgQuery(t, ps.db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2", &n)
				return n == 0
			})
			return nil
		}})
	if err != nil || killed < 0 {
		t.Fatalf("pull across the owner's death: %+v, %v", res, err)
	}
	compare.SameWallet(t, openStore(t, want.Path), restored, want.Identity)
	if n := proxy.Served(1-killed, wire.Prefix+"view/open"); n == 0 {
		t.Fatalf("the survivor opened no view: the pull did not resume on a new one")
	}
}

// pgQuery runs sql on the database at url, scanning its one row into dest when given.
func pgQuery(t testing.TB, url, sql string, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if len(dest) == 0 {
		_, err = conn.Exec(t.Context(), sql)
	} else {
		err = conn.QueryRow(t.Context(), sql).Scan(dest...)
	}
	if err != nil {
		t.Fatal(err)
	}
}
