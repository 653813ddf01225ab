package serve

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/testfs"
	"walletsync/wallet"
)

// quotaWires are faultWires' two wires with pages of up to 500 rows (the fault suite's 8
// would take minutes for the toolbox fixture).
var quotaWires = []faultWire{
	{name: "walletsync", sync: func(ctx context.Context, url string, src fixtureWallet, local *localstore.Store, _ bool) (syncer.Result, error) {
		ac, err := auth.NewClient(url, fixtureSigner(src), auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
		if err != nil {
			return syncer.Result{}, err
		}
		p, err := wire.NewProvider(ac, wire.ProviderOptions{BusyWait: 10 * time.Second})
		if err != nil {
			return syncer.Result{}, err
		}
		return syncer.Run(ctx, local, p, src.Identity, syncer.Options{Active: wallet.KeepSourceActive, MaxRows: 500})
	}},
	{name: "toolbox", sync: func(ctx context.Context, url string, src fixtureWallet, local *localstore.Store, _ bool) (syncer.Result, error) {
		c, err := toolbox.Dial(url, fixtureSigner(src), toolbox.ClientOptions{})
		if err != nil {
			return syncer.Result{}, err
		}
		return syncer.RunChunks(ctx, local, c, src.Identity, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 500, Settle: -1})
	}},
}

// sourceUsage is what identity holds in the wallet file at path, as the server counts it.
func sourceUsage(t *testing.T, path, identity string) wallet.Usage {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.Usage(t.Context(), identity)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// serverUsage is what identity holds on the server's store.
func serverUsage(t *testing.T, r *running, identity string) wallet.Usage {
	t.Helper()
	u, err := r.store.(usageStore).Usage(t.Context(), identity)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// renameStore gives the wallet file at path another storage identity key, as a restore
// into a new store would: the same user syncing from one more store.
func renameStore(t *testing.T, path, key string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "UPDATE settings SET storageIdentityKey = ?", key); err != nil {
		t.Fatal(err)
	}
}

// TestServe_QuotaRefusesOnlyTheTenantOverIt: on every backend and both wires, a tenant
// whose wallet is over a per-identity quota (bytes, rows, or one more store to sync from
// than the sync-state quota allows) is refused with a *wallet.QuotaError naming the
// resource (rebuilt from the paged wire's quota_exceeded, and from the toolbox wire's
// WERR_WALLETSYNC_QUOTA_EXCEEDED as wallet.ErrQuotaExceeded), never holds more than the
// quota, and its rows on the server are the same after a refused push as before it; a
// tenant under the quota pushes its whole wallet before and after the refusals, and
// /metrics counts the refusals by reason.
func TestServe_QuotaRefusesOnlyTheTenantOverIt(t *testing.T) {
	big := seedWallet(t, localstore.FixtureToolbox, 31) // 64 transactions of 32 KiB
	small := seedWallet(t, localstore.FixtureSmall, 32)
	later := seedWallet(t, localstore.FixtureSmall, 33)
	bigUse, smallUse := sourceUsage(t, big.Path, big.Identity), sourceUsage(t, small.Path, small.Identity)
	if bigUse.Rows <= smallUse.Rows || bigUse.Bytes <= 2*smallUse.Bytes {
		t.Fatalf("the fixtures do not differ enough: %+v, %+v", bigUse, smallUse)
	}
	cases := []struct {
		name     string
		quotas   Quotas
		resource string
		limit    int64
		// over is the wallet pushed over the quota (a copy of big, or of small from a
		// second store).
		over func(t *testing.T) fixtureWallet
	}{
		{"bytes", Quotas{MaxBytes: bigUse.Bytes / 2}, wallet.QuotaBytes, bigUse.Bytes / 2,
			func(*testing.T) fixtureWallet { return big }},
		{"rows", Quotas{MaxRows: (bigUse.Rows + smallUse.Rows) / 2}, wallet.QuotaRows, (bigUse.Rows + smallUse.Rows) / 2,
			func(*testing.T) fixtureWallet { return big }},
		{"sync_states", Quotas{MaxSyncStates: 1}, wallet.QuotaSyncStates, 1,
			func(t *testing.T) fixtureWallet {
				// small's user, from a second store: its second sync state.
				w := fixtureWallet{Path: copyWallet(t, small.Path), Identity: small.Identity, KeyHex: small.KeyHex}
				renameStore(t, w.Path, "03"+strings.Repeat("ab", 32))
				return w
			}},
	}
	for _, b := range serverBackends {
		for _, w := range quotaWires {
			for _, tc := range cases {
				t.Run(b.name+"/"+w.name+"/"+tc.name, func(t *testing.T) {
					opts := b.options(t)
					opts.Quotas = tc.quotas
					opts.Mounts = []Mount{WireMount(wire.ViewOptions{}, nil)}
					r := startServer(t, opts)
					push := func(src fixtureWallet) (*localstore.Store, error) {
						local := openStore(t, copyWallet(t, src.Path))
						_, err := w.sync(t.Context(), r.URL, src, local, false)
						return local, err
					}
					if local, err := push(small); err != nil {
						t.Fatalf("the tenant under the quota: %v", err)
					} else {
						requireSame(t, r.Server, local, small.Identity)
					}

					over := tc.over(t)
					_, err := push(over)
					var qe *wallet.QuotaError
					switch {
					case !errors.Is(err, wallet.ErrQuotaExceeded):
						t.Fatalf("push over the %s quota: %v, want wallet.ErrQuotaExceeded", tc.name, err)
					case w.name == "walletsync" && (!errors.As(err, &qe) || qe.Resource != tc.resource || qe.Limit != tc.limit):
						t.Fatalf("the paged wire's refusal: %#v, want a *wallet.QuotaError of %s at %d", qe, tc.resource, tc.limit)
					case w.name == "toolbox" && !strings.Contains(err.Error(), "WERR_WALLETSYNC_QUOTA_EXCEEDED") || errors.Is(err, wallet.ErrUnavailable):
						t.Fatalf("the toolbox wire's refusal: %v", err)
					}
					held := serverUsage(t, r, over.Identity)
					if held.Rows > r.opts.Quotas.MaxRows || held.Bytes > r.opts.Quotas.MaxBytes || int64(len(held.Producers)) > r.opts.Quotas.MaxSyncStates {
						t.Fatalf("the tenant over the quota holds %+v, past %+v", held, r.opts.Quotas)
					}
					before := backendWallet(t, r.Backend(), over.Identity)
					if _, err := push(over); !errors.Is(err, wallet.ErrQuotaExceeded) {
						t.Fatalf("the same push again: %v, want wallet.ErrQuotaExceeded", err)
					}
					if d := compare.Diff(before, backendWallet(t, r.Backend(), over.Identity)); d != "" {
						t.Fatalf("a refused push changed the tenant's rows:\n%s", d)
					}

					if local, err := push(later); err != nil {
						t.Fatalf("another tenant after the refusals: %v", err)
					} else {
						requireSame(t, r.Server, local, later.Identity)
					}
					_, metrics := get(t, r.MetricsURL+"/metrics")
					for _, want := range []string{
						fmt.Sprintf("walletsync_serve_refused_total{reason=%q} ", "quota_"+tc.resource),
						fmt.Sprintf("walletsync_serve_quota_limit{resource=%q} %d\n", tc.resource, tc.limit),
					} {
						if !strings.Contains(metrics, want) {
							t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
						}
					}
					if strings.Contains(metrics, fmt.Sprintf("walletsync_serve_refused_total{reason=%q} 0\n", "quota_"+tc.resource)) {
						t.Fatalf("/metrics counts no %s refusal:\n%s", tc.resource, metrics)
					}
					var used int64
					prefix := fmt.Sprintf("walletsync_serve_quota_used_max{resource=%q} ", tc.resource)
					for _, line := range strings.Split(metrics, "\n") {
						if v, ok := strings.CutPrefix(line, prefix); ok {
							used, _ = strconv.ParseInt(v, 10, 64)
						}
					}
					if used <= 0 || used > tc.limit {
						t.Fatalf("/metrics gives the highest %s use as %d, want 1 to %d:\n%s", tc.resource, used, tc.limit, metrics)
					}
				})
			}
		}
	}
}

// TestServe_QuotaRefusalReachesTheToolboxClient: @bsv/wallet-toolbox's StorageClient
// rebuilds the quota refusal as a WalletError named WERR_WALLETSYNC_QUOTA_EXCEEDED (its
// WalletErrorFromJson keeps the name and message of a class it does not know), never
// WERR_INTERNAL: a user with one sync state asks for a second past a quota of one.
func TestServe_QuotaRefusalReachesTheToolboxClient(t *testing.T) {
	r := startServer(t, Options{Quotas: Quotas{MaxSyncStates: 1}})
	key := randomKey(t)
	me := map[string]any{"identityKey": pubHex(key)}
	if ans := clientCall(t, r.URL, keyHex(key), "findOrInsertSyncStateAuth", me, "02"+strings.Repeat("11", 32), "first"); ans.Error != nil {
		t.Fatalf("the first sync state: %+v", ans.Error)
	}
	ans := clientCall(t, r.URL, keyHex(key), "findOrInsertSyncStateAuth", me, "02"+strings.Repeat("22", 32), "second")
	if ans.Error == nil || ans.Error.Name != "WERR_WALLETSYNC_QUOTA_EXCEEDED" || !ans.Error.IsWERR || !strings.Contains(ans.Error.Message, "sync_states") {
		t.Fatalf("a second sync state past a quota of one: %+v", ans)
	}
}

// TestWalletErrorFor_StorageRefusals: the JSON-RPC error body a toolbox client reads for a
// quota refusal and a full disk: HTTP 200, isError, the WERR_WALLETSYNC_* name, and for a
// full disk a fixed message that names no server path; a Go client maps both names back to
// the sentinels.
func TestWalletErrorFor_StorageRefusals(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantName string
		want     error
	}{
		{"quota", fmt.Errorf("admit: %w", &wallet.QuotaError{Resource: wallet.QuotaRows, Used: 9, Adding: 2, Limit: 10}), "WERR_WALLETSYNC_QUOTA_EXCEEDED", wallet.ErrQuotaExceeded},
		{"disk full", fmt.Errorf("commit /srv/secret/server.sqlite: %w", &wallet.ClassError{Class: wallet.ErrDiskFull, Err: errors.New("ENOSPC")}), "WERR_WALLETSYNC_DISK_FULL", wallet.ErrDiskFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			we := toolbox.WalletErrorFor(tc.err, "")
			if we.Name != tc.wantName || strings.Contains(we.Message, "/srv/secret") {
				t.Fatalf("%v sent as %+v", tc.err, we)
			}
			if !errors.Is(we, tc.want) || !errors.Is(we, wallet.ErrRemote) {
				t.Fatalf("a Go client reads %s as %v, want %v", we.Name, we, tc.want)
			}
		})
	}
}

// fullStores put a server's store on a real file system that fills up (a tmpfs,
// testkit/testfs: the kernel's ENOSPC): the SQLite file itself (SQLite reports SQLITE_FULL,
// or an I/O error with that errno), or the tablespace that a PostgreSQL database creates
// its tables in (PostgreSQL reports SQLSTATE 53100). Each returns the server's options and
// the folder to grow.
var fullStores = []struct {
	name string
	open func(t *testing.T) (Options, string)
}{
	{"sqlite", func(t *testing.T) (Options, string) {
		dir := testfs.Tmpfs(t, "2m")
		return Options{DBPath: filepath.Join(dir, "server.sqlite")}, dir
	}},
	{"postgres", func(t *testing.T) (Options, string) {
		if os.Getenv("WALLETSYNC_PG_URL") != "" {
			t.Skip("a tablespace on a tmpfs needs the throwaway cluster on this machine, not the server WALLETSYNC_PG_URL names")
		}
		dir := testfs.Tmpfs(t, "3m")
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(pgUser.Uid)
		gid, _ := strconv.Atoi(pgUser.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil { // the test's temp folder: let the server reach it
			t.Fatal(err)
		}
		admin, err := pgx.Connect(t.Context(), cluster.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(context.Background())
		space := fmt.Sprintf("full_%d", time.Now().UnixNano())
		if _, err := admin.Exec(t.Context(), "CREATE TABLESPACE "+space+" LOCATION '"+dir+"'"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // after the database is dropped, before the tmpfs is unmounted
			c, err := pgx.Connect(context.Background(), cluster.URL)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close(context.Background())
			if _, err := c.Exec(context.Background(), "DROP TABLESPACE "+space); err != nil {
				t.Error(err)
			}
		})
		dbURL := cluster.NewDatabase(t)
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" SET default_tablespace = "+space); err != nil {
			t.Fatal(err)
		}
		return Options{PostgresURL: dbURL}, dir
	}},
}

// TestServe_DiskFullIsTypedOnBothWires runs a server whose store fills its disk
// (fullStores). A push on each wire is refused as a full disk (the paged wire's disk_full,
// the toolbox wire's WERR_WALLETSYNC_DISK_FULL, never WERR_INTERNAL), /readyz answers 503
// "cannot write (disk full)" and /metrics counts it; once the file system has room again
// (remounted larger), /readyz is ready again and both pushes complete, equal to their
// sources.
func TestServe_DiskFullIsTypedOnBothWires(t *testing.T) {
	for _, fs := range fullStores {
		t.Run(fs.name, func(t *testing.T) { diskFullCase(t, fs.open) })
	}
}

func diskFullCase(t *testing.T, open func(t *testing.T) (Options, string)) {
	opts, dir := open(t)
	opts.Mounts = []Mount{WireMount(wire.ViewOptions{}, nil)}
	r := startServer(t, opts)
	if status, body := get(t, r.MetricsURL+"/readyz"); status != 200 {
		t.Fatalf("readyz before: %d %q", status, body)
	}
	type tenant struct {
		w     faultWire
		src   fixtureWallet
		local *localstore.Store
	}
	var tenants []tenant
	for i, w := range quotaWires {
		src := seedWallet(t, localstore.FixtureToolbox, uint64(41+i))
		tn := tenant{w, src, openStore(t, copyWallet(t, src.Path))}
		tenants = append(tenants, tn)
		_, err := w.sync(t.Context(), r.URL, src, tn.local, false)
		if !errors.Is(err, wallet.ErrDiskFull) {
			t.Fatalf("%s wire: a push onto the full disk: %v, want wallet.ErrDiskFull", w.name, err)
		}
		if strings.Contains(err.Error(), dir) {
			t.Fatalf("%s wire: the refusal names the server's path: %v", w.name, err)
		}
		if status, body := get(t, r.MetricsURL+"/readyz"); status != 503 || !strings.Contains(body, "disk full") {
			t.Fatalf("readyz on the full disk: %d %q", status, body)
		}
	}
	_, metrics := get(t, r.MetricsURL+"/metrics")
	if !strings.Contains(metrics, "walletsync_serve_store_writable 0\n") || strings.Contains(metrics, `walletsync_serve_refused_total{reason="disk_full"} 0`+"\n") {
		t.Fatalf("/metrics on the full disk:\n%s", metrics)
	}

	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v %s", err, out)
	}
	if status, body := get(t, r.MetricsURL+"/readyz"); status != 200 {
		t.Fatalf("readyz with room again: %d %q", status, body)
	}
	for _, tn := range tenants {
		if _, err := tn.w.sync(t.Context(), r.URL, tn.src, tn.local, false); err != nil {
			t.Fatalf("%s wire: the push with room again: %v", tn.w.name, err)
		}
		requireSame(t, r.Server, tn.local, tn.src.Identity)
	}
	if _, metrics := get(t, r.MetricsURL+"/metrics"); !strings.Contains(metrics, "walletsync_serve_store_writable 1\n") {
		t.Fatalf("/metrics with room again:\n%s", metrics)
	}
}
