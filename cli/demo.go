package cli

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/frontend"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/wallet"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// demoSeed is the demo wallet's fixture seed: its rows and its identity key.
const demoSeed = 1

// The demo's two destinations.
const (
	demoFileID   = "backup-file"
	demoFolderID = "backup-folder"
)

// demoSummary is what `walletsync demo --exit-after-first-run --json` prints.
type demoSummary struct {
	Dir       string       `json:"dir"`
	Dashboard string       `json:"dashboard"`
	Tasks     []api.Task   `json:"tasks"`
	Overview  api.Overview `json:"overview"`
}

// runDemo is the main job on an embedded default: a demo wallet, a SQLite backup wallet
// and a backup folder with a generated password, the agent with its dashboard, and a first
// sync and encrypted backup with visible progress; then it keeps running until Ctrl-C.
func runDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("demo", "[--dir D] [--fixture toolbox] [--exit-after-first-run] [--json]", out)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "walletsync-demo"), "where the demo keeps everything")
	fixture := fs.String("fixture", string(localstore.FixtureToolbox), "the demo wallet's fixture: small, toolbox or large")
	once := fs.Bool("exit-after-first-run", false, "stop after the first sync and backup")
	asJSON := fs.Bool("json", false, "print a JSON summary instead of progress (with --exit-after-first-run)")
	addr := fs.String("addr", "127.0.0.1:0", "the dashboard's loopback address")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	f, err := localstore.ParseFixture(*fixture)
	if err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	say := out
	if *asJSON {
		say = io.Discard
	}
	fmt.Fprintln(say, currentBuild())
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	walletPath := filepath.Join(*dir, "demo-wallet.sqlite")
	if err := demoWallet(ctx, walletPath, f, say); err != nil {
		return err
	}
	keyPath := filepath.Join(*dir, "demo-wallet.key")
	if err := demoKeyFile(keyPath); err != nil {
		return err
	}
	fmt.Fprintf(say, "demo wallet's identity key file (for a storage server destination): %s\n", keyPath)
	data := agent.DataDir(filepath.Join(*dir, "data"))
	configPath := filepath.Join(*dir, "config.json")
	if err := demoConfig(configPath, walletPath, *dir); err != nil {
		return err
	}
	if err := demoPassword(data, say); err != nil {
		return err
	}

	// The agent runs both destinations as it starts: as asked by hand, and so only once even
	// the first time, when their schedules would run them at once too.
	targets := []string{demoFileID, demoFolderID}
	a, err := agent.Start(ctx, agent.Options{Dir: data, ConfigPath: configPath, Addr: *addr, Version: Version, RunAtStart: targets, Dashboard: frontend.Handler()})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.Close(closeCtx)
	}()
	fmt.Fprintf(say, "dashboard: %s\n", a.LoginURL())

	tasks, err := demoFirstRun(ctx, a, targets, say)
	if err != nil {
		return err
	}
	if *once {
		ov, err := a.Overview(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if err := json.NewEncoder(out).Encode(demoSummary{Dir: *dir, Dashboard: a.URL(), Tasks: tasks, Overview: ov}); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out, ov.Health)
		}
		for _, t := range tasks {
			if t.State != api.TaskSucceeded {
				return fmt.Errorf("%s %s: %s: %s", t.Kind, t.Target, t.State, t.Error)
			}
		}
		return nil
	}
	fmt.Fprintln(say, "the agent keeps running (Ctrl-C stops it)")
	<-ctx.Done()
	return nil
}

// demoWallet creates and seeds the demo wallet once; later runs reuse it.
func demoWallet(ctx context.Context, path string, f localstore.Fixture, say io.Writer) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	fmt.Fprintf(say, "creating a demo wallet (%s fixture) at %s\n", f, path)
	s, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "walletsync demo"}, localstore.Options{})
	if err != nil {
		return err
	}
	bar := command.NewProgressLine(say)
	_, err = localstore.Seed(ctx, s, f, localstore.SeedOptions{Seed: demoSeed, Progress: func(done, total int) {
		bar.Update(done == total, "seeding: %d/%d transactions", done, total)
	}})
	return errors.Join(err, s.Close())
}

// demoKeyFile writes the demo wallet's identity key once, so that a storage server
// destination (which signs as the wallet's identity) can be added to the demo without
// reading the fixture's source. The key is derived from public data: never for real funds.
func demoKeyFile(path string) error {
	err := auth.WriteKeyFile(path, secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(demoSeed)))
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// demoConfig writes the demo's config once: the wallet, a backup wallet kept in sync on
// every change, and a backup folder written every hour.
func demoConfig(path, walletPath, dir string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	cfg := agent.DefaultConfig()
	cfg.Wallets = []api.WalletRef{{Path: walletPath}}
	cfg.Destinations = []api.Destination{
		{ID: demoFileID, Name: "Backup wallet", Kind: api.DestinationSQLite, Path: filepath.Join(dir, "backup-wallet.sqlite"),
			Schedule: api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}},
		{ID: demoFolderID, Name: "Backup folder", Kind: api.DestinationFolder, Path: filepath.Join(dir, "backups"),
			Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}},
	}
	return agent.SaveConfig(path, cfg)
}

// demoPassword generates the demo's unattended backup password once and prints it once.
func demoPassword(data agent.DataDir, say io.Writer) error {
	if err := data.Ensure(); err != nil {
		return err
	}
	secrets := agent.NewSecrets(data.SecretsPath())
	if _, err := secrets.Get(agent.BackupPasswordKey); err == nil {
		return nil
	}
	b := make([]byte, 15)
	rand.Read(b)
	pw := strings.ToLower(base32.StdEncoding.EncodeToString(b))
	pw = pw[0:6] + "-" + pw[6:12] + "-" + pw[12:18] + "-" + pw[18:24]
	if err := secrets.Set(agent.BackupPasswordKey, api.NewSecret(pw)); err != nil {
		return err
	}
	fmt.Fprintf(say, "demo backup password (shown once; the backups in the folder need it): %s\n%s\n", pw, api.LostPasswordWarning)
	return nil
}

// demoFirstRun follows the first task of each target that the agent runs, printing their
// progress, and returns them finished, in the order of targets.
func demoFirstRun(ctx context.Context, a *agent.Agent, targets []string, say io.Writer) ([]api.Task, error) {
	sub := a.Bus().Subscribe(0)  // from the agent's first event: the runs may have begun already
	first := map[string]string{} // target -> the id of its first task
	finished := map[string]api.Task{}
	bar := command.NewProgressLine(say)
	for len(finished) < len(targets) {
		ev, err := sub.Next(ctx)
		if err != nil {
			return nil, err
		}
		t, ok := ev.Data.(api.Task)
		if !ok || !slices.Contains(targets, t.Target) {
			continue
		}
		if first[t.Target] == "" {
			first[t.Target] = t.ID
			fmt.Fprintf(say, "%s %s: started\n", t.Kind, t.Target)
		}
		if first[t.Target] != t.ID {
			continue // a later run, such as one a change to the wallet asked for
		}
		switch ev.Type {
		case api.EventTaskProgress:
			bar.Update(false, "%s %s: %s, %d pages, %s, %s", t.Kind, t.Target, t.Detail, t.Counters.Pages,
				command.HumanBytes(t.Counters.Bytes), command.ProgressText(t.Counters.Rows, t.Total, t.RowsPerSec))
		case api.EventTaskFinished:
			finished[t.Target] = t
			moved := fmt.Sprintf("%d rows", t.Counters.Rows)
			if t.Counters.Pages > 0 { // a backup file is written whole, not in pages
				moved = fmt.Sprintf("%d pages, %s", t.Counters.Pages, moved)
			}
			line := strings.TrimSpace(fmt.Sprintf("%s %s: %s, %s %s", t.Kind, t.Target, t.State, moved, t.Error))
			bar.Update(true, "%s", line)
			if !bar.Terminal() {
				fmt.Fprintln(say, line)
			}
		}
	}
	out := make([]api.Task, 0, len(targets))
	for _, target := range targets {
		out = append(out, finished[target])
	}
	return out, nil
}
