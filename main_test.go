package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/agent"
	"walletsync/localstore"
)

// walletsync runs the command line in-process and returns its exit code and output.
func walletsync(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLI_WalletCreateSeedInfo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.sqlite")
	identity := localstore.FixtureIdentity(9)
	if code, _, stderr := walletsync(t, "wallet", "create", "--db", db, "--chain", "test", "--identity", identity, "--json"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	if code, out, stderr := walletsync(t, "wallet", "seed", "--db", db, "--fixture", "toolbox", "--identity", identity, "--json"); code != 0 || !strings.Contains(out, `"tx_labels": 10000`) {
		t.Fatalf("seed: exit %d: %s %s", code, out, stderr)
	}
	code, out, stderr := walletsync(t, "wallet", "info", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, stderr)
	}
	var info localstore.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.Settings.Chain != "test" || len(info.Identities) != 1 || info.Identities[0].IdentityKey != identity ||
		info.Identities[0].Counts["proven_txs"] != 64 || info.Journal == nil || info.Journal.HighWater == 0 || info.SizeBytes == 0 {
		t.Fatalf("info = %+v", info)
	}
	if code, out, _ := walletsync(t, "wallet", "check", "--db", db); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("check: exit %d: %s", code, out)
	}
	if code, _, stderr := walletsync(t, "wallet", "create", "--db", db); code != 1 || !strings.Contains(stderr, "exists") {
		t.Fatalf("create over an existing wallet: exit %d: %s", code, stderr)
	}
}

func TestCLI_Usage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 0, "Commands:"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"wallet", "info", "--help"}, 0, "Usage: walletsync wallet info"},
		{[]string{"wallet", "info"}, 2, "--db is required"},
		{[]string{"wallet", "create", "--db", "x", "--chain", "moon"}, 2, "wrong chain"},
		{[]string{"wallet", "seed", "--db", "x", "--fixture", "huge"}, 2, "unknown fixture"},
		{[]string{"wallet", "info", "--db", "x", "stray"}, 2, "unexpected argument"},
		// The commands that take a positional argument too.
		{[]string{"pause", "--for", "5x", "backup"}, 2, `invalid value "5x" for flag -for`},
		{[]string{"run"}, 2, "name one destination"},
		{[]string{"cancel", "--json"}, 2, "name one task"},
		{[]string{"service", "--bogus"}, 2, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		code, out, stderr := walletsync(t, tt.args...)
		if code != tt.code || !strings.Contains(out+stderr, tt.want) {
			t.Errorf("walletsync %v: exit %d, output %q %q; want exit %d mentioning %q", tt.args, code, out, stderr, tt.code, tt.want)
		}
	}
}

func TestCLI_Demo(t *testing.T) {
	dir := t.TempDir()
	for run := range 2 { // the second run reuses the demo's wallet, config and password
		code, out, stderr := walletsync(t, "demo", "--dir", dir, "--fixture", "small", "--exit-after-first-run", "--json")
		if code != 0 {
			t.Fatalf("demo run %d: exit %d: %s", run, code, stderr)
		}
		var sum demoSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("demo summary %q: %v", out, err)
		}
		if len(sum.Tasks) != 2 || !sum.Overview.Healthy || len(sum.Overview.Wallets) != 1 || sum.Overview.Wallets[0].Identities[0].Counts["transactions"] == 0 {
			t.Fatalf("demo run %d: %+v", run, sum)
		}
		for _, task := range sum.Tasks {
			// The second run's sync finds the backup wallet up to date: no rows to move.
			if task.State != "succeeded" || (run == 0 && task.Counters.Rows == 0) {
				t.Fatalf("demo run %d: task %+v", run, task)
			}
		}
	}
	backups, err := os.ReadDir(filepath.Join(dir, "backups"))
	if err != nil || len(backups) != 2 {
		t.Fatalf("backup folder after two runs: %v (%v)", backups, err)
	}
}

func TestCLI_BenchStore(t *testing.T) {
	var rep storeBenchReport
	runBenchJSON(t, "store", &rep)
	if rep.Scan.Rows == 0 || rep.Keyset.Rows != rep.Scan.Rows || rep.Keyset.Bytes != rep.Scan.Bytes || rep.TimeRatio <= 0 || rep.Keyset.PeakRSS == 0 {
		t.Fatalf("bench report %+v: keyset paging must read exactly what the scan reads", rep)
	}
}

func TestCLI_PauseResumeSayWhat(t *testing.T) {
	f := newAgentFolder(t, walletConfig(t, []string{"Backup wallet"}, nil))
	f.startAgent(t)
	dir := "--data-dir=" + string(f.dir)
	id := f.client(t)
	var cfg agent.Config
	if err := id.Do(testWait(t), "GET", "/api/v1/config", nil, &cfg); err != nil || len(cfg.Destinations) != 1 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	dest := cfg.Destinations[0].ID
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"pause", dir, "--all"}, "paused every destination\n"},
		{[]string{"resume", dir, dest}, "resumed " + dest + "\n"},
		{[]string{"pause", dir, "--for", "1h", dest}, "paused " + dest + "\n"},
	}
	for _, tc := range tests {
		if code, out, errOut := walletsync(t, tc.args...); code != 0 || out != tc.want {
			t.Errorf("walletsync %v: exit %d, %q (stderr %q); want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if err := id.Do(testWait(t), "GET", "/api/v1/config", nil, &cfg); err != nil || cfg.Destinations[0].Pause == nil || cfg.Destinations[0].Pause.Until.IsZero() {
		t.Fatalf("after pause --for 1h: %+v, %v", cfg.Destinations[0].Pause, err)
	}
}

// TestCLI_BenchSync runs `bench sync` end to end on the small fixture and checks the report's
// structure and consistency; never its times.
func TestCLI_BenchSync(t *testing.T) {
	var rep syncBenchReport
	runBenchJSON(t, "sync", &rep)
	full := rep.Full
	if rep.Floor.Rows == 0 || rep.ThroughGo.Rows != rep.Floor.Rows || full.Rows != rep.Floor.Rows || full.Pages == 0 || full.CommitSeconds <= 0 || full.ReadSeconds <= 0 {
		t.Errorf("full copy %+v against the floor's %d rows: the same rows, in pages, with their timings", full, rep.Floor.Rows)
	}
	if rep.Unchanged.Rows != 0 || rep.Unchanged.Pages != 0 || rep.Unchanged.Requests != 1 {
		t.Errorf("unchanged re-sync %+v: want 1 request and 0 pages", rep.Unchanged)
	}
	if rep.Incremental.Rows >= full.Rows || rep.Incremental.Requests == 0 {
		t.Errorf("incremental sync %+v after touching 1%% of %d rows: it must read only what changed", rep.Incremental, full.Rows)
	}
	if rep.FullRatio <= 0 || rep.ThroughGoRatio <= 0 || rep.IncrementalRatio <= 0 || rep.Idle.PeakRSS <= 0 {
		t.Errorf("ratios and idle RSS: %+v", rep)
	}
}

// TestCLI_BenchScheduler runs `bench scheduler` on the small fixture and checks what each mode
// and direction did with the wallet's queue; never its times.
func TestCLI_BenchScheduler(t *testing.T) {
	var out bytes.Buffer
	if err := runBenchScheduler(t.Context(), []string{"--fixture", "small", "--dir", t.TempDir(), "--interval", "1ms", "--repeat", "1", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var rep schedulerBenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bench output %q: %v", out.Bytes(), err)
	}
	if rep.Repeat != 1 || rep.Idle.Ops < 200 || rep.Idle.BackgroundPages != 0 || rep.Idle.BackgroundHoldSeconds != 0 {
		t.Fatalf("idle run: %+v", rep)
	}
	for _, sc := range []schedulerScenario{rep.Backup, rep.Restore} {
		for _, p := range []schedulerPhase{sc.Exclusive, sc.Paged} {
			if p.Ops < rep.Idle.Ops || p.BackgroundPages == 0 || p.MeanPageRows <= 0 || p.CommitSeconds <= 0 {
				t.Errorf("%s %s: %+v", sc.Direction, p.Mode, p)
			}
		}
		// The old way holds the wallet for the whole copy: its reads and its commits.
		if ex := sc.Exclusive; ex.BackgroundHoldSeconds < ex.CommitSeconds+ex.ReadSeconds {
			t.Errorf("%s exclusive: held the wallet %.6f s, but read and committed under it for %.6f s", sc.Direction, ex.BackgroundHoldSeconds, ex.CommitSeconds+ex.ReadSeconds)
		}
		if sc.PagedOverIdleP95 <= 0 || sc.ExclusiveOverPagedP95 <= 0 || sc.PagedOverExclusiveBackground <= 0 {
			t.Errorf("%s ratios: %+v", sc.Direction, sc)
		}
	}
	// Paged, a backup never takes a grant on the wallet; a restore takes one per commit.
	if p := rep.Backup.Paged; p.BackgroundHoldSeconds != 0 || p.QueueWaitSeconds != 0 || rep.Backup.PagedCopyFloorOverExclusive != 0 {
		t.Errorf("paged backup held the wallet: %+v", p)
	}
	if p := rep.Restore.Paged; p.BackgroundHoldSeconds <= 0 || p.BackgroundHoldSeconds > p.BackgroundSeconds || rep.Restore.PagedCopyFloorOverExclusive <= 0 {
		t.Errorf("paged restore: held the wallet %.6f s of a %.6f s copy", p.BackgroundHoldSeconds, p.BackgroundSeconds)
	}
	// The wallet is in WAL mode: its queue lets reads run beside a commit, and only the
	// foreground's writes count against the restore's floor.
	if !rep.ReadsBesideWriter || rep.Idle.ForegroundWriteBusy <= 0 || rep.Idle.ForegroundWriteBusy > rep.Idle.ForegroundBusy {
		t.Errorf("reads beside a commit %v, idle foreground busy %.3f, of it writing %.3f", rep.ReadsBesideWriter, rep.Idle.ForegroundBusy, rep.Idle.ForegroundWriteBusy)
	}
	// Each direction reports its own goals, and whether they are met.
	for _, tc := range []struct {
		sc        schedulerScenario
		p95, copy float64
	}{{rep.Backup, 2, 1.2}, {rep.Restore, 2, 1.3}} {
		sc := tc.sc
		if sc.P95Goal != tc.p95 || sc.CopyGoal != tc.copy || sc.P95Met != (sc.PagedOverIdleP95 <= tc.p95) || sc.CopyMet != (sc.PagedOverExclusiveBackground <= tc.copy) {
			t.Errorf("%s goals: %+v, want p95 <= %g, copy <= %g", sc.Direction, sc, tc.p95, tc.copy)
		}
	}
}
