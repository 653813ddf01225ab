package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/wire"
)

// serveGoal is the goal for a toolbox wallet's backup: walletsync serve takes at
// most 1/5 of the toolbox StorageServer's time.
const serveGoal = 0.2

// serveBackup is one side's two measured backups, as storage-client.mjs reports them: the
// first (WalletStorageManager.setActive, which resolves the fresh backup and pushes every
// row) and an unchanged updateBackups after it.
type serveBackup struct {
	Server    string    `json:"server"`
	First     serveStep `json:"first"`
	Unchanged serveStep `json:"unchanged"`
}

// serveStep is one backup: wall time in the TS client, requests sent, rows inserted and
// updated at the server.
type serveStep struct {
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"`
	Inserts  int     `json:"inserts"`
	Updates  int     `json:"updates"`
}

// serveClientReport is part 2 of `bench serve`: the toolbox's StorageClient backing the
// fixture up to walletsync serve and to the toolbox's StorageServer.
type serveClientReport struct {
	Walletsync     serveBackup `json:"walletsync"`
	Toolbox        serveBackup `json:"toolbox"`
	FirstRatio     float64     `json:"firstRatio"`     // walletsync / toolbox
	UnchangedRatio float64     `json:"unchangedRatio"` // walletsync / toolbox
}

// serveBenchReport is the result of `walletsync bench serve`: its parts, those measured.
type serveBenchReport struct {
	Fixture string `json:"fixture"`
	// Backend is the store walletsync serve ran on: "postgres", or empty for SQLite.
	Backend string `json:"backend,omitempty"`
	// PagedNote says why part 1 was not measured: its server offers no paged wire.
	PagedNote   string             `json:"pagedNote,omitempty"`
	Paged       *servePagedReport  `json:"paged,omitempty"`
	Client      *serveClientReport `json:"client,omitempty"`
	Goals       []benchGoal        `json:"goals"`
	AllGoalsMet bool               `json:"allGoalsMet"`
}

// RunServe is `walletsync bench serve`, in two parts measured in the same run (--part
// chooses one). Part 1 (measurePaged): walletsync's own client pushes the fixture to
// `walletsync serve` (in this process, over loopback) with the paged wire, against the
// local full copy of `bench sync`, then re-syncs it unchanged. Part 2: the TypeScript
// StorageClient of @bsv/wallet-toolbox 2.1.26, in a WalletStorageManager whose active store
// is the fixture wallet, backs the wallet up to `walletsync serve` and to the toolbox's
// own StorageServer (Node), each from its own copy of the wallet to a new store: the first
// backup and an unchanged one, with the requests each sent. Both servers authenticate with
// BRC-104; the client's side (Node, its local SQLite reads, signing) is the same code on
// both, so the ratio understates the difference between the servers.
func RunServe(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("serve", "[--fixture toolbox|small] [--part all|paged|client] [--repeat N] [--db sqlite|postgres|postgres://URL] [--interop DIR] [--dir D] [--json]", out)
	setup := benchFlags(fs, "toolbox: the toolbox's own sync benchmark shape; small: for tests")
	interop := fs.String("interop", "", "the folder of the installed toolbox peer, interop/ of the walletsync source (default: found from the current folder up)")
	part := fs.String("part", "all", "paged: part 1 only (walletsync's client over the paged wire against the local copy); client: part 2 only (the toolbox's StorageClient, walletsync serve against the toolbox's server)")
	repeat := fs.Int("repeat", 3, "part 1's rounds; the median counts")
	db := fs.String("db", "sqlite", "walletsync serve's store: sqlite (in this process), postgres (a `walletsync serve --db postgres://` process over a throwaway PostgreSQL cluster), postgres://URL (over new databases on that server; the role needs CREATEDB)")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if *db != "sqlite" && *db != "postgres" && !isPostgresURL(*db) {
		return fmt.Errorf("%w: --db takes sqlite, postgres or postgres://URL, not %q", command.ErrUsage, *db)
	}
	if *part != "all" && *part != "paged" && *part != "client" {
		return fmt.Errorf("%w: --part must be all, paged or client", command.ErrUsage)
	}
	if *repeat < 1 {
		return fmt.Errorf("%w: --repeat must be at least 1", command.ErrUsage)
	}
	var peerDir string
	if *part != "paged" {
		// Before part 1 runs: a missing peer is known at once.
		var err error
		if peerDir, err = findToolboxPeer(*interop); err != nil {
			return err
		}
	}
	f, path, identity, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "walletsync-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	backend, release, err := openBackend(ctx, *db, progress)
	if err != nil {
		return err
	}
	defer release()
	rep := serveBenchReport{Fixture: string(f)}
	if backend.postgres != nil {
		rep.Backend = backend.name()
	}
	if *part != "client" {
		if rep.PagedNote, err = pagedOffered(ctx, backend, work); err != nil {
			return command.Cancelled(ctx, err)
		}
	}
	if *part != "client" && rep.PagedNote == "" {
		if rep.Paged, err = measurePaged(ctx, backend, path, identity, work, *repeat, progress); err != nil {
			return command.Cancelled(ctx, err)
		}
		p := rep.Paged
		rep.Goals = append(rep.Goals,
			benchGoal{Name: "full push, paged wire to walletsync serve / local full copy, " + rep.Fixture + " fixture", Value: p.Ratio, Limit: pagedGoal, Unit: "x", Met: p.Ratio <= pagedGoal},
			benchGoal{Name: "unchanged re-sync over the paged wire, HTTP round trips", Value: float64(p.UnchangedRequests), Limit: unchangedGoal, Unit: "requests", Met: p.UnchangedRequests <= unchangedGoal,
				Note: fmt.Sprintf("a new client adds its BRC-104 handshake and the capabilities request: %d", p.UnchangedColdRequests)})
	}
	if *part != "paged" {
		if rep.Client, err = measureClients(ctx, backend, peerDir, path, work, progress); err != nil {
			return command.Cancelled(ctx, err)
		}
		rep.Goals = append(rep.Goals, benchGoal{Name: "first backup time, walletsync serve / toolbox StorageServer, " + rep.Fixture + " fixture",
			Value: rep.Client.FirstRatio, Limit: serveGoal, Unit: "x", Met: rep.Client.FirstRatio <= serveGoal})
	}
	rep.AllGoalsMet = true
	for _, g := range rep.Goals {
		rep.AllGoalsMet = rep.AllGoalsMet && g.Met
	}
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) {
		if rep.Backend != "" {
			fmt.Fprintf(w, "bench serve on %s: walletsync serve runs as `walletsync serve --db postgres://...` (a child process) over a new database\n", rep.Backend)
		}
		if rep.PagedNote != "" {
			fmt.Fprintf(w, "bench serve, part 1: not measured: %s\n", rep.PagedNote)
		}
		if rep.Paged != nil {
			printServePaged(w, rep.Fixture, rep.Paged)
		}
		if rep.Client != nil {
			printServeClients(w, rep.Fixture, rep.Client)
		}
		printGoals(w, rep.Goals)
	})
}

// pagedOffered returns why part 1 cannot run on the backend ("" when it can): it starts a
// walletsync serve as part 1 would and asks it for the paged wire (wire.Detect), which
// `walletsync serve` mounts on SQLite and, once it is built there, on PostgreSQL.
func pagedOffered(ctx context.Context, b serveBackend, work string) (string, error) {
	if b.postgres == nil {
		return "", nil
	}
	keyFile := filepath.Join(work, "probe.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		return "", err
	}
	url, stop, err := b.start(ctx, work, "probe", keyFile, nil)
	if err != nil {
		return "", err
	}
	defer stop()
	if wire.Detect(ctx, url) {
		return "", nil
	}
	return "needs the paged wire on PostgreSQL: walletsync serve --db postgres:// offers only the toolbox wire there yet (wire.Detect)", nil
}

// measureClients is part 2: storage-client.mjs backs a copy of the wallet at path up to
// walletsync serve (of the backend) and to the toolbox's StorageServer, both under one new
// server identity.
func measureClients(ctx context.Context, b serveBackend, peerDir, path, work string, progress io.Writer) (*serveClientReport, error) {
	userKey := hex.EncodeToString(localstore.FixtureRootKey(1)) // benchWallet's user is seed 1's
	keyFile := filepath.Join(work, "server.key")
	serverKey, err := auth.CreateKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	serverKeyHex := hex.EncodeToString(serverKey.Serialize()) // the toolbox server runs under the same identity
	wsURL, stop, err := b.start(ctx, work, "walletsync-server", keyFile, nil)
	if err != nil {
		return nil, err
	}
	defer stop()
	tbURL, stopToolbox, err := startToolboxServer(ctx, peerDir, filepath.Join(work, "toolbox-server.sqlite"), serverKeyHex)
	if err != nil {
		return nil, err
	}
	defer stopToolbox()

	rep := &serveClientReport{}
	for _, side := range []struct {
		key, name, url string
		into           *serveBackup
	}{{"walletsync", "walletsync serve", wsURL, &rep.Walletsync}, {"toolbox", "toolbox StorageServer", tbURL, &rep.Toolbox}} {
		fmt.Fprintf(progress, "measuring a backup to the %s...\n", side.name)
		// Each side gets its own copy: setActive writes the active store's user row.
		src := filepath.Join(work, "source-"+side.key+".sqlite")
		if err := safefile.CopyNew(path, src); err != nil {
			return nil, err
		}
		b, err := clientBackup(ctx, peerDir, side.url, userKey, src)
		if err != nil {
			return nil, fmt.Errorf("backup to the %s: %w", side.name, err)
		}
		*side.into = b
		side.into.Server = side.name
	}
	rep.FirstRatio = rep.Walletsync.First.Seconds / max(rep.Toolbox.First.Seconds, 1e-9)
	rep.UnchangedRatio = rep.Walletsync.Unchanged.Seconds / max(rep.Toolbox.Unchanged.Seconds, 1e-9)
	return rep, nil
}

// clientBackup runs storage-client.mjs backup (setActive, then one updateBackups).
func clientBackup(ctx context.Context, peerDir, url, key, db string) (serveBackup, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", filepath.Join(peerDir, "storage-client.mjs"), "backup", "--url", url, "--key", key, "--db", db, "--times", "1")
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "TZ=UTC")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return serveBackup{}, fmt.Errorf("%w: %s %s", err, bytes.TrimSpace(stdout.Bytes()), lastLine(stderr.String()))
	}
	var res struct {
		SetActive struct {
			Requests         int
			Ms               float64
			Inserts, Updates int
		}
		Updates []struct {
			Requests         int
			Ms               float64
			Inserts, Updates int
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Updates) != 1 {
		return serveBackup{}, fmt.Errorf("read storage-client.mjs's report %q: %v", stdout.Bytes(), err)
	}
	u := res.Updates[0]
	return serveBackup{
		First:     serveStep{Seconds: res.SetActive.Ms / 1000, Requests: res.SetActive.Requests, Inserts: res.SetActive.Inserts, Updates: res.SetActive.Updates},
		Unchanged: serveStep{Seconds: u.Ms / 1000, Requests: u.Requests, Inserts: u.Inserts, Updates: u.Updates},
	}, nil
}

// startToolboxServer runs interop/storage-server.mjs on db with the private key keyHex and
// returns its URL and a function that stops it.
func startToolboxServer(ctx context.Context, peerDir, db, keyHex string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, "node", filepath.Join(peerDir, "storage-server.mjs"), "--db", db, "--key", keyHex)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "TZ=UTC")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { stdin.Close(); warnCleanup("stop the toolbox StorageServer", cmd.Wait()) }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready struct{ Port int }
	if err == nil {
		err = json.Unmarshal([]byte(line), &ready)
	}
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("start the toolbox StorageServer: %v: %s", err, lastLine(stderr.String()))
	}
	return "http://127.0.0.1:" + strconv.Itoa(ready.Port), stop, nil
}

func printServeClients(w io.Writer, fixture string, rep *serveClientReport) {
	fmt.Fprintf(w, "bench serve, part 2: the toolbox's StorageClient backs the %s fixture up (WalletStorageManager setActive, then an unchanged updateBackups)\n", fixture)
	fmt.Fprintf(w, "  %-22s %10s %9s %8s   %10s %9s\n", "server", "first s", "requests", "inserts", "unchanged s", "requests")
	for _, s := range []serveBackup{rep.Walletsync, rep.Toolbox} {
		fmt.Fprintf(w, "  %-22s %10.2f %9d %8d   %10.2f %9d\n", s.Server, s.First.Seconds, s.First.Requests, s.First.Inserts, s.Unchanged.Seconds, s.Unchanged.Requests)
	}
	fmt.Fprintf(w, "  walletsync / toolbox: first backup %.2fx, unchanged backup %.2fx\n", rep.FirstRatio, rep.UnchangedRatio)
}
