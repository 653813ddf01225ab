package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// Seeds of `bench load`'s clients: client i of the small fixture is the fixture user of
// seed loadSmallSeed+i, of the toolbox fixture loadBigSeed+i, each an identity of its own.
const (
	loadSmallSeed = 1000
	loadBigSeed   = 2000
	// loadErrorSamples bounds the error messages a report keeps.
	loadErrorSamples = 10
)

// loadConfig is one load run: how many clients push each fixture, whether they pull it back
// afterwards, and where their wallets are made (once, then reused) and the server's store
// and the pulled wallets live.
type loadConfig struct {
	Small, Big int
	Pull       bool
	Dir, Work  string
	Progress   io.Writer
	// Postgres, when set, is the PostgreSQL database (postgres://...) that loadServers
	// `walletsync serve` processes of the binary Exe share; without it one walletsync serve
	// runs in this process on a SQLite store in Work.
	Postgres string
	Exe      string
}

// loadServers is how many `walletsync serve` processes a PostgreSQL load run starts over
// its one database.
const loadServers = 2

// latency is a distribution of request latencies, in milliseconds (nearest rank).
type latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func latencyOf(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
	return latency{Count: len(ds), P50: ms(stats.Percentile(ds, 0.50)), P95: ms(stats.Percentile(ds, 0.95)),
		P99: ms(stats.Percentile(ds, 0.99)), Max: ms(ds[len(ds)-1])}
}

// loadClass is what the clients of one fixture did in a phase.
type loadClass struct {
	Fixture string `json:"fixture"`
	Clients int    `json:"clients"`
	Rows    int64  `json:"rows"` // over all its clients
	// Sync times, first request to acknowledged last page, in seconds.
	MedianSeconds float64 `json:"medianSeconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
}

// loadPhase is one phase of the load: every client pushes its wallet to the server, or
// pulls it back into a new wallet, all at once, each as a new `walletsync sync` process
// would (a new client: handshake and negotiation first).
type loadPhase struct {
	Name    string      `json:"name"` // push or pull
	Classes []loadClass `json:"classes"`
	// Seconds is the phase's wall time: every client starts at once, and it ends when the
	// last one is done.
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"` // HTTP requests, BRC-104 handshakes included
	// Latency is every HTTP request's, measured by its client (see requestLog); Pages that
	// of the page requests alone (commits of a push, page reads of a pull).
	Latency latency `json:"latencyMs"`
	Pages   latency `json:"pageLatencyMs"`
	// Errors counts the syncs that failed and the requests that failed or were refused,
	// other than Busy: the "busy, retry after" answers (HTTP 503 and 429) that the client
	// waited out and retried.
	Errors int `json:"errors"`
	Busy   int `json:"busy"`
	// Moved counts the clients whose pages were answered by more than one server (a
	// PostgreSQL run moves some mid-sync, see moveMode), Rehandshakes the refusals they met
	// where a server did not know the BRC-104 session they had opened with another (each
	// followed by a handshake there and the same request again; see httpRequest.Moved).
	Moved        int `json:"moved,omitempty"`
	Rehandshakes int `json:"rehandshakes,omitempty"`
}

// loadReport is the result of `walletsync bench load` on one backend.
type loadReport struct {
	// Backend is "postgres" for a PostgreSQL run (Servers processes over one database, on
	// Wire, the wire remote.Dial chose); all three are empty for the SQLite run of one
	// server in the bench's process over the paged wire.
	Backend string      `json:"backend,omitempty"`
	Servers int         `json:"servers,omitempty"`
	Wire    string      `json:"wire,omitempty"`
	Phases  []loadPhase `json:"phases"`
	// Errors and Busy are the phases' together; ErrorSamples the first few errors.
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	Busy         int      `json:"busy"`
	// Verified counts the clients whose rows on the server, and in the wallet the pull
	// made, equal their wallet's, table by table (compare.Read of both,
	// compare.AfterSync); Mismatches describes the others.
	Verified   int      `json:"verified"`
	Mismatches []string `json:"mismatches,omitempty"`
}

// ok reports whether the run had no error and every client's data is exact.
func (r loadReport) ok() bool { return r.Errors == 0 && len(r.Mismatches) == 0 }

// RunLoad is `walletsync bench load`: a load test that stops by itself. By default it
// starts `walletsync serve` in this process on 127.0.0.1 on a SQLite store (serve.Open and
// Run with the paged wire, as the serve command does), then --clients clients push the
// small fixture and --big clients the toolbox fixture to it at the same time, each a
// distinct identity with its own wallet and its own connections, as `walletsync sync --to
// URL` does (wire.Provider, pages of the default size); with --pull they then pull it back
// into new wallets, all at once too, as `walletsync sync --from URL` does. It reports the
// HTTP request latencies the clients saw, the errors and the busy answers apart, and checks
// afterwards that every client's rows on the server (and in the wallet it pulled) equal its
// wallet's, table by table. It fails when there was an error or a difference.
//
// --db chooses the backends, one run each, printed side by side: sqlite (the above),
// postgres (a throwaway PostgreSQL cluster, as the tests start one: testkit/pgcluster), or
// postgres://USER@HOST/DB (that server; the run creates a scratch database there and drops
// it afterwards, so the role needs CREATEDB). A PostgreSQL run starts two `walletsync
// serve` processes of this binary over one database, spreads the clients across both, and
// moves some of them between the two mid-sync (moveMode); they speak the wire the servers
// offer (remote.Dial with auto), as `walletsync sync` would.
func RunLoad(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("load", "[--clients 50] [--big 5] [--pull] [--db sqlite|postgres|postgres://URL[,...]] [--dir D] [--json]", out)
	small := fs.Int("clients", 50, "clients pushing the small fixture, each its own identity and wallet")
	big := fs.Int("big", 5, "clients pushing the toolbox fixture at the same time")
	pull := fs.Bool("pull", false, "then pull every wallet back into a new one, all clients at once (retained views: busy answers)")
	db := fs.String("db", "sqlite", "the servers' backends, comma-separated, one run each: sqlite (one server in this process), postgres (two server processes over a throwaway PostgreSQL cluster), postgres://URL (over a scratch database on that server)")
	dir := fs.String("dir", defaultBenchDir(), "where generated bench wallets are kept")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if *small < 0 || *big < 0 || *small+*big == 0 {
		return fmt.Errorf("%w: --clients and --big must not be negative, and one at least 1", command.ErrUsage)
	}
	backends := strings.Split(*db, ",")
	for _, b := range backends {
		if b != "sqlite" && b != "postgres" && !isPostgresURL(b) {
			return fmt.Errorf("%w: --db takes sqlite, postgres or postgres://URL, comma-separated, not %q", command.ErrUsage, b)
		}
	}
	progress := out
	if *asJSON {
		progress = io.Discard
	}
	var reps []loadReport
	for _, b := range backends {
		rep, err := loadOn(ctx, b, loadConfig{Small: *small, Big: *big, Pull: *pull, Dir: *dir, Progress: progress})
		if err != nil {
			return command.Cancelled(ctx, err)
		}
		reps = append(reps, rep)
	}
	var v any = loadComparison{Runs: reps}
	if len(reps) == 1 {
		v = reps[0]
	}
	if err := command.Report(out, *asJSON, v, func(w io.Writer) {
		for _, rep := range reps {
			printLoad(w, rep)
		}
		if len(reps) > 1 {
			printLoadComparison(w, reps)
		}
	}); err != nil {
		return err
	}
	for _, rep := range reps {
		if !rep.ok() {
			return fmt.Errorf("load on %s: %d errors, %d clients' data differ: %w", rep.backend(), rep.Errors, len(rep.Mismatches), errBenchMismatch)
		}
	}
	return nil
}

// loadComparison is `bench load --json` with more than one backend: a report each.
type loadComparison struct {
	Runs []loadReport `json:"runs"`
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// loadOn runs cfg on one backend of --db, in a work folder of its own; a PostgreSQL run in
// a scratch database of the server (a throwaway cluster for "postgres"), dropped after.
func loadOn(ctx context.Context, backend string, cfg loadConfig) (loadReport, error) {
	work, err := os.MkdirTemp("", "walletsync-bench-load-")
	if err != nil {
		return loadReport{}, err
	}
	defer os.RemoveAll(work)
	cfg.Work = work
	b, release, err := openBackend(ctx, backend, cfg.Progress)
	if err != nil {
		return loadReport{}, err
	}
	defer release()
	if b.postgres == nil {
		return runLoad(ctx, cfg)
	}
	db, drop, err := b.postgres.CreateDatabase(ctx, "bench_load")
	if err != nil {
		return loadReport{}, err
	}
	defer func() { warnCleanup("drop the load database", drop(context.WithoutCancel(ctx))) }()
	cfg.Postgres, cfg.Exe = db, b.exe
	return runLoad(ctx, cfg)
}

// loadClient is one client of the load: its wallet and identity, the server it starts on
// and how it moves, and what its syncs did.
type loadClient struct {
	class    int // index in loadPhase.Classes
	seed     uint64
	path     string // its wallet
	writable bool   // path is the run's own copy, which its push may write
	pulled   string // the wallet its pull made
	identity string
	home     int // the server it starts a sync on
	move     moveMode
	// The phase's: its requests, and its sync's time, rows and error.
	log     *requestLog
	seconds float64
	rows    int64
	err     error
}

// loadTarget is what a load run syncs with: the servers' URLs, the wire they offer, and a
// reader of a client's rows on them.
type loadTarget struct {
	urls []string
	wire remote.Wire // Toolbox or Walletsync
	read func(ctx context.Context, identity string) (compare.Wallet, error)
}

// runLoad runs the load of cfg and verifies every client's data afterwards. An error is
// returned only for what stops the run itself (a wallet that cannot be made, a server that
// does not start); the clients' failures are in the report.
func runLoad(ctx context.Context, cfg loadConfig) (loadReport, error) {
	var rep loadReport
	fmt.Fprintf(cfg.Progress, "making the clients' wallets in %s (once; later runs reuse them)...\n", cfg.Dir)
	var clients []*loadClient
	for class, c := range []struct {
		f     localstore.Fixture
		n     int
		first uint64
	}{{localstore.FixtureSmall, cfg.Small, loadSmallSeed}, {localstore.FixtureToolbox, cfg.Big, loadBigSeed}} {
		for i := range c.n {
			seed := c.first + uint64(i)
			path, identity, err := seededWallet(ctx, cfg.Dir, c.f, seed, io.Discard)
			if err != nil {
				return rep, err
			}
			clients = append(clients, &loadClient{class: class, seed: seed, path: path, identity: identity,
				pulled: filepath.Join(cfg.Work, fmt.Sprintf("pulled-%d.sqlite", seed))})
		}
	}
	target, stop, err := startLoadTarget(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer stop()
	if cfg.Postgres != "" {
		rep.Backend, rep.Servers, rep.Wire = "postgres", len(target.urls), string(target.wire)
	}
	if target.wire == remote.Toolbox {
		// A push on the toolbox wire first merges the server's copy into the wallet and
		// keeps its sync state there (BRC-40 both ways, as `walletsync sync --to URL` does),
		// so each client pushes a copy of its wallet: the made ones are reused by later runs.
		for _, c := range clients {
			cp := filepath.Join(cfg.Work, filepath.Base(c.path))
			if err := safefile.CopyNew(c.path, cp); err != nil {
				return rep, err
			}
			c.path, c.writable = cp, true
		}
	}
	// Clients take the servers in turn; with more than one, every fourth from the second
	// moves after its first page and every fourth from the fourth after every page.
	for i, c := range clients {
		c.home = i % len(target.urls)
		if len(target.urls) > 1 {
			c.move = []moveMode{stay, moveOnce, stay, moveEvery}[i%4]
		}
	}

	phases := []struct {
		name string
		run  func(*loadClient, context.Context, remote.Provider) (pagedRun, error)
	}{{"push", (*loadClient).push}, {"pull", (*loadClient).pull}}
	if !cfg.Pull {
		phases = phases[:1]
	}
	for _, ph := range phases {
		fmt.Fprintf(cfg.Progress, "%d clients %s at once, at %s...\n", len(clients), ph.name, strings.Join(target.urls, " and "))
		p, err := loadRound(ctx, clients, target, ph.run)
		if err != nil {
			return rep, err
		}
		p.Name = ph.name
		p.Classes[0].Clients, p.Classes[1].Clients = cfg.Small, cfg.Big
		rep.Phases = append(rep.Phases, p)
		rep.Errors += p.Errors
		rep.Busy += p.Busy
		for _, c := range clients {
			for _, r := range c.log.requests() {
				if requestFailed(r) {
					rep.sample(fmt.Errorf("%s, client %d: POST %s: HTTP %d", ph.name, c.seed, r.Path, r.Status))
				}
			}
			if c.err != nil {
				rep.sample(fmt.Errorf("%s, client %d: %w", ph.name, c.seed, c.err))
			}
		}
	}

	fmt.Fprintln(cfg.Progress, "comparing every client's rows on the server with its wallet...")
	for _, c := range clients {
		d, err := c.compare(ctx, target.read, cfg.Pull)
		switch {
		case err != nil:
			return rep, err
		case d != "":
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("client %d (%s): %s", c.seed, wallet.ShortKey(c.identity, 16), d))
		default:
			rep.Verified++
		}
	}
	return rep, nil
}

// startLoadTarget starts the servers of cfg: one walletsync serve in this process on a
// SQLite store, or loadServers processes of cfg.Exe over the PostgreSQL database, all
// under one identity key (one storage, whichever process answers). It returns them and a
// function that stops them.
func startLoadTarget(ctx context.Context, cfg loadConfig) (loadTarget, func(), error) {
	if cfg.Postgres == "" {
		key, err := secp256k1.GeneratePrivateKey()
		if err != nil {
			return loadTarget{}, nil, err
		}
		srv, url, stop, err := startServe(ctx, filepath.Join(cfg.Work, "server.sqlite"), key, serve.WireMount(wire.ViewOptions{}, slog.New(slog.DiscardHandler)))
		if err != nil {
			return loadTarget{}, nil, err
		}
		read := func(ctx context.Context, identity string) (compare.Wallet, error) {
			return compare.Read(ctx, srv.Store(), identity, compare.AfterSync())
		}
		return loadTarget{urls: []string{url}, wire: remote.Walletsync, read: read}, stop, nil
	}
	keyFile := filepath.Join(cfg.Work, "server.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		return loadTarget{}, nil, err
	}
	var procs []*serveProcess
	stop := func() {
		for _, p := range procs {
			if err := p.stop(); err != nil {
				fmt.Fprintf(cfg.Progress, "warning: %v\n", err)
			}
		}
	}
	var t loadTarget
	for i := range loadServers {
		p, err := startServeProcess(ctx, cfg.Exe, cfg.Postgres, keyFile, filepath.Join(cfg.Work, fmt.Sprintf("serve-%d.log", i)))
		if err != nil {
			stop()
			return loadTarget{}, nil, err
		}
		procs = append(procs, p)
		t.urls = append(t.urls, p.URL)
	}
	store, err := pgstore.Open(ctx, cfg.Postgres, pgstore.Options{})
	if err != nil {
		stop()
		return loadTarget{}, nil, err
	}
	// One Dial chooses for every client, as `walletsync sync` would choose (remote.Auto):
	// the clients must all speak one wire for the report to say which.
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		store.Close()
		stop()
		return loadTarget{}, nil, err
	}
	chosen, err := remote.Dial(ctx, t.urls[0], auth.NewProtoWallet(key), remote.Auto, remote.Options{})
	if err != nil {
		store.Close()
		stop()
		return loadTarget{}, nil, err
	}
	t.wire = chosen.Wire
	t.read = func(ctx context.Context, identity string) (compare.Wallet, error) {
		return compare.ReadChunks(ctx, store, identity, compare.AfterSync())
	}
	return t, func() { store.Close(); stop() }, nil
}

// loadRound runs run for every client at once, each with a new client of the servers'
// wire, and returns what the round did.
func loadRound(ctx context.Context, clients []*loadClient, target loadTarget, run func(*loadClient, context.Context, remote.Provider) (pagedRun, error)) (loadPhase, error) {
	p := loadPhase{Classes: []loadClass{{Fixture: string(localstore.FixtureSmall)}, {Fixture: string(localstore.FixtureToolbox)}}}
	hosts := make([]string, len(target.urls))
	for i, u := range target.urls {
		hosts[i] = strings.TrimPrefix(u, "http://")
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		c.log, c.seconds, c.rows, c.err = newRequestLog(), 0, 0, nil
		c.log.route = newRouter(hosts, c.home, c.move)
		wg.Go(func() {
			server, err := dialUser(ctx, target.urls[c.home], c.seed, target.wire, c.log)
			if err != nil {
				c.err = err
				return
			}
			<-start
			res, err := run(c, ctx, server)
			c.seconds, c.rows, c.err = res.Seconds, res.Rows, err
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	p.Seconds = time.Since(began).Seconds()
	if err := ctx.Err(); err != nil {
		return p, err
	}
	var all, pages []time.Duration
	secs := make([][]float64, len(p.Classes))
	for _, c := range clients {
		for _, r := range c.log.requests() {
			all = append(all, r.Took)
			if r.Page {
				pages = append(pages, r.Took)
			}
			switch {
			case r.Moved:
				p.Rehandshakes++
			case r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests:
				p.Busy++
			case requestFailed(r):
				p.Errors++
			}
		}
		if c.err != nil {
			p.Errors++
		}
		if c.log.route.servers() > 1 {
			p.Moved++
		}
		p.Classes[c.class].Rows += c.rows
		secs[c.class] = append(secs[c.class], c.seconds)
	}
	p.Requests = len(all)
	p.Latency, p.Pages = latencyOf(all), latencyOf(pages)
	for i, s := range secs {
		if len(s) > 0 {
			p.Classes[i].MedianSeconds, p.Classes[i].MaxSeconds = stats.Median(s), slices.Max(s)
		}
	}
	return p, nil
}

// requestFailed reports a request that got no answer or a refusal other than busy or a
// moved client's expected one.
func requestFailed(r httpRequest) bool {
	busy := r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests
	return !busy && !r.Moved && (r.Status == 0 || r.Status >= 400)
}

func (r *loadReport) sample(err error) {
	if len(r.ErrorSamples) < loadErrorSamples {
		r.ErrorSamples = append(r.ErrorSamples, err.Error())
	}
}

// push syncs the client's wallet to the servers.
func (c *loadClient) push(ctx context.Context, r remote.Provider) (pagedRun, error) {
	src, err := localstore.Open(ctx, c.path, localstore.Options{ReadOnly: !c.writable})
	if err != nil {
		return pagedRun{}, err
	}
	defer src.Close()
	return syncRemote(ctx, r, src, c.identity, wallet.KeepSourceActive)
}

// pull syncs the client's rows on the servers into a new wallet.
func (c *loadClient) pull(ctx context.Context, r remote.Provider) (pagedRun, error) {
	dst, err := localstore.Create(ctx, c.pulled, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		return pagedRun{}, err
	}
	defer dst.Close()
	return syncRemote(ctx, r, dst, c.identity, wallet.KeepDestinationActive)
}

// compare returns how the client's rows on the server, and in the wallet it pulled when
// pulled is set, differ from its wallet's ("" when they are equal).
func (c *loadClient) compare(ctx context.Context, server func(context.Context, string) (compare.Wallet, error), pulled bool) (string, error) {
	read := func(what string, src func(context.Context, string) (compare.Wallet, error)) (compare.Wallet, error) {
		w, err := src(ctx, c.identity)
		if err != nil && !errors.Is(err, wallet.ErrNotFound) {
			return nil, fmt.Errorf("read client %d's rows %s: %w", c.seed, what, err)
		}
		return w, nil
	}
	open := func(path string) (compare.Wallet, error) {
		s, err := localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return read("in "+filepath.Base(path), func(ctx context.Context, identity string) (compare.Wallet, error) {
			return compare.Read(ctx, s, identity, compare.AfterSync())
		})
	}
	want, err := open(c.path)
	if err != nil {
		return "", err
	}
	got, err := read("on the server", server)
	if err != nil {
		return "", err
	}
	if d := compare.Diff(want, got); d != "" {
		return "on the server: " + d, nil
	}
	if !pulled {
		return "", nil
	}
	if got, err = open(c.pulled); err != nil {
		return "", err
	}
	if d := compare.Diff(want, got); d != "" {
		return "in the wallet it pulled: " + d, nil
	}
	return "", nil
}

func printLoad(w io.Writer, rep loadReport) {
	if rep.Backend == "" {
		fmt.Fprintln(w, "bench load: clients sync with one walletsync serve on 127.0.0.1 at once, over the paged wire, each its own identity and wallet")
	} else {
		wireNote := "the paged wire"
		if rep.Wire == string(remote.Toolbox) {
			wireNote = "the toolbox wire (the servers offer no paged wire on PostgreSQL, so remote.Dial chose it)"
		}
		fmt.Fprintf(w, "bench load on PostgreSQL: clients sync with %d walletsync serve processes over one database at once, over %s, each its own identity and wallet, spread across the servers; some move between them mid-sync\n", rep.Servers, wireNote)
	}
	for _, p := range rep.Phases {
		fmt.Fprintf(w, "  %s: %.2f s in all, %d HTTP requests (BRC-104 handshakes included)\n", p.Name, p.Seconds, p.Requests)
		for _, c := range p.Classes {
			if c.Clients > 0 {
				fmt.Fprintf(w, "    %3d clients, %-7s fixture: %7d rows in all; each sync %.2f s median, %.2f s at most\n", c.Clients, c.Fixture, c.Rows, c.MedianSeconds, c.MaxSeconds)
			}
		}
		for _, l := range []struct {
			name string
			l    latency
		}{{"every request", p.Latency}, {"page requests", p.Pages}} {
			fmt.Fprintf(w, "    latency, %-13s (%5d): p50 %7.1f ms  p95 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", l.name, l.l.Count, l.l.P50, l.l.P95, l.l.P99, l.l.Max)
		}
		fmt.Fprintf(w, "    errors: %d; busy answers retried: %d\n", p.Errors, p.Busy)
		if rep.Servers > 1 {
			fmt.Fprintf(w, "    clients whose pages both servers answered: %d (sessions opened again on the other server: %d)\n", p.Moved, p.Rehandshakes)
		}
	}
	fmt.Fprintf(w, "  errors: %d (goal: none); busy answers retried: %d\n", rep.Errors, rep.Busy)
	for _, e := range rep.ErrorSamples {
		fmt.Fprintf(w, "    %s\n", e)
	}
	where := "on the server"
	if len(rep.Phases) > 1 {
		where += " and in the wallets they pulled"
	}
	fmt.Fprintf(w, "  data: %d of %d clients' rows %s equal their wallets', table by table\n", rep.Verified, rep.Verified+len(rep.Mismatches), where)
	for _, m := range rep.Mismatches {
		fmt.Fprintf(w, "    %s\n", m)
	}
}

// backend names the run's backend in messages.
func (r loadReport) backend() string {
	if r.Backend == "" {
		return "sqlite"
	}
	return r.Backend
}

// printLoadComparison prints the runs' figures side by side, phase by phase.
func printLoadComparison(w io.Writer, reps []loadReport) {
	fmt.Fprintln(w, "bench load, the backends side by side (the same clients and wallets; latencies of every request, in ms):")
	fmt.Fprintf(w, "  %-9s %-5s %-10s %7s %8s %8s %8s %8s %9s %7s %8s\n", "backend", "phase", "wire", "wall s", "requests", "p50", "p95", "p99", "page p95", "errors", "exact")
	for _, rep := range reps {
		wireName := rep.Wire
		if wireName == "" {
			wireName = "walletsync"
		}
		for _, p := range rep.Phases {
			fmt.Fprintf(w, "  %-9s %-5s %-10s %7.2f %8d %8.1f %8.1f %8.1f %9.1f %7d %4d/%-3d\n", rep.backend(), p.Name, wireName, p.Seconds, p.Requests,
				p.Latency.P50, p.Latency.P95, p.Latency.P99, p.Pages.P95, p.Errors, rep.Verified, rep.Verified+len(rep.Mismatches))
		}
	}
}
