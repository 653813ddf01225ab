package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/testkit/walletsynctest"
)

// walletsync runs the command line in-process and returns its exit code and output.
func walletsync(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
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
		info.Identities[0].Counts["proven_txs"] != 64 || info.Journal == nil || info.Journal.HighWater == 0 || info.SizeBytes == 0 ||
		info.JournalMode != "wal" {
		t.Fatalf("info = %+v", info)
	}
	if code, out, stderr := walletsync(t, "wallet", "info", "--db", db); code != 0 || !strings.Contains(out, "mode     WAL (walletsync switches a wallet to WAL") {
		t.Fatalf("info: exit %d: %s%s", code, out, stderr)
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
		{[]string{"staus", "--json"}, 2, `did you mean "walletsync status"?`},
		{[]string{"wallet", "infoo", "--db", "x"}, 2, `did you mean "walletsync wallet info"?`},
		{[]string{"wallet"}, 0, "wallet check"},
		{[]string{"bundle"}, 0, "bundle restore"},
		{[]string{"pause", "backup", "--for", "5x"}, 2, `invalid value "5x" for flag -for`},
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
		{[]string{"serve"}, 2, "--listen is required"},
		{[]string{"serve", "--listen", ":0", "--db", "x.sqlite", "--key-file", "k"}, 2, "--db must be sqlite:PATH"},
		{[]string{"serve", "--listen", ":0", "--db", "sqlite:x", "--key-file", "k", "--chain", "teratest"}, 2, "--chain must be test or main"},
		{[]string{"serve", "--listen", ":0", "--db", "sqlite:x", "--key-file", "k", "--tls-cert", "c"}, 2, "--tls-cert and --tls-key go together"},
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
	backups = slices.DeleteFunc(backups, func(f os.DirEntry) bool { return strings.HasPrefix(f.Name(), agent.PlaceMarkerPrefix) })
	if err != nil || len(backups) != 2 {
		t.Fatalf("backup folder after two runs: %v (%v)", backups, err)
	}
	// The key file the demo writes signs as the demo wallet's identity, so a storage server
	// destination can be added to the demo.
	key, err := auth.LoadKeyFile(filepath.Join(dir, "demo-wallet.key"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := walletsync(t, "wallet", "info", "--db", filepath.Join(dir, "demo-wallet.sqlite"), "--json")
	if pub := hex.EncodeToString(key.PubKey().SerializeCompressed()); code != 0 || !strings.Contains(out, pub) {
		t.Fatalf("wallet info: exit %d, %q %q; want the key file's identity %s", code, out, stderr, pub)
	}
}

func TestCLI_PauseResumeSayWhat(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, nil))
	f.StartAgent(t)
	dir := "--data-dir=" + string(f.Dir)
	id := f.Client(t)
	cfg, err := id.Config(walletsynctest.Wait(t))
	if err != nil || len(cfg.Destinations) != 1 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	dest := cfg.Destinations[0].ID
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"pause", dir, "--all"}, "paused every destination\n"},
		{[]string{"resume", dir, dest}, "resumed " + dest + "\n"},
		{[]string{"pause", dest, "--for", "1h", dir}, "paused " + dest + "\n"},
	}
	for _, tc := range tests {
		if code, out, errOut := walletsync(t, tc.args...); code != 0 || out != tc.want {
			t.Errorf("walletsync %v: exit %d, %q (stderr %q); want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if cfg, err = id.Config(walletsynctest.Wait(t)); err != nil || cfg.Destinations[0].Pause == nil || cfg.Destinations[0].Pause.Until.IsZero() {
		t.Fatalf("after pause --for 1h: %+v, %v", cfg.Destinations[0].Pause, err)
	}
	typo := dest[:len(dest)-1] + "x"
	for _, verb := range []string{"run", "resume"} {
		code, _, errOut := walletsync(t, verb, typo, dir)
		if want := fmt.Sprintf("did you mean %q? (the destinations are %q)", dest, dest); code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("walletsync %s %s: exit %d, %q; want exit 1 and %q", verb, typo, code, errOut, want)
		}
	}
}

// TestCLI_UnknownCommandIsShort answers a typo with the command meant, without the flags
// typed after it and without the whole usage.
func TestCLI_UnknownCommandIsShort(t *testing.T) {
	code, out, errOut := walletsync(t, "wallet", "infoo", "--db", "secret-name.sqlite")
	if code != 2 || out != "" || strings.Contains(errOut, "secret-name") || strings.Contains(errOut, "serve") ||
		!strings.HasPrefix(errOut, `walletsync: unknown command "wallet infoo"`) {
		t.Fatalf("wallet infoo: exit %d, %q %q", code, out, errOut)
	}
}

// TestCLI_StatusAndTasks asks a running agent through the two read-only commands: status
// names the destination, and tasks lists the run it was asked for, as text and as JSON.
func TestCLI_StatusAndTasks(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, nil))
	f.StartAgent(t)
	dir := "--data-dir=" + string(f.Dir)
	c := f.Client(t)
	cfg, err := c.Config(walletsynctest.Wait(t))
	if err != nil || len(cfg.Destinations) != 1 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	dest := cfg.Destinations[0].ID
	task, err := c.Run(walletsynctest.Wait(t), dest)
	if err != nil {
		t.Fatal(err)
	}
	walletsynctest.WaitTask(t, c, task.ID)

	if code, out, stderr := walletsync(t, "status", dir); code != 0 || !strings.Contains(out, dest) || !strings.Contains(out, "last good") {
		t.Fatalf("status: exit %d, %q (%s)", code, out, stderr)
	}
	code, out, stderr := walletsync(t, "tasks", dir, "--json")
	var tasks []api.Task
	if err := json.Unmarshal([]byte(out), &tasks); code != 0 || err != nil {
		t.Fatalf("tasks --json: exit %d, %v, %q (%s)", code, err, out, stderr)
	}
	// The agent may queue its own drill beside the run asked for, so the run is looked up
	// by id rather than expected first.
	i := slices.IndexFunc(tasks, func(x api.Task) bool { return x.ID == task.ID })
	if i < 0 || tasks[i].Target != dest || tasks[i].State != api.TaskSucceeded {
		t.Fatalf("tasks --json: %q; want task %s for %s, succeeded", out, task.ID, dest)
	}
	if code, out, _ := walletsync(t, "tasks", dir); code != 0 || !strings.Contains(out, task.ID) || !strings.Contains(out, dest) {
		t.Fatalf("tasks: exit %d, %q", code, out)
	}
	if code, _, stderr := walletsync(t, "status", "--data-dir="+t.TempDir()); code != 1 || stderr == "" {
		t.Fatalf("status without an agent: exit %d, %q", code, stderr)
	}
}

// TestCLI_ServiceStatusGivesTheHint runs `service status`: where the machine has a service
// manager it reports the service; where it has none (a container), the failure is followed
// by the advice the agent attached to it, so the person knows to start the agent by hand.
func TestCLI_ServiceStatusGivesTheHint(t *testing.T) {
	code, out, stderr := walletsync(t, "service", "--data-dir="+t.TempDir(), "status")
	switch code {
	case 0:
		if !strings.HasPrefix(out, "service (") {
			t.Fatalf("service status: %q", out)
		}
	case 1:
		if !strings.Contains(stderr, "no supported service manager") || !strings.Contains(stderr, "\n  ") || !strings.Contains(stderr, `"walletsync agent"`) {
			t.Fatalf("service status without a service manager: %q; want the error and its hint", stderr)
		}
	default:
		t.Fatalf("service status: exit %d, %q", code, stderr)
	}
}

// TestCLI_WalletProtect chooses the wallet of a fresh agent from the command line: status
// first leads to the step, a backup file is refused in words, and the wallet is accepted
// by a path relative to the current folder.
func TestCLI_WalletProtect(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	f.StartAgent(t)
	dir := "--data-dir=" + string(f.Dir)
	if code, out, stderr := walletsync(t, "status", dir); code != 0 || !strings.Contains(out, "walletsync wallet protect --db FILE") ||
		!strings.Contains(out, "  dashboard http://127.0.0.1:") || !strings.Contains(out, "to sign in: walletsync open") {
		t.Fatalf("status with no wallet: exit %d, %q (%s)", code, out, stderr)
	}
	work := t.TempDir()
	t.Chdir(work)
	if err := os.WriteFile("old.brc39", []byte("WDAT\x00\x00\x00\x01 a backup header"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := walletsync(t, "wallet", "protect", "--db", "old.brc39", dir); code != 1 || !strings.Contains(stderr, "BRC-39 backup file, not a wallet") {
		t.Fatalf("protect a backup file: exit %d, %q", code, stderr)
	}
	wallet := filepath.Join(work, "wallet.sqlite")
	if code, _, stderr := walletsync(t, "wallet", "create", "--db", wallet); code != 0 {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	code, out, stderr := walletsync(t, "wallet", "protect", dir, "--db", "wallet.sqlite")
	if code != 0 || out != "walletsync now protects "+wallet+"\nnext: add a destination in the dashboard to make the first backup\n" {
		t.Fatalf("protect: exit %d, %q (%s)", code, out, stderr)
	}
	if cfg, err := f.Client(t).Config(walletsynctest.Wait(t)); err != nil || len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != wallet {
		t.Fatalf("config after protect: %+v, %v", cfg, err)
	}
}

// TestCLI_OpenGivesAFreshLink: open prints a new one-time link and hands that link to the
// browser ($BROWSER stands in for it here); the link signs a browser in.
func TestCLI_OpenGivesAFreshLink(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	f.StartAgent(t)
	opened := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf %s \"$1\" > "+opened+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", browser)
	code, out, stderr := walletsync(t, "open", "--data-dir="+string(f.Dir))
	if code != 0 || !strings.HasPrefix(out, "dashboard: http://127.0.0.1:") {
		t.Fatalf("open: exit %d, %q (%s)", code, out, stderr)
	}
	link := strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "dashboard: ")
	got, err := os.ReadFile(opened)
	if err != nil || string(got) != link {
		t.Fatalf("the browser was given %q (%v); want the printed link %q", got, err, link)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		t.Fatalf("the link answered %s without a sign-in cookie", resp.Status)
	}
	if code, out, _ := walletsync(t, "open", "--print-only", "--data-dir="+string(f.Dir)); code != 0 || strings.Contains(out, link) {
		t.Fatalf("a second open: exit %d, %q; want a new link", code, out)
	}
}
