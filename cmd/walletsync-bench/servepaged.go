package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"walletsync/cli/command"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/wallet"
)

// Goals of `bench serve`'s part 1.
const (
	// pagedGoal: a full push over the paged wire to walletsync serve takes at most 1.5 times
	// the local full copy of `bench sync`.
	pagedGoal = 1.5
	// unchangedGoal: an unchanged re-sync is one HTTP round trip.
	unchangedGoal = 1
)

// pagedRun is one full push of part 1: the local full copy, or the push over the paged
// wire, with where its time went. Seconds are wall time; pageTimes are the page session's
// own clocks (syncer.Timings), summed over its committed pages.
type pagedRun struct {
	Seconds float64 `json:"seconds"`
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	Pages   int64   `json:"pages"`
	pageTimes
	// The wire's only: its HTTP requests (handshake and negotiation included) and the
	// compressed bytes they sent, and, over its commit requests alone, the time on the HTTP
	// transport (request written until the answer's body is read), in the server's wire
	// handler (frame decode, store commit, frame encode; inside the BRC-104 middleware),
	// and in the server store's Commit.
	Requests            int     `json:"requests,omitempty"`
	BytesSent           int64   `json:"bytesSent,omitempty"`
	HTTPSeconds         float64 `json:"httpSeconds,omitempty"`
	ServerWireSeconds   float64 `json:"serverWireSeconds,omitempty"`
	ServerCommitSeconds float64 `json:"serverCommitSeconds,omitempty"`
}

// servePagedReport is part 1 of `bench serve`: walletsync's client pushing the fixture to
// walletsync serve over loopback with the paged wire, against the local full copy.
type servePagedReport struct {
	Repeat int `json:"repeat"`
	// Local and Wire are the runs of median time among Repeat of each.
	Local pagedRun `json:"local"`
	Wire  pagedRun `json:"wire"`
	// Ratios are each round's wire time over its local time; Ratio is the median wire
	// time over the median local time.
	Ratios []float64 `json:"ratios"`
	Ratio  float64   `json:"ratio"`
	// UnchangedRequests is the HTTP requests of an unchanged re-sync by the client that
	// pushed (its BRC-104 session and negotiation in hand, as the agent's next sync has
	// them); UnchangedColdRequests those of a new client (a new process: handshake and
	// capabilities first); UnchangedSyncRequests what the page session counts.
	UnchangedRequests     int     `json:"unchangedRequests"`
	UnchangedColdRequests int     `json:"unchangedColdRequests"`
	UnchangedSyncRequests int64   `json:"unchangedSyncRequests"`
	UnchangedSeconds      float64 `json:"unchangedSeconds"`
}

// measurePaged runs part 1 on the wallet at srcPath (identity is its user, the fixture user
// of seed 1): repeat rounds of a local full copy and a push over the paged wire, each to a
// new store in work, the order alternating between rounds, then an unchanged re-sync.
func measurePaged(ctx context.Context, b serveBackend, srcPath, identity, work string, repeat int, progress io.Writer) (*servePagedReport, error) {
	src, err := localstore.Open(ctx, srcPath, localstore.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	settings, err := src.Settings(ctx)
	if err != nil {
		return nil, err
	}
	rep := &servePagedReport{Repeat: repeat}
	var locals, wires []pagedRun
	for round := range repeat {
		local := func() error {
			fmt.Fprintf(progress, "round %d/%d: the local full copy...\n", round+1, repeat)
			r, err := localCopy(ctx, src, identity, settings.Chain, filepath.Join(work, fmt.Sprintf("local-%d.sqlite", round)))
			locals = append(locals, r)
			return err
		}
		remote := func() error {
			fmt.Fprintf(progress, "round %d/%d: the push to walletsync serve over the paged wire...\n", round+1, repeat)
			r, err := wirePush(ctx, b, src, identity, work, fmt.Sprintf("server-%d", round), rep, round == repeat-1)
			wires = append(wires, r)
			return err
		}
		steps := []func() error{local, remote}
		if round%2 == 1 {
			steps[0], steps[1] = remote, local
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
		rep.Ratios = append(rep.Ratios, wires[round].Seconds/max(locals[round].Seconds, 1e-9))
	}
	rep.Local, rep.Wire = medianRun(locals), medianRun(wires)
	rep.Ratio = rep.Wire.Seconds / max(rep.Local.Seconds, 1e-9)
	return rep, nil
}

// medianRun returns the run of median time (the lower of the two middle ones).
func medianRun(runs []pagedRun) pagedRun {
	secs := make([]float64, len(runs))
	for i, r := range runs {
		secs[i] = r.Seconds
	}
	m := stats.Median(secs)
	best := runs[0]
	for _, r := range runs {
		if r.Seconds <= m && (best.Seconds > m || r.Seconds > best.Seconds) {
			best = r
		}
	}
	return best
}

// timedSync runs one push with opts and returns its result and page timings.
func timedSync(ctx context.Context, src wallet.Source, dst wallet.Destination, identity string, opts syncer.Options) (pagedRun, syncer.Result, error) {
	var run pagedRun
	opts.Progress = func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted {
			run.add(p.Timings)
		}
		return nil
	}
	began := time.Now()
	res, err := syncer.Run(ctx, src, dst, identity, opts)
	run.Seconds = time.Since(began).Seconds()
	run.Rows, run.Bytes, run.Pages = res.Rows, res.Bytes, res.Pages
	return run, res, err
}

// localCopy is `bench sync`'s full copy: src into a new wallet file at path.
func localCopy(ctx context.Context, src *localstore.Store, identity string, chain wallet.Chain, path string) (pagedRun, error) {
	defer removeStore(path)
	dst, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, localstore.Options{})
	if err != nil {
		return pagedRun{}, err
	}
	defer dst.Close()
	run, _, err := timedSync(ctx, src, dst, identity, benchPushOptions())
	if err != nil {
		return run, fmt.Errorf("local full copy: %w", err)
	}
	return run, nil
}

// wirePush pushes src to a new walletsync serve of the backend on a store named label,
// with clocks on the server's wire handler and store commits where the server runs in
// this process (SQLite). With unchanged set it then measures an unchanged re-sync into rep.
func wirePush(ctx context.Context, b serveBackend, src *localstore.Store, identity, work, label string, rep *servePagedReport, unchanged bool) (pagedRun, error) {
	var clock *serverClock
	if b.postgres == nil {
		clock = &serverClock{}
	}
	keyFile := filepath.Join(work, label+".key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		return pagedRun{}, err
	}
	defer os.Remove(keyFile)
	url, stop, err := b.start(ctx, work, label, keyFile, clock)
	if err != nil {
		return pagedRun{}, err
	}
	defer stop()
	log := newRequestLog()
	server, err := dialUser(ctx, url, 1, remote.Walletsync, log)
	if err != nil {
		return pagedRun{}, err
	}
	run, _, err := timedSync(ctx, src, server.Paged, identity, benchPushOptions())
	if err != nil {
		return run, fmt.Errorf("push over the paged wire: %w", err)
	}
	for _, r := range log.requests() {
		run.Requests++
		run.BytesSent += r.Sent
		if isCommit(r.Path) {
			run.HTTPSeconds += r.Took.Seconds()
		}
	}
	if clock != nil {
		run.ServerWireSeconds, run.ServerCommitSeconds = clock.seconds()
	}
	if !unchanged {
		return run, nil
	}
	before := len(log.requests())
	began := time.Now()
	_, res, err := timedSync(ctx, src, server.Paged, identity, benchPushOptions())
	if err != nil {
		return run, fmt.Errorf("unchanged re-sync: %w", err)
	}
	rep.UnchangedSeconds = time.Since(began).Seconds()
	rep.UnchangedRequests, rep.UnchangedSyncRequests = len(log.requests())-before, res.Requests
	if res.Rows != 0 {
		return run, fmt.Errorf("unchanged re-sync moved %d rows: %w", res.Rows, errBenchMismatch)
	}
	cold := newRequestLog()
	if server, err = dialUser(ctx, url, 1, remote.Walletsync, cold); err != nil {
		return run, err
	}
	if _, _, err := timedSync(ctx, src, server.Paged, identity, benchPushOptions()); err != nil {
		return run, fmt.Errorf("unchanged re-sync by a new client: %w", err)
	}
	rep.UnchangedColdRequests = len(cold.requests())
	return run, nil
}

func isCommit(path string) bool { return strings.HasSuffix(path, wire.Prefix+"commit") }

// removeStore removes a store's file and its companions.
func removeStore(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", ".walletsync-lock"} {
		os.Remove(path + suffix)
	}
}

// serverClock times the paged wire's commit requests on the server: in its handler, and
// in the store's Commit.
type serverClock struct {
	mu           sync.Mutex
	wire, commit time.Duration
}

func (c *serverClock) seconds() (wire, commit float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wire.Seconds(), c.commit.Seconds()
}

func (c *serverClock) observe(into *time.Duration, began time.Time) {
	took := time.Since(began)
	c.mu.Lock()
	*into += took
	c.mu.Unlock()
}

// mount is serve.WireMount with the clocks around its handler and its store's commits.
func (c *serverClock) mount() serve.Mount {
	log := slog.New(slog.DiscardHandler)
	m := serve.WireMount(wire.ViewOptions{}, log)
	m.New = func(backend wire.Backend, budget *wire.MemoryBudget) (http.Handler, error) {
		return clockedHandler{wire.NewHandler(clockedBackend{backend, c}, wire.HandlerOptions{Logger: log, Budget: budget}), c}, nil
	}
	return m
}

type clockedHandler struct {
	*wire.Handler // and its Close, which the server calls when it stops
	c             *serverClock
}

func (h clockedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isCommit(r.URL.Path) {
		h.Handler.ServeHTTP(w, r)
		return
	}
	defer h.c.observe(&h.c.wire, time.Now())
	h.Handler.ServeHTTP(w, r)
}

type clockedBackend struct {
	wire.Backend
	c *serverClock
}

func (b clockedBackend) Destination(ctx context.Context, identity string) (wallet.Destination, error) {
	d, err := b.Backend.Destination(ctx, identity)
	return clockedDestination{d, b.c}, err
}

type clockedDestination struct {
	wallet.Destination
	c *serverClock
}

func (d clockedDestination) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	defer d.c.observe(&d.c.commit, time.Now())
	return d.Destination.Commit(ctx, b)
}

func printServePaged(w io.Writer, fixture string, p *servePagedReport) {
	fmt.Fprintf(w, "bench serve, part 1: walletsync's client pushes the %s fixture to walletsync serve on 127.0.0.1 over the paged wire (zstd frames, BRC-104), against bench sync's local full copy; bulk pages; median of %d\n", fixture, p.Repeat)
	fmt.Fprintf(w, "  %-22s %8s %7s %6s %9s   %s\n", "", "time", "rows", "pages", "requests", "client page timings")
	for _, r := range []struct {
		name string
		run  pagedRun
	}{{"local full copy", p.Local}, {"paged wire push", p.Wire}} {
		fmt.Fprintf(w, "  %-22s %7.3fs %7d %6d %9d   %s\n", r.name, r.run.Seconds, r.run.Rows, r.run.Pages, r.run.Requests, r.run.summary())
	}
	x := p.Wire
	fmt.Fprintf(w, "  where the paged push's commits went (%.3f s as the page session saw them, %s sent):\n", x.CommitSeconds, command.HumanBytes(x.BytesSent))
	fmt.Fprintf(w, "    client: frame encode, BRC-104 sign and verify, frame decode  %7.3f s\n", x.CommitSeconds-x.HTTPSeconds)
	if x.ServerWireSeconds == 0 {
		// A server in a child process (PostgreSQL): its clocks are not the bench's.
		fmt.Fprintf(w, "    loopback HTTP and the server (a child process: not split)  %7.3f s\n", x.HTTPSeconds)
	} else {
		fmt.Fprintf(w, "    loopback HTTP and the server's BRC-104 middleware           %7.3f s\n", x.HTTPSeconds-x.ServerWireSeconds)
		fmt.Fprintf(w, "    server: frame decode and answer encode                      %7.3f s\n", x.ServerWireSeconds-x.ServerCommitSeconds)
		fmt.Fprintf(w, "    server: store commit                                        %7.3f s (the local copy's commits: %.3f s)\n", x.ServerCommitSeconds, p.Local.CommitSeconds)
	}
	fmt.Fprintf(w, "  paged push / local full copy: %.2fx (rounds: %s)\n", p.Ratio, formatRatios(p.Ratios))
	fmt.Fprintf(w, "  unchanged re-sync: %d HTTP request(s) by the client that pushed (%d page-session request(s), %.3f s); %d by a new client (BRC-104 handshake and capabilities first)\n",
		p.UnchangedRequests, p.UnchangedSyncRequests, p.UnchangedSeconds, p.UnchangedColdRequests)
}

func formatRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2fx", r)
	}
	return strings.Join(parts, " ")
}
