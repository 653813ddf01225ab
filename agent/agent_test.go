package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/testkit/compare"
	"walletsync/testkit/tier"
	"walletsync/wallet"
)

// testPassword is the unattended backup password of the tests; every test that handles it
// checks it never leaks.
const testPassword = "correct horse battery staple 7"

// agentEnv is a wallet, two destinations (a backup wallet and a backup folder) and a data
// folder, laid out in a temp dir the way `walletsync demo` lays them out.
type agentEnv struct {
	dir, wallet, backupWallet, folder string
	opts                              Options
	identity                          string
}

func newAgentEnv(t *testing.T, f localstore.Fixture) agentEnv {
	t.Helper()
	dir := t.TempDir()
	e := agentEnv{dir: dir, wallet: filepath.Join(dir, "wallet.sqlite"), backupWallet: filepath.Join(dir, "backup.sqlite"),
		folder: filepath.Join(dir, "backups")}
	s, err := localstore.Create(context.Background(), e.wallet, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := localstore.Seed(context.Background(), s, f, localstore.SeedOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	e.identity = res.IdentityKey
	cfg := DefaultConfig()
	cfg.Wallets = []api.WalletRef{{Path: e.wallet}}
	hourly := api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}
	cfg.Destinations = []api.Destination{
		{ID: "file", Name: "Backup wallet", Kind: api.DestinationSQLite, Path: e.backupWallet, Schedule: hourly, Pause: &api.Pause{}},
		{ID: "folder", Name: "Backup folder", Kind: api.DestinationFolder, Path: e.folder, Schedule: hourly, Pause: &api.Pause{}},
	}
	cfg.Drill.Kind, cfg.Drill.Every = api.ScheduleInterval, api.Duration(30*24*time.Hour)
	e.opts = Options{Dir: DataDir(filepath.Join(dir, "data")), ConfigPath: filepath.Join(dir, "config.json"), Version: "test"}
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.opts.Dir.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := NewSecrets(e.opts.Dir.SecretsPath()).Set(BackupPasswordKey, api.NewSecret(testPassword)); err != nil {
		t.Fatal(err)
	}
	return e
}

func launchAgent(t *testing.T, opts Options) *Agent {
	t.Helper()
	a, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// client returns an API client that finds the agent the way the command line does.
func apiClient(t *testing.T, dir DataDir) *api.Client {
	t.Helper()
	ep, err := dir.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(ep)
}

func runAndWait(t *testing.T, c *api.Client, a *Agent, route api.Route, args ...string) api.Task {
	t.Helper()
	var task api.Task
	if err := c.Call(context.Background(), route, nil, &task, args...); err != nil {
		t.Fatalf("%s %v: %v", route, args, err)
	}
	done, err := a.tasks.Wait(waitCtx(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func TestAgent_SyncBackupDrillThroughTheAPI(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	var seen bytes.Buffer // every API answer, to search for the password afterwards

	for _, dest := range []string{"file", "folder"} {
		task := runAndWait(t, c, a, api.RouteRun, dest)
		if task.State != api.TaskSucceeded {
			t.Fatalf("%s: %+v", dest, task)
		}
		// A first copy knows its total: the rows it moved are the rows it expected.
		if dest == "file" && (task.Total == 0 || task.Total != task.Counters.Rows) {
			t.Errorf("%s: total %d, moved %d rows", dest, task.Total, task.Counters.Rows)
		}
	}
	var ov api.Overview
	if err := c.Call(context.Background(), api.RouteOverview, nil, &ov); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&seen, "%+v", ov)
	if !ov.Healthy || !strings.HasPrefix(ov.Health, "Backed up just now to 2 destinations") || ov.Wallets[0].Identities[0].IdentityKey != e.identity {
		t.Fatalf("overview: %+v", ov)
	}
	// The backup wallet holds the wallet.
	src, _ := localstore.Open(context.Background(), e.wallet, localstore.Options{ReadOnly: true})
	dst, _ := localstore.Open(context.Background(), e.backupWallet, localstore.Options{ReadOnly: true})
	ignore := compare.Options{Ignore: []string{"proven_tx_reqs.notified", "users.activeStorage", "users.updated_at", "users.created_at", "output_baskets.created_at"}}
	wa, err1 := compare.Read(context.Background(), src, e.identity, ignore)
	wb, err2 := compare.Read(context.Background(), dst, e.identity, ignore)
	src.Close()
	dst.Close()
	if err := errors.Join(err1, err2); err != nil || compare.Diff(wa, wb) != "" {
		t.Fatalf("backup wallet differs (%v):\n%s", err, compare.Diff(wa, wb))
	}

	var listing api.BackupListing
	if err := c.Call(context.Background(), api.RouteBackups, nil, &listing, "folder"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&seen, "%+v", listing)
	if len(listing.Files) != 1 || listing.Files[0].Record == nil || !listing.Files[0].Keep || listing.Files[0].Record.Rows[wallet.TableTransactions] == 0 {
		t.Fatalf("backup listing: %+v", listing)
	}
	drill := runAndWait(t, c, a, api.RouteDrill)
	fmt.Fprintf(&seen, "%+v", drill)
	if drill.State != api.TaskSucceeded || !strings.Contains(string(drill.Result), `"ok":true`) {
		t.Fatalf("drill: %+v %s", drill, drill.Result)
	}
	if err := c.Call(context.Background(), api.RouteBackups, nil, &listing, "folder"); err != nil || listing.Files[0].Record.VerifiedAt.IsZero() {
		t.Fatalf("the drilled file is not marked verified: %+v (%v)", listing, err)
	}
	for _, task := range a.tasks.List() {
		log, _ := a.tasks.Log(task.ID)
		fmt.Fprintf(&seen, "%+v %+v", task, log)
	}
	a.Close(context.Background())
	assertNoPassword(t, seen.Bytes(), e)
}

// assertNoPassword fails when the password appears in out or in any file of the data folder
// but the secrets file.
func assertNoPassword(t *testing.T, out []byte, e agentEnv) {
	t.Helper()
	if bytes.Contains(out, []byte(testPassword)) {
		t.Fatal("the password appears in an API answer, a task or its log")
	}
	err := filepath.WalkDir(string(e.opts.Dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == e.opts.Dir.SecretsPath() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte(testPassword)) {
			t.Errorf("the password appears in %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("read the data folder: %v", err)
	}
}

// TestAgent_DrillRunsAfterTheFirstBackup: a new agent's first restore drill finds no backup
// and is skipped, saying it runs again once a backup exists; the first backup then starts
// it, and it checks that backup (rather than waiting for the drill's next turn, a month
// away here).
func TestAgent_DrillRunsAfterTheFirstBackup(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	waitForDrill(t, a)
	var skipped api.Task
	for _, task := range a.tasks.List() {
		if task.Kind == api.KindDrill {
			skipped = task
		}
	}
	if skipped.State != api.TaskSucceeded || skipped.Skipped() == "" {
		t.Fatalf("the first drill, before any backup: %+v %s; want skipped", skipped, skipped.Result)
	}
	c := apiClient(t, e.opts.Dir)
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatal(task)
	}
	ctx := waitCtx(t)
	for {
		for _, task := range a.tasks.List() {
			if task.Kind != api.KindDrill || task.ID == skipped.ID {
				continue
			}
			done, err := a.tasks.Wait(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if done.State != api.TaskSucceeded || done.Skipped() != "" || !strings.Contains(string(done.Result), `"ok":true`) {
				t.Fatalf("the drill after the first backup: %+v %s", done, done.Result)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no restore drill started after the first backup")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestAgent_DrillFailsLoudlyOnACorruptBackup(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	first := runAndWait(t, c, a, api.RouteRun, "folder")
	if first.State != api.TaskSucceeded {
		t.Fatal(first)
	}
	good := runAndWait(t, c, a, api.RouteDrill)
	if good.State != api.TaskSucceeded {
		t.Fatalf("drill of a good file: %+v", good)
	}
	// A second backup (within the same second: it must not replace the first), then damage
	// it: the drill takes the newest file.
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatal(task)
	}
	recs, err := a.state.Backups(context.Background(), "folder")
	if err != nil || len(recs) != 2 {
		t.Fatalf("records: %v %v", recs, err)
	}
	b, _ := os.ReadFile(recs[0].Path)
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(recs[0].Path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := a.bus.Subscribe(a.bus.Last())
	bad := runAndWait(t, c, a, api.RouteDrill)
	if bad.State != api.TaskFailed || !strings.Contains(bad.Error, filepath.Base(recs[0].Path)) || bad.Hint == "" {
		t.Fatalf("drill of a damaged file: %+v", bad)
	}
	for {
		ev, err := sub.Next(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.Data.(api.DrillFile); ok && ev.Type == api.EventDrillFinished {
			if f.OK || f.Path != recs[0].Path {
				t.Fatalf("drill event: %+v", f)
			}
			break
		}
	}
	recs, _ = a.state.Backups(context.Background(), "folder")
	if recs[0].VerifyError == "" || recs[1].VerifiedAt.IsZero() {
		t.Fatalf("after the failed drill: %+v", recs)
	}
}

func TestAgent_CancelMidSyncKeepsTheAcknowledgedCheckpoint(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureToolbox)
	e.opts.SyncMaxRows = 20
	a := launchAgent(t, e.opts)
	done := cancelAfterPages(t, a, "file", 3)
	if done.State != api.TaskCancelled {
		t.Fatalf("cancelled sync: %+v", done)
	}
	var res api.SyncResult
	if err := jsonUnmarshal(done.Result, &res); err != nil || len(res.Sessions) != 1 {
		t.Fatalf("result %s: %v", done.Result, err)
	}
	cp := res.Sessions[0].Checkpoint
	dst, err := localstore.Open(context.Background(), e.backupWallet, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	durable, err := dst.Checkpoint(context.Background(), cp.Session)
	dst.Close()
	if err != nil || durable.Seq != cp.Seq || durable.Seq < 3 || durable.Done {
		t.Fatalf("durable checkpoint %+v, reported %+v (%v)", durable, cp, err)
	}
}

// TestMain doubles as a helper process: an agent that a test kills with SIGKILL.
func TestMain(m *testing.M) {
	if dir := os.Getenv("WALLETSYNC_TEST_AGENT"); dir != "" {
		runDoomedAgent(dir, os.Getenv("WALLETSYNC_TEST_AGENT_RUN"))
		return
	}
	os.Exit(m.Run())
}

// runDoomedAgent starts an agent on the environment in dir, runs one destination, says so,
// and waits to be killed.
func runDoomedAgent(dir, destination string) {
	opts := Options{Dir: DataDir(filepath.Join(dir, "data")), ConfigPath: filepath.Join(dir, "config.json"), SyncMaxRows: 10}
	a, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := a.RunDestination(destination, "manual"); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("running")
	select {}
}

// killDuring starts the doomed agent on destination and kills it with SIGKILL once ready
// says the work is under way.
func killDuring(t *testing.T, e agentEnv, destination string, ready func() bool) {
	t.Helper()
	tier.Full(t, "a child process killed with SIGKILL")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WALLETSYNC_TEST_AGENT="+e.dir, "WALLETSYNC_TEST_AGENT_RUN="+destination)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "running" {
		cmd.Process.Kill()
		t.Fatalf("doomed agent: %q", line)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !ready() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the work never got under way")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("doomed agent ended with %v, want killed", err)
	}
}

func TestAgent_KilledDuringBackupRestartsClean(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureToolbox)
	killDuring(t, e, "folder", func() bool {
		tmp, _ := filepath.Glob(filepath.Join(e.folder, ".walletsync-*.tmp-*"))
		return len(tmp) > 0
	})
	a := launchAgent(t, e.opts)
	var interrupted bool
	for _, task := range a.tasks.List() {
		interrupted = interrupted || (task.Kind == api.KindBackup && task.State == api.TaskInterrupted)
	}
	if !interrupted {
		t.Fatalf("after the kill, tasks %+v: want the backup shown interrupted", a.tasks.List())
	}
	c := apiClient(t, e.opts.Dir)
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatalf("backup after the restart: %+v", task)
	}
	entries, _ := os.ReadDir(e.folder)
	entries = slices.DeleteFunc(entries, func(f os.DirEntry) bool { return strings.HasPrefix(f.Name(), PlaceMarkerPrefix) })
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".brc39") {
		t.Fatalf("backup folder after the restart: %v; want exactly one whole backup", entries)
	}
}

func TestAgent_KilledDuringSyncResumesFromTheCheckpoint(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureToolbox)
	var key wallet.SessionKey
	killDuring(t, e, "file", func() bool {
		dst, err := localstore.Open(context.Background(), e.backupWallet, localstore.Options{ReadOnly: true})
		if err != nil {
			return false
		}
		defer dst.Close()
		settings, err := readSettings(e.wallet)
		if err != nil {
			return false
		}
		key = wallet.SessionKey{SourceStorage: settings.StorageIdentityKey, IdentityKey: e.identity}
		cp, err := dst.Checkpoint(context.Background(), key)
		return err == nil && cp.Seq >= 5
	})
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	task := runAndWait(t, c, a, api.RouteRun, "file")
	var res api.SyncResult
	if err := jsonUnmarshal(task.Result, &res); task.State != api.TaskSucceeded || err != nil {
		t.Fatalf("sync after the kill: %+v (%v)", task, err)
	}
	if cp := res.Sessions[0].Checkpoint; !cp.Done || cp.Seq <= 5 {
		t.Fatalf("the resumed sync's checkpoint %+v does not continue the killed one's", cp)
	}
}

func readSettings(path string) (wallet.Settings, error) {
	s, err := localstore.Open(context.Background(), path, localstore.Options{ReadOnly: true})
	if err != nil {
		return wallet.Settings{}, err
	}
	defer s.Close()
	return s.Settings(context.Background())
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestAgent_RunAtStartRunsEachDestinationOnce starts an agent whose destinations never ran,
// so their schedules want them at once too, and asks for both at start: each runs once.
func TestAgent_RunAtStartRunsEachDestinationOnce(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Destinations {
		cfg.Destinations[i].Pause = nil
	}
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}

	opts := e.opts
	opts.RunAtStart = []string{"file", "nope"}
	if _, err := Start(context.Background(), opts); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("start with an unknown destination to run: %v, want ErrNotFound", err)
	}
	opts.RunAtStart = []string{"file", "folder"}
	a, err := Start(context.Background(), opts) // the refused start released the data folder
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range opts.RunAtStart {
		if done := waitFirstRun(t, a, target, time.Time{}); done.State != api.TaskSucceeded || done.Counters.Rows == 0 {
			t.Fatalf("%s: %s %s", target, done.State, done.Error)
		}
	}
	// A second run would have been asked for at start, beside the first: it would be listed.
	runs := map[string]int{}
	for _, task := range a.tasks.List() {
		runs[task.Target]++
	}
	for _, target := range opts.RunAtStart {
		if runs[target] != 1 {
			t.Errorf("%s ran %d times at start, want once", target, runs[target])
		}
	}
	a.Close(context.Background())

	// Once they ran, their hourly schedules want nothing at start: only what is asked runs.
	restart := time.Now()
	opts.RunAtStart = []string{"file"}
	a = launchAgent(t, opts)
	if done := waitFirstRun(t, a, "file", restart); done.State != api.TaskSucceeded {
		t.Fatalf("file at the second start: %s %s", done.State, done.Error)
	}
	for _, task := range a.tasks.List() {
		if task.Target == "folder" && task.QueuedAt.After(restart) {
			t.Errorf("folder ran at the second start without being asked: %s", task.ID)
		}
	}
}

// waitFirstRun waits for the first task of target queued after since, and returns it
// finished.
func waitFirstRun(t *testing.T, a *Agent, target string, since time.Time) api.Task {
	t.Helper()
	ctx := waitCtx(t)
	for {
		for _, task := range slices.Backward(a.tasks.List()) { // oldest first
			if task.Target == target && task.QueuedAt.After(since) {
				done, err := a.tasks.Wait(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				return done
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no run of %s after %v", target, since)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestAgent_ReplaceWallet_LetsGoOfTheOldOne: once a restored wallet is made the protected
// one, the agent holds the new file and no longer the old one, so that another program can
// write the old one (here: a walletsync writer that would be refused while the agent holds
// its lock); the destinations follow the new wallet.
func TestAgent_ReplaceWallet_LetsGoOfTheOldOne(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	// The drill a new agent's timetable starts may use the wallet; while a task may, the
	// agent keeps it (releaseUnconfigured), and lets go of it at the next idle look.
	waitForDrill(t, a)
	ctx := context.Background()
	if _, err := a.wallet(ctx, e.wallet); err != nil {
		t.Fatal(err)
	}
	if _, err := localstore.Open(ctx, e.wallet, localstore.Options{}); !errors.Is(err, wallet.ErrWriterLocked) {
		t.Fatalf("opening the protected wallet beside the agent: %v, want the writer lock refused", err)
	}
	restored := filepath.Join(e.dir, "restored.sqlite")
	if err := safefile.CopyNew(e.wallet, restored); err != nil {
		t.Fatal(err)
	}
	cfg, err := apiClient(t, e.opts.Dir).ReplaceWallet(ctx, api.WalletReplaceRequest{Old: e.wallet, New: restored})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != restored {
		t.Fatalf("wallets after the replace: %+v", cfg.Wallets)
	}
	old, err := localstore.Open(ctx, e.wallet, localstore.Options{})
	if err != nil {
		t.Fatalf("the old wallet is still held by the agent: %v", err)
	}
	old.Close()
	if _, err := localstore.Open(ctx, restored, localstore.Options{}); !errors.Is(err, wallet.ErrWriterLocked) {
		t.Fatalf("opening the new protected wallet beside the agent: %v, want the writer lock refused", err)
	}
}
