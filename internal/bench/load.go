package bench

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

	"walletsync/internal/command"
	"walletsync/internal/logical"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/syncer"
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
}

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
}

// loadReport is the result of `walletsync bench load`.
type loadReport struct {
	Phases []loadPhase `json:"phases"`
	// Errors and Busy are the phases' together; ErrorSamples the first few errors.
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	Busy         int      `json:"busy"`
	// Verified counts the clients whose rows on the server, and in the wallet the pull
	// made, equal their wallet's, table by table (logical.Read of both,
	// logical.AfterSync); Mismatches describes the others.
	Verified   int      `json:"verified"`
	Mismatches []string `json:"mismatches,omitempty"`
}

// ok reports whether the run had no error and every client's data is exact.
func (r loadReport) ok() bool { return r.Errors == 0 && len(r.Mismatches) == 0 }

// RunLoad is `walletsync bench load`: a load test that stops by itself. It starts
// `walletsync serve` in this process on 127.0.0.1 (serve.Open and Run with the paged wire,
// as the serve command does), then --clients clients push the small fixture and --big
// clients the toolbox fixture to it at the same time, each a distinct identity with its
// own wallet and its own connections, as `walletsync sync --to URL` does (wire.Provider,
// pages of the default size); with --pull they then pull it back into new wallets, all at
// once too, as `walletsync sync --from URL` does. It reports the HTTP request latencies the
// clients saw, the errors and the busy answers apart, and checks afterwards that every
// client's rows on the server (and in the wallet it pulled) equal its wallet's, table by
// table. It fails when there was an error or a difference.
func RunLoad(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("bench load", "[--clients 50] [--big 5] [--pull] [--dir D] [--json]", out)
	small := fs.Int("clients", 50, "clients pushing the small fixture, each its own identity and wallet")
	big := fs.Int("big", 5, "clients pushing the toolbox fixture at the same time")
	pull := fs.Bool("pull", false, "then pull every wallet back into a new one, all clients at once (retained views: busy answers)")
	dir := fs.String("dir", defaultBenchDir(), "where generated bench wallets are kept")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if *small < 0 || *big < 0 || *small+*big == 0 {
		return fmt.Errorf("%w: --clients and --big must not be negative, and one at least 1", command.ErrUsage)
	}
	progress := out
	if *asJSON {
		progress = io.Discard
	}
	work, err := os.MkdirTemp("", "walletsync-bench-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	rep, err := runLoad(ctx, loadConfig{Small: *small, Big: *big, Pull: *pull, Dir: *dir, Work: work, Progress: progress})
	if err != nil {
		return command.Cancelled(ctx, err)
	}
	if err := command.Report(out, *asJSON, rep, func(w io.Writer) { printLoad(w, rep) }); err != nil {
		return err
	}
	if !rep.ok() {
		return fmt.Errorf("load: %d errors, %d clients' data differ: %w", rep.Errors, len(rep.Mismatches), errBenchMismatch)
	}
	return nil
}

// loadClient is one client of the load: its wallet and identity, and what its syncs did.
type loadClient struct {
	class    int // index in loadPhase.Classes
	seed     uint64
	path     string // its wallet
	pulled   string // the wallet its pull made
	identity string
	// The phase's: its requests, and its sync's time, rows and error.
	log     *requestLog
	seconds float64
	rows    int64
	err     error
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
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return rep, err
	}
	srv, url, stop, err := startServe(ctx, filepath.Join(cfg.Work, "server.sqlite"), key, serve.WireMount(wire.ViewOptions{}, slog.New(slog.DiscardHandler)))
	if err != nil {
		return rep, err
	}
	defer stop()

	phases := []struct {
		name string
		run  func(*loadClient, context.Context, *wire.Provider) (pagedRun, error)
	}{{"push", (*loadClient).push}, {"pull", (*loadClient).pull}}
	if !cfg.Pull {
		phases = phases[:1]
	}
	for _, ph := range phases {
		fmt.Fprintf(cfg.Progress, "%d clients %s at once, at %s...\n", len(clients), ph.name, url)
		p, err := loadRound(ctx, clients, url, ph.run)
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
		d, err := c.compare(ctx, srv.Store(), cfg.Pull)
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

// loadRound runs run for every client at once, each with a new client of the paged wire,
// and returns what the round did.
func loadRound(ctx context.Context, clients []*loadClient, url string, run func(*loadClient, context.Context, *wire.Provider) (pagedRun, error)) (loadPhase, error) {
	p := loadPhase{Classes: []loadClass{{Fixture: string(localstore.FixtureSmall)}, {Fixture: string(localstore.FixtureToolbox)}}}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		c.log, c.seconds, c.rows, c.err = newRequestLog(), 0, 0, nil
		wg.Go(func() {
			prov, err := pagedClient(url, c.seed, c.log)
			if err != nil {
				c.err = err
				return
			}
			<-start
			res, err := run(c, ctx, prov)
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
			if isPage(r.Path) {
				pages = append(pages, r.Took)
			}
			switch {
			case r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests:
				p.Busy++
			case requestFailed(r):
				p.Errors++
			}
		}
		if c.err != nil {
			p.Errors++
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

// requestFailed reports a request that got no answer or a refusal other than busy.
func requestFailed(r httpRequest) bool {
	busy := r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests
	return !busy && (r.Status == 0 || r.Status >= 400)
}

// isPage reports a page request: a commit, or a page read.
func isPage(path string) bool {
	return isCommit(path) || strings.HasSuffix(path, wire.Prefix+"view/read")
}

func (r *loadReport) sample(err error) {
	if len(r.ErrorSamples) < loadErrorSamples {
		r.ErrorSamples = append(r.ErrorSamples, err.Error())
	}
}

// push syncs the client's wallet to the server.
func (c *loadClient) push(ctx context.Context, p *wire.Provider) (pagedRun, error) {
	src, err := localstore.Open(ctx, c.path, localstore.Options{ReadOnly: true})
	if err != nil {
		return pagedRun{}, err
	}
	defer src.Close()
	// The options of `walletsync sync --to URL`: pages of the default size, not bulk.
	run, _, err := timedSync(ctx, src, p, c.identity, syncer.Options{Active: wallet.KeepSourceActive})
	return run, err
}

// pull syncs the client's rows on the server into a new wallet.
func (c *loadClient) pull(ctx context.Context, p *wire.Provider) (pagedRun, error) {
	dst, err := localstore.Create(ctx, c.pulled, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		return pagedRun{}, err
	}
	defer dst.Close()
	run, _, err := timedSync(ctx, p, dst, c.identity, syncer.Options{Active: wallet.KeepDestinationActive})
	return run, err
}

// compare returns how the client's rows on the server, and in the wallet it pulled when
// pulled is set, differ from its wallet's ("" when they are equal).
func (c *loadClient) compare(ctx context.Context, server wallet.Source, pulled bool) (string, error) {
	read := func(what string, src wallet.Source) (logical.Wallet, error) {
		w, err := logical.Read(ctx, src, c.identity, logical.AfterSync())
		if err != nil && !errors.Is(err, wallet.ErrNotFound) {
			return nil, fmt.Errorf("read client %d's rows %s: %w", c.seed, what, err)
		}
		return w, nil
	}
	open := func(path string) (logical.Wallet, error) {
		s, err := localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return read("in "+filepath.Base(path), s)
	}
	want, err := open(c.path)
	if err != nil {
		return "", err
	}
	got, err := read("on the server", server)
	if err != nil {
		return "", err
	}
	if d := logical.Diff(want, got); d != "" {
		return "on the server: " + d, nil
	}
	if !pulled {
		return "", nil
	}
	if got, err = open(c.pulled); err != nil {
		return "", err
	}
	if d := logical.Diff(want, got); d != "" {
		return "in the wallet it pulled: " + d, nil
	}
	return "", nil
}

func printLoad(w io.Writer, rep loadReport) {
	fmt.Fprintln(w, "bench load: clients sync with one walletsync serve on 127.0.0.1 at once, over the paged wire, each its own identity and wallet")
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
