package bench

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
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/internal/command"
	"walletsync/internal/safefile"
	"walletsync/internal/toolboxpeer"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// remoteSide is one client's push or pull against a toolbox StorageServer.
type remoteSide struct {
	Seconds   float64 `json:"seconds"`
	Requests  int64   `json:"requests"`
	BytesSent int64   `json:"bytesSent"`
	Rows      int64   `json:"rows,omitempty"` // walletsync only: the rows its chunks carried
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
	fs := command.NewFlags("bench remote", "[--fixture toolbox|small] [--interop DIR] [--dir D] [--json]", out)
	setup := benchFlags(fs, "toolbox: the toolbox's own sync benchmark shape (10,000 labels, 64 proofs of 32 KiB); small: for tests")
	interop := fs.String("interop", "", "the folder of the installed toolbox peer, interop/ of the walletsync source (default: found from the current folder up)")
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

	start := func(name string) (*toolboxpeer.Server, error) {
		key := make([]byte, 32)
		rand.Read(key)
		return toolboxpeer.NewServer(peerDir, filepath.Join(work, name+".sqlite"), hex.EncodeToString(key))
	}
	wsServer, err := start("walletsync-server")
	if err != nil {
		return err
	}
	defer wsServer.Stop()
	tbServer, err := start("toolbox-server")
	if err != nil {
		return err
	}
	defer tbServer.Stop()

	fmt.Fprintf(progress, "pushing the %s fixture with walletsync to %s...\n", f, wsServer.URL)
	if rep.WalletsyncPush, rep.Rows, err = wsRemote(ctx, wsWallet, wsServer.URL, identity, wallet.KeepSourceActive); err != nil {
		return command.Cancelled(ctx, err)
	}
	fmt.Fprintf(progress, "pushing it with the toolbox's WalletStorageManager and StorageClient to %s...\n", tbServer.URL)
	if rep.ToolboxPush, err = tbRemote(ctx, peerDir, "push", tbWallet, tbServer.URL, identity, userKey); err != nil {
		return command.Cancelled(ctx, err)
	}
	fmt.Fprintln(progress, "pulling it back into a new wallet with walletsync...")
	if rep.WalletsyncPull, _, err = wsRemote(ctx, filepath.Join(work, "walletsync-pulled.sqlite"), wsServer.URL, identity, wallet.KeepDestinationActive); err != nil {
		return command.Cancelled(ctx, err)
	}
	fmt.Fprintln(progress, "pulling it back with the toolbox's syncFromReader...")
	if rep.ToolboxPull, err = tbRemote(ctx, peerDir, "pull", filepath.Join(work, "toolbox-pulled.sqlite"), wsServer.URL, identity, userKey); err != nil {
		return command.Cancelled(ctx, err)
	}
	if rep.WalletsyncPull.Rows != rep.Rows {
		return fmt.Errorf("walletsync pulled %d rows of %d: %w", rep.WalletsyncPull.Rows, rep.Rows, errBenchMismatch)
	}
	rep.PushTimeRatio = rep.WalletsyncPush.Seconds / rep.ToolboxPush.Seconds
	rep.PushRequestsRatio = float64(rep.WalletsyncPush.Requests) / float64(rep.ToolboxPush.Requests)
	rep.PullTimeRatio = rep.WalletsyncPull.Seconds / rep.ToolboxPull.Seconds
	goal := func(name string, v, limit float64, met bool) benchGoal {
		return benchGoal{Name: name + ", " + string(f) + " fixture", Value: v, Limit: limit, Unit: "x", Met: met}
	}
	rep.Goals = []benchGoal{
		goal("push time, walletsync over the toolbox client", rep.PushTimeRatio, remotePushTimeGoal, rep.PushTimeRatio <= remotePushTimeGoal),
		goal("push requests, walletsync over the toolbox client (fewer)", rep.PushRequestsRatio, remoteRequestsLimit, rep.PushRequestsRatio < remoteRequestsLimit),
		goal("pull time, walletsync over the toolbox client", rep.PullTimeRatio, remotePullTimeGoal, rep.PullTimeRatio <= remotePullTimeGoal),
	}
	rep.AllGoalsMet = true
	for _, g := range rep.Goals {
		rep.AllGoalsMet = rep.AllGoalsMet && g.Met
	}
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) { printRemoteBench(w, rep) })
}

// wsRemote pushes the wallet at db to url (KeepSourceActive), or pulls url into a new wallet
// at db, with walletsync as the CLI runs it, and measures it.
func wsRemote(ctx context.Context, db, url, identity string, active wallet.ActivePolicy) (remoteSide, int64, error) {
	client, err := toolbox.Dial(url, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(1))), toolbox.ClientOptions{})
	if err != nil {
		return remoteSide{}, 0, err
	}
	var s *localstore.Store
	if active == wallet.KeepSourceActive {
		s, err = localstore.Open(ctx, db, localstore.Options{})
	} else {
		s, err = localstore.Create(ctx, db, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	}
	if err != nil {
		return remoteSide{}, 0, err
	}
	defer s.Close()
	var total int64
	if active == wallet.KeepSourceActive {
		sum, err := s.Summary(ctx, identity)
		if err != nil {
			return remoteSide{}, 0, err
		}
		for _, t := range wallet.Entities {
			total += sum.Counts[t.Name]
		}
	}
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return remoteSide{}, 0, err
	}
	opts := syncer.ChunkOptions{Active: active, Budget: budget, Settle: -1}
	began := time.Now()
	var res syncer.Result
	if active == wallet.KeepSourceActive {
		res, err = syncer.RunChunks(ctx, s, client, identity, opts)
	} else {
		res, err = syncer.RunChunks(ctx, client, s, identity, opts)
	}
	if err != nil {
		return remoteSide{}, 0, err
	}
	st := client.Stats()
	return remoteSide{Seconds: time.Since(began).Seconds(), Requests: st.Requests, BytesSent: st.BytesSent, Rows: res.Rows}, total, nil
}

// tbRemote runs bench-remote.mjs's push or pull and decodes its result.
func tbRemote(ctx context.Context, peerDir, mode, db, url, identity, key string) (remoteSide, error) {
	cmd := exec.CommandContext(ctx, "node", filepath.Join(peerDir, remoteBenchScript), mode, "--db", db, "--identity", identity, "--key", key, "--url", url)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var res struct {
		remoteSide
		Error string `json:"error"`
	}
	decodeErr := json.Unmarshal(stdout, &res)
	switch {
	case err != nil && res.Error != "":
		return remoteSide{}, fmt.Errorf("toolbox %s: %s: %w", mode, res.Error, err)
	case err != nil:
		return remoteSide{}, fmt.Errorf("toolbox %s: %w: %s", mode, err, lastLine(stderr.String()))
	case decodeErr != nil:
		return remoteSide{}, fmt.Errorf("toolbox %s: %w", mode, decodeErr)
	}
	return res.remoteSide, nil
}

func printRemoteBench(w io.Writer, rep remoteBenchReport) {
	fmt.Fprintf(w, "bench remote: the %s fixture (%d rows) and a toolbox StorageServer on 127.0.0.1\n\n", rep.Fixture, rep.Rows)
	fmt.Fprintf(w, "%-34s %10s %9s %12s\n", "", "time", "requests", "sent")
	row := func(name string, s remoteSide) {
		fmt.Fprintf(w, "%-34s %9.2fs %9d %12s\n", name, s.Seconds, s.Requests, command.HumanBytes(s.BytesSent))
	}
	row("push, walletsync", rep.WalletsyncPush)
	row("push, toolbox client", rep.ToolboxPush)
	row("pull, walletsync", rep.WalletsyncPull)
	row("pull, toolbox client", rep.ToolboxPull)
	fmt.Fprintln(w)
	for _, g := range rep.Goals {
		met := "met"
		if !g.Met {
			met = "NOT met"
		}
		fmt.Fprintf(w, "%-66s %6.3fx (goal %.1fx) %s\n", g.Name, g.Value, g.Limit, met)
	}
}
