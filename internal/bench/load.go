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

// loadConfig is one load run: how many clients push each fixture, and where their wallets
// are made (once, then reused) and the server's store lives.
type loadConfig struct {
	Small, Big int
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

// loadClass is what the clients of one fixture did.
type loadClass struct {
	Fixture string `json:"fixture"`
	Clients int    `json:"clients"`
	Rows    int64  `json:"rows"` // over all its clients
	// Sync times, first request to acknowledged last page, in seconds.
	MedianSeconds float64 `json:"medianSeconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
}

// loadReport is the result of `walletsync bench load`.
type loadReport struct {
	Classes []loadClass `json:"classes"`
	// Seconds is the load's wall time: every client starts at once, and it ends when the
	// last one is done.
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"` // HTTP requests, BRC-104 handshakes included
	// Latency is every HTTP request's, measured by its client (see requestLog); Commit
	// that of the page commits alone.
	Latency latency `json:"latencyMs"`
	Commit  latency `json:"commitLatencyMs"`
	// Errors counts the syncs that failed and the requests that failed or were refused,
	// other than Busy: the "busy, retry after" answers (HTTP 503 and 429) that the client
	// waited out and retried.
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	Busy         int      `json:"busy"`
	// Verified counts the clients whose rows on the server equal their wallet's, table by
	// table (logical.Read of both, logical.AfterSync); Mismatches describes the others.
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
// pages of the default size). It reports the HTTP request latencies the clients saw, the errors and the
// busy answers apart, and checks afterwards that every client's rows on the server equal
// its wallet's, table by table. It fails when there was an error or a difference.
func RunLoad(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("bench load", "[--clients 50] [--big 5] [--dir D] [--json]", out)
	small := fs.Int("clients", 50, "clients pushing the small fixture, each its own identity and wallet")
	big := fs.Int("big", 5, "clients pushing the toolbox fixture at the same time")
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
	rep, err := runLoad(ctx, loadConfig{Small: *small, Big: *big, Dir: *dir, Work: work, Progress: progress})
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

// loadClient is one client of the load: its wallet and identity, and what its sync did.
type loadClient struct {
	class    int // index in loadReport.Classes
	seed     uint64
	path     string
	identity string
	log      *requestLog
	seconds  float64
	rows     int64
	err      error
}

// runLoad runs the load of cfg and verifies every client's data afterwards. An error is
// returned only for what stops the run itself (a wallet that cannot be made, a server that
// does not start); the clients' failures are in the report.
func runLoad(ctx context.Context, cfg loadConfig) (loadReport, error) {
	rep := loadReport{Classes: []loadClass{{Fixture: string(localstore.FixtureSmall), Clients: cfg.Small}, {Fixture: string(localstore.FixtureToolbox), Clients: cfg.Big}}}
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
			clients = append(clients, &loadClient{class: class, seed: seed, path: path, identity: identity, log: newRequestLog()})
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

	fmt.Fprintf(cfg.Progress, "%d clients push to walletsync serve at %s at once...\n", len(clients), url)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.push(ctx, url, start) })
	}
	began := time.Now()
	close(start)
	wg.Wait()
	rep.Seconds = time.Since(began).Seconds()
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	var all, commits []time.Duration
	secs := make([][]float64, len(rep.Classes))
	for _, c := range clients {
		for _, r := range c.log.requests() {
			all = append(all, r.Took)
			if isCommit(r.Path) {
				commits = append(commits, r.Took)
			}
			switch {
			case r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests:
				rep.Busy++
			case r.Status == 0 || r.Status >= 400:
				rep.addError(fmt.Errorf("client %d: POST %s: HTTP %d", c.seed, r.Path, r.Status))
			}
		}
		if c.err != nil {
			rep.addError(fmt.Errorf("client %d: %w", c.seed, c.err))
		}
		rep.Classes[c.class].Rows += c.rows
		secs[c.class] = append(secs[c.class], c.seconds)
	}
	rep.Requests = len(all)
	rep.Latency, rep.Commit = latencyOf(all), latencyOf(commits)
	for i, s := range secs {
		if len(s) > 0 {
			rep.Classes[i].MedianSeconds, rep.Classes[i].MaxSeconds = stats.Median(s), slices.Max(s)
		}
	}

	fmt.Fprintln(cfg.Progress, "comparing every client's rows on the server with its wallet...")
	for _, c := range clients {
		if d, err := c.compare(ctx, srv.Store()); err != nil {
			return rep, err
		} else if d != "" {
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("client %d (%s): %s", c.seed, wallet.ShortKey(c.identity, 16), d))
		} else {
			rep.Verified++
		}
	}
	return rep, nil
}

func (r *loadReport) addError(err error) {
	r.Errors++
	if len(r.ErrorSamples) < loadErrorSamples {
		r.ErrorSamples = append(r.ErrorSamples, err.Error())
	}
}

// push syncs the client's wallet to the server at url, once start closes.
func (c *loadClient) push(ctx context.Context, url string, start <-chan struct{}) {
	src, err := localstore.Open(ctx, c.path, localstore.Options{ReadOnly: true})
	if err != nil {
		c.err = err
		return
	}
	defer src.Close()
	p, err := pagedClient(url, c.seed, c.log)
	if err != nil {
		c.err = err
		return
	}
	<-start
	// The options of `walletsync sync --to URL`: pages of the default size, not bulk.
	run, _, err := timedSync(ctx, src, p, c.identity, syncer.Options{Active: wallet.KeepSourceActive})
	c.seconds, c.rows, c.err = run.Seconds, run.Rows, err
}

// compare returns how the client's rows on the server differ from its wallet's ("" when
// they are equal).
func (c *loadClient) compare(ctx context.Context, server wallet.Source) (string, error) {
	src, err := localstore.Open(ctx, c.path, localstore.Options{ReadOnly: true})
	if err != nil {
		return "", err
	}
	defer src.Close()
	want, err := logical.Read(ctx, src, c.identity, logical.AfterSync())
	if err != nil {
		return "", fmt.Errorf("read client %d's wallet: %w", c.seed, err)
	}
	got, err := logical.Read(ctx, server, c.identity, logical.AfterSync())
	if errors.Is(err, wallet.ErrNotFound) {
		return "the server holds no such user", nil
	}
	if err != nil {
		return "", fmt.Errorf("read client %d's rows on the server: %w", c.seed, err)
	}
	return logical.Diff(want, got), nil
}

func printLoad(w io.Writer, rep loadReport) {
	fmt.Fprintln(w, "bench load: clients push to one walletsync serve on 127.0.0.1 at once, over the paged wire, each its own identity and wallet")
	for _, c := range rep.Classes {
		if c.Clients > 0 {
			fmt.Fprintf(w, "  %3d clients, %-7s fixture: %7d rows in all; each sync %.2f s median, %.2f s at most\n", c.Clients, c.Fixture, c.Rows, c.MedianSeconds, c.MaxSeconds)
		}
	}
	fmt.Fprintf(w, "  %.2f s in all, %d HTTP requests (BRC-104 handshakes included)\n", rep.Seconds, rep.Requests)
	for _, l := range []struct {
		name string
		l    latency
	}{{"every request", rep.Latency}, {"page commits", rep.Commit}} {
		fmt.Fprintf(w, "  latency, %-13s (%5d): p50 %7.1f ms  p95 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", l.name, l.l.Count, l.l.P50, l.l.P95, l.l.P99, l.l.Max)
	}
	fmt.Fprintf(w, "  errors: %d (goal: none); busy answers retried: %d\n", rep.Errors, rep.Busy)
	for _, e := range rep.ErrorSamples {
		fmt.Fprintf(w, "    %s\n", e)
	}
	fmt.Fprintf(w, "  data: %d of %d clients' rows on the server equal their wallets', table by table\n", rep.Verified, rep.Verified+len(rep.Mismatches))
	for _, m := range rep.Mismatches {
		fmt.Fprintf(w, "    %s\n", m)
	}
}
