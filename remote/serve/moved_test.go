package serve

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/testkit/httpproxy"
	"walletsync/wallet"
)

// TestServe_PostgresClientMovedBetweenServers moves a client between two `walletsync
// serve` servers over one PostgreSQL database (their own pools, one identity key) in the
// middle of its syncs, as a load balancer without session affinity would: a proxy in front
// of both sends the requests after a page the client got answered to the other server
// (httpproxy.SwitchAfter), after every page. The server the client moves to never saw
// its BRC-104 session, refuses it, and the client hand-shakes there and goes on. (A client
// moved once, after its first page, is a case of `bench load`'s on PostgreSQL, which
// TestBench_Load runs.) On every wire the servers offer, a push of the small fixture in pages
// of 8 rows, then a pull of it into a new wallet, both complete, and the server's rows and
// the pulled wallet's equal the source's, table by table; both servers applied some of the
// push's pages and answered some of the pull's.
func TestServe_PostgresClientMovedBetweenServers(t *testing.T) {
	for _, w := range faultWires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			db, signer := cluster.NewDatabase(t), auth.NewProtoWallet(randomKey(t))
			opts := func(testing.TB) Options { return Options{PostgresURL: db, Signer: signer} }
			servers := []faultServer{newFaultServer(t, "postgres", opts), newFaultServer(t, "postgres", opts)}
			if !servers[0].offers(t, w) {
				t.Fatalf("the servers offer no %s wire on PostgreSQL; both are mounted there", w.name)
			}
			proxy := startProxy(t, servers[0].URL)
			proxy.SetUpstreams(strings.TrimPrefix(servers[0].URL, "http://"), strings.TrimPrefix(servers[1].URL, "http://"))
			src := seedWallet(t, localstore.FixtureSmall, 23)

			for _, dir := range []string{"push", "pull"} {
				f := w.commit
				local := openStore(t, copyWallet(t, src.Path))
				if dir == "pull" {
					f = w.read
					var err error
					if local, err = localstore.Create(t.Context(), filepath.Join(t.TempDir(), "pulled.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{}); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { local.Close() })
				}
				f.Kind, f.Method = httpproxy.SwitchAfter, http.MethodPost
				rule := proxy.Add(f)
				var before [2]int64
				for i, s := range servers {
					before[i] = s.applied.Load() + s.reads.Load()
				}
				res, err := w.sync(t.Context(), proxy.URL(), src, local, dir == "pull")
				rule.Disable()
				if err != nil {
					t.Fatalf("%s through the moving proxy: %v", dir, err)
				}
				if res.Pages < 2 || rule.Fired() < 2 {
					t.Fatalf("%s: %d pages, the client moved %d times", dir, res.Pages, rule.Fired())
				}
				if servers[0].counts(w) {
					for i, s := range servers {
						if s.applied.Load()+s.reads.Load() == before[i] {
							t.Fatalf("%s: server %d answered none of the client's pages", dir, i)
						}
					}
				}
				requireSame(t, servers[1].Server, local, src.Identity)
			}
		})
	}
}
