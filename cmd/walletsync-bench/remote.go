package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// remoteSide is one client's push or pull against a toolbox StorageServer.
type remoteSide struct {
	Seconds   float64 `json:"seconds"`
	Requests  int64   `json:"requests"`
	BytesSent int64   `json:"bytesSent"`
	Rows      int64   `json:"rows,omitempty"` // walletsync only: the rows its chunks carried
}

// pullBreakdown is where walletsync's pull time went: its chunks, the getSyncChunk calls
// (the client's time waiting for the server's answers, which holds the server's own work,
// and decoding them), the local consumer's commits, and the server's producer alone.
type pullBreakdown struct {
	Chunks        int64 `json:"chunks"`   // merged
	Requests      int64 `json:"requests"` // getSyncChunk calls, prefetches included
	MaxChunkRows  int   `json:"maxChunkRows"`
	RoughBytes    int64 `json:"roughBytes"` // the rows' rough JSON size, maxRoughSize's measure
	BytesReceived int64 `json:"bytesReceived"`
	// Waiting and Decoding are the client's, summed over every getSyncChunk call;
	// ReadWait is how long the loop waited for its chunks (the rest ran under a commit).
	Waiting  float64 `json:"waitingSeconds"`
	Decoding float64 `json:"decodingSeconds"`
	ReadWait float64 `json:"readWaitSeconds"`
	Commit   float64 `json:"commitSeconds"` // the local ProcessSyncChunk calls
	// ServerProduce is the toolbox's getSyncChunk for the same requests on the server's
	// file, run by bench-remote.mjs without HTTP; ServerSerialize its JSON.stringify of the
	// answers, ServerSign what the server's BRC-104 middleware does to each answer before it
	// leaves (the body as a JS number[], the response payload, its signature).
	ServerProduce   float64 `json:"serverProduceSeconds"`
	ServerSerialize float64 `json:"serverSerializeSeconds"`
	ServerSign      float64 `json:"serverSignSeconds"`
}

// remoteBenchReport is the result of `walletsync bench remote`.
type remoteBenchReport struct {
	Fixture string `json:"fixture"`
	Rows    int64  `json:"rows"` // the wallet's rows, the user aside
	// Push and pull by walletsync (RunChunks over remote/toolbox's client) and by the
	// toolbox (WalletStorageManager with a StorageClient), each against a fresh server of
	// its own for the push, both pulling from walletsync's server.
	WalletsyncPush remoteSide `json:"walletsyncPush"`
	ToolboxPush    remoteSide `json:"toolboxPush"`
	WalletsyncPull remoteSide `json:"walletsyncPull"`
	ToolboxPull    remoteSide `json:"toolboxPull"`
	// PullBreakdown is where walletsync's pull time went.
	PullBreakdown pullBreakdown `json:"pullBreakdown"`
	// Ratios are walletsync's over the toolbox's.
	PushTimeRatio     float64     `json:"pushTimeRatio"`
	PushRequestsRatio float64     `json:"pushRequestsRatio"`
	PullTimeRatio     float64     `json:"pullTimeRatio"`
	Goals             []benchGoal `json:"goals"`
	AllGoalsMet       bool        `json:"allGoalsMet"`
}

const (
	remoteBenchScript   = "bench-remote.mjs"
	remotePushTimeGoal  = 1.1 // walletsync's push time over the toolbox client's
	remotePullTimeGoal  = 0.1 // walletsync's pull time over the toolbox client's
	remoteRequestsLimit = 1.0 // fewer requests than the toolbox client: ratio below 1
)

// RunRemote is `walletsync bench remote`: the fixture pushed to a toolbox StorageServer by
// walletsync and by the toolbox's own client, then pulled back by both, in one run.
func RunRemote(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("remote", "[--fixture toolbox|small] [--pull-only] [--interop DIR] [--dir D] [--json]", out)
	setup := benchFlags(fs, "toolbox: the toolbox's own sync benchmark shape (10,000 labels, 64 proofs of 32 KiB); small: for tests")
	interop := fs.String("interop", "", "the folder of the installed toolbox peer, interop/ of the walletsync source (default: found from the current folder up)")
	pullOnly := fs.Bool("pull-only", false, "measure the pulls only (walletsync still pushes the wallet to the server they pull from)")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	peerDir, err := findToolboxPeer(*interop)
	if err != nil {
		return err
	}
	f, path, identity, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "walletsync-bench-remote-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Each push makes its source the backup's active store (a write to the user row): each
	// side pushes a copy of its own.
	wsWallet, tbWallet := filepath.Join(work, "walletsync-source.sqlite"), filepath.Join(work, "toolbox-source.sqlite")
	for _, p := range []string{wsWallet, tbWallet} {
		if err := safefile.CopyNew(path, p); err != nil {
			return err
		}
	}
	rep := remoteBenchReport{Fixture: string(f)}
	userKey := hex.EncodeToString(localstore.FixtureRootKey(1))

	start := func(name string) (*toolboxpeer.Server, string, error) {
		key := make([]byte, 32)
		rand.Read(key)
		db := filepath.Join(work, name+".sqlite")
		srv, err := toolboxpeer.NewServer(peerDir, db, hex.EncodeToString(key))
		return srv, db, err
	}
	wsServer, wsServerDB, err := start("walletsync-server")
	if err != nil {
		return err
	}
	defer wsServer.Stop()

	fmt.Fprintf(progress, "pushing the %s fixture with walletsync to %s...\n", f, wsServer.URL)
	if rep.WalletsyncPush, rep.Rows, err = wsPush(ctx, wsWallet, wsServer.URL, identity); err != nil {
		return command.Cancelled(ctx, err)
	}
	if !*pullOnly {
		tbServer, _, err := start("toolbox-server")
		if err != nil {
			return err
		}
		defer tbServer.Stop()
		fmt.Fprintf(progress, "pushing it with the toolbox's WalletStorageManager and StorageClient to %s...\n", tbServer.URL)
		if rep.ToolboxPush, err = tbRemote(ctx, peerDir, "push", tbWallet, tbServer.URL, identity, userKey); err != nil {
			return command.Cancelled(ctx, err)
		}
	}
	fmt.Fprintln(progress, "pulling it back into a new wallet with walletsync...")
	var asked []brc40.RequestSyncChunkArgs
	if rep.WalletsyncPull, rep.PullBreakdown, asked, err = wsPull(ctx, filepath.Join(work, "walletsync-pulled.sqlite"), wsServer.URL, identity); err != nil {
		return command.Cancelled(ctx, err)
	}
	fmt.Fprintf(progress, "walletsync pulled %d rows in %.2fs, %d chunks; pulling it back with the toolbox's syncFromReader...\n",
		rep.WalletsyncPull.Rows, rep.WalletsyncPull.Seconds, rep.PullBreakdown.Chunks)
	if rep.ToolboxPull, err = tbRemote(ctx, peerDir, "pull", filepath.Join(work, "toolbox-pulled.sqlite"), wsServer.URL, identity, userKey); err != nil {
		return command.Cancelled(ctx, err)
	}
	fmt.Fprintln(progress, "timing the server's own getSyncChunk for walletsync's requests...")
	if err := serverProduce(ctx, peerDir, work, wsServerDB, identity, asked, &rep.PullBreakdown); err != nil {
		return command.Cancelled(ctx, err)
	}
	if rep.WalletsyncPull.Rows != rep.Rows {
		return fmt.Errorf("walletsync pulled %d rows of %d: %w", rep.WalletsyncPull.Rows, rep.Rows, errBenchMismatch)
	}
	rep.PullTimeRatio = rep.WalletsyncPull.Seconds / rep.ToolboxPull.Seconds
	goal := func(name string, v, limit float64, met bool) benchGoal {
		return benchGoal{Name: name + ", " + string(f) + " fixture", Value: v, Limit: limit, Unit: "x", Met: met}
	}
	if !*pullOnly {
		rep.PushTimeRatio = rep.WalletsyncPush.Seconds / rep.ToolboxPush.Seconds
		rep.PushRequestsRatio = float64(rep.WalletsyncPush.Requests) / float64(rep.ToolboxPush.Requests)
		rep.Goals = []benchGoal{
			goal("push time, walletsync over the toolbox client", rep.PushTimeRatio, remotePushTimeGoal, rep.PushTimeRatio <= remotePushTimeGoal),
			goal("push requests, walletsync over the toolbox client (fewer)", rep.PushRequestsRatio, remoteRequestsLimit, rep.PushRequestsRatio < remoteRequestsLimit),
		}
	}
	rep.Goals = append(rep.Goals, goal("pull time, walletsync over the toolbox client", rep.PullTimeRatio, remotePullTimeGoal, rep.PullTimeRatio <= remotePullTimeGoal))
	rep.AllGoalsMet = true
	for _, g := range rep.Goals {
		rep.AllGoalsMet = rep.AllGoalsMet && g.Met
	}
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) { printRemoteBench(w, rep, *pullOnly) })
}

// dialFixture returns a client of the server at url that signs as the fixture's user.
func dialFixture(url string) (*toolbox.Client, error) {
	return toolbox.Dial(url, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(1))), toolbox.ClientOptions{})
}

// wsPush pushes the wallet at db to url with walletsync as the CLI runs it, and measures
// it; it also returns the wallet's rows, the user aside.
func wsPush(ctx context.Context, db, url, identity string) (remoteSide, int64, error) {
	client, err := dialFixture(url)
	if err != nil {
		return remoteSide{}, 0, err
	}
	s, err := localstore.Open(ctx, db, localstore.Options{})
	if err != nil {
		return remoteSide{}, 0, err
	}
	defer s.Close()
	sum, err := s.Summary(ctx, identity)
	if err != nil {
		return remoteSide{}, 0, err
	}
	var total int64
	for _, t := range wallet.Entities {
		total += sum.Counts[t.Name]
	}
	opts, err := benchChunkOptions(wallet.KeepSourceActive)
	if err != nil {
		return remoteSide{}, 0, err
	}
	began := time.Now()
	res, err := syncer.RunChunks(ctx, s, client, identity, opts)
	if err != nil {
		return remoteSide{}, 0, err
	}
	st := client.Stats()
	return remoteSide{Seconds: time.Since(began).Seconds(), Requests: st.Requests, BytesSent: st.BytesSent, Rows: res.Rows}, total, nil
}

// wsPull pulls url into a new wallet at db with walletsync as the CLI runs it, and measures
// it: the totals, where the time went, and the getSyncChunk requests it sent, in order.
func wsPull(ctx context.Context, db, url, identity string) (remoteSide, pullBreakdown, []brc40.RequestSyncChunkArgs, error) {
	var bd pullBreakdown
	client, err := dialFixture(url)
	if err != nil {
		return remoteSide{}, bd, nil, err
	}
	s, err := localstore.Create(ctx, db, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		return remoteSide{}, bd, nil, err
	}
	defer s.Close()
	opts, err := benchChunkOptions(wallet.KeepDestinationActive)
	if err != nil {
		return remoteSide{}, bd, nil, err
	}
	opts.Progress = func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted {
			bd.Chunks++
			bd.MaxChunkRows = max(bd.MaxChunkRows, p.PageRows)
			bd.RoughBytes += p.PageBytes
			bd.ReadWait += p.Timings.Read.Seconds()
			bd.Commit += p.Timings.Commit.Seconds()
		}
		return nil
	}
	from := &recordingProducer{Client: client}
	began := time.Now()
	res, err := syncer.RunChunks(ctx, from, s, identity, opts)
	if err != nil {
		return remoteSide{}, bd, nil, err
	}
	seconds := time.Since(began).Seconds()
	st := client.Stats()
	bd.BytesReceived, bd.Waiting, bd.Decoding = st.BytesReceived, st.Waiting.Seconds(), st.Decoding.Seconds()
	bd.Requests = int64(len(from.asked))
	return remoteSide{Seconds: seconds, Requests: st.Requests, BytesSent: st.BytesSent, Rows: res.Rows}, bd, from.asked, nil
}

// benchChunkOptions are the options `walletsync sync` runs RunChunks with.
func benchChunkOptions(active wallet.ActivePolicy) (syncer.ChunkOptions, error) {
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return syncer.ChunkOptions{}, err
	}
	return syncer.ChunkOptions{Active: active, Budget: budget, Settle: -1}, nil
}

// recordingProducer is the server as a producer that keeps the getSyncChunk requests it
// sent, for the server's own timing of the same requests (serverProduce).
type recordingProducer struct {
	*toolbox.Client
	mu    sync.Mutex
	asked []brc40.RequestSyncChunkArgs
}

func (r *recordingProducer) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	r.mu.Lock()
	r.asked = append(r.asked, args)
	r.mu.Unlock()
	return r.Client.GetSyncChunk(ctx, args)
}

// serverProduce has bench-remote.mjs answer the requests asked on the server's own file with
// the toolbox's getSyncChunk, and records its time in bd.
func serverProduce(ctx context.Context, peerDir, work, serverDB, identity string, asked []brc40.RequestSyncChunkArgs, bd *pullBreakdown) error {
	b, err := json.Marshal(asked)
	if err != nil {
		return err
	}
	argsFile := filepath.Join(work, "pull-requests.json")
	if err := os.WriteFile(argsFile, b, 0o600); err != nil {
		return err
	}
	res, err := runBenchRemote[struct {
		Seconds          float64 `json:"seconds"`
		SerializeSeconds float64 `json:"serializeSeconds"`
		SignSeconds      float64 `json:"signSeconds"`
	}](ctx, peerDir, "produce", "--db", serverDB, "--identity", identity, "--args-file", argsFile)
	if err != nil {
		return err
	}
	bd.ServerProduce, bd.ServerSerialize, bd.ServerSign = res.Seconds, res.SerializeSeconds, res.SignSeconds
	return nil
}

// tbRemote runs bench-remote.mjs's push or pull and decodes its result.
func tbRemote(ctx context.Context, peerDir, mode, db, url, identity, key string) (remoteSide, error) {
	return runBenchRemote[remoteSide](ctx, peerDir, mode, "--db", db, "--identity", identity, "--key", key, "--url", url)
}

// runBenchRemote runs one bench-remote.mjs command and decodes its result into T.
func runBenchRemote[T any](ctx context.Context, peerDir, mode string, args ...string) (T, error) {
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(peerDir, remoteBenchScript), mode}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var res T
	decodeErr := json.Unmarshal(stdout, &res)
	var failure struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(stdout, &failure) // a failure's one line, when it printed one; it exits 1 either way
	switch {
	case err != nil && failure.Error != "":
		return res, fmt.Errorf("toolbox %s: %s: %w", mode, failure.Error, err)
	case err != nil:
		return res, fmt.Errorf("toolbox %s: %w: %s", mode, err, lastLine(stderr.String()))
	case decodeErr != nil:
		return res, fmt.Errorf("toolbox %s: %w", mode, decodeErr)
	}
	return res, nil
}

func printRemoteBench(w io.Writer, rep remoteBenchReport, pullOnly bool) {
	fmt.Fprintf(w, "bench remote: the %s fixture (%d rows) and a toolbox StorageServer on 127.0.0.1\n\n", rep.Fixture, rep.Rows)
	fmt.Fprintf(w, "%-34s %10s %9s %12s\n", "", "time", "requests", "sent")
	row := func(name string, s remoteSide) {
		fmt.Fprintf(w, "%-34s %9.2fs %9d %12s\n", name, s.Seconds, s.Requests, command.HumanBytes(s.BytesSent))
	}
	row("push, walletsync", rep.WalletsyncPush)
	if !pullOnly {
		row("push, toolbox client", rep.ToolboxPush)
	}
	row("pull, walletsync", rep.WalletsyncPull)
	row("pull, toolbox client", rep.ToolboxPull)
	b := rep.PullBreakdown
	fmt.Fprintf(w, "\nwalletsync's pull: %d chunks (at most %d rows; %s of rows, %s received), %d getSyncChunk requests\n",
		b.Chunks, b.MaxChunkRows, command.HumanBytes(b.RoughBytes), command.HumanBytes(b.BytesReceived), b.Requests)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "waiting for the server's answers (all requests)", b.Waiting)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "  of which the toolbox's getSyncChunk alone, same requests", b.ServerProduce)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "  of which its JSON.stringify of the answers", b.ServerSerialize)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "  of which its BRC-104 signing of the answers (JS number[])", b.ServerSign)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "decoding the answers", b.Decoding)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "the pull loop waiting for chunks (the rest ran beside commits)", b.ReadWait)
	fmt.Fprintf(w, "  %-62s %8.2fs\n", "local commits (ProcessSyncChunk)", b.Commit)
	fmt.Fprintln(w)
	for _, g := range rep.Goals {
		met := "met"
		if !g.Met {
			met = "NOT met"
		}
		fmt.Fprintf(w, "%-66s %6.3fx (goal %.1fx) %s\n", g.Name, g.Value, g.Limit, met)
	}
}
