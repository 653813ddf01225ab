package agent

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/testkit/compare"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// bundleEnv is an agent env whose config has a paused bundle folder destination "bundles"
// holding one bundle, made from another wallet than the agent's (two identities, the toolbox
// fixture's and the small one's), so that a restore visibly changes the wallet.
type bundleEnv struct {
	agentEnv
	source string // the wallet the bundle was made from, closed
	name   string // the bundle's name in the destination's folder
	dir    string // its folder
}

func newBundleEnv(t *testing.T) bundleEnv {
	t.Helper()
	e := bundleEnv{agentEnv: newAgentEnv(t, localstore.FixtureSmall)}
	ctx := context.Background()
	e.source = filepath.Join(e.agentEnv.dir, "source.sqlite")
	src, err := localstore.Create(ctx, e.source, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i, f := range []localstore.Fixture{localstore.FixtureSmall, localstore.FixtureSmall} {
		if _, err := localstore.Seed(ctx, src, f, localstore.SeedOptions{Seed: uint64(20 + i), IdentityKey: localstore.FixtureIdentity(uint64(10 + i))}); err != nil {
			t.Fatal(err)
		}
	}
	folder := filepath.Join(e.agentEnv.dir, "bundles")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	e.name = BundleName(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	e.dir = filepath.Join(folder, e.name)
	if _, err := bundle.Create(ctx, src, e.dir, bundle.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Destinations = append(cfg.Destinations, api.Destination{ID: "bundles", Name: "Bundles", Kind: api.DestinationBundles, Path: folder,
		Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}})
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitTask waits for task id to end.
func waitTask(t *testing.T, a *Agent, id string) api.Task {
	t.Helper()
	done, err := a.tasks.Wait(waitCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// The bundle's manifest shows before anything is written, a restore needs a confirm, and a
// confirmed one replaces the wallet the agent had open: afterwards the wallet equals the
// bundle's source in every table, and the agent goes on working with it.
func TestAgent_RestoreBundle_ReplacesTheWallet(t *testing.T) {
	e := newBundleEnv(t)
	want := compare.Digests(t, e.source)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := waitCtx(t)
	// A sync opens the wallet: the restore must let go of the agent's own handle.
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskSucceeded {
		t.Fatalf("sync before: %+v", task)
	}

	before := compare.Digests(t, e.wallet)
	for _, req := range []api.BundleRequest{{Destination: "bundles", Name: e.name}, {Path: e.dir}} {
		pt, err := c.PreviewBundle(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		done := waitTask(t, a, pt.ID)
		var m bundle.Manifest
		if done.State != api.TaskSucceeded || json.Unmarshal(done.Result, &m) != nil {
			t.Fatalf("preview %+v: %+v", req, done)
		}
		if len(m.Identities) != 2 || m.Identities[0].IdentityKey != localstore.FixtureIdentity(10) || m.Chain != wallet.ChainTest || m.Tables["transactions"] == 0 {
			t.Fatalf("preview %+v: manifest %+v", req, m)
		}
	}
	compare.Same(t, "the wallet after the previews", compare.Digests(t, e.wallet), before)

	var apiErr *api.APIError
	if _, err := c.RestoreBundle(ctx, api.BundleRequest{Destination: "bundles", Name: e.name}); !errors.As(err, &apiErr) || apiErr.Code != "invalid_argument" {
		t.Fatalf("restore without confirm: %v", err)
	}
	if _, err := c.RestoreBundle(ctx, api.BundleRequest{Destination: "bundles", Name: "../escape", Confirm: true}); !errors.As(err, &apiErr) || apiErr.Code != "invalid_argument" {
		t.Fatalf("restore of a name that is not a bundle's: %v", err)
	}
	rt, err := c.RestoreBundle(ctx, api.BundleRequest{Destination: "bundles", Name: e.name, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	done := waitTask(t, a, rt.ID)
	var res api.BundleRestored
	if done.State != api.TaskSucceeded || done.Kind != api.KindBundleRestore || json.Unmarshal(done.Result, &res) != nil {
		t.Fatalf("restore: %+v", done)
	}
	if res.Wallet != e.wallet || res.Tables["transactions"] != res.Manifest.Tables["transactions"] || len(res.Manifest.Identities) != 2 {
		t.Fatalf("restore result: %+v", res)
	}
	compare.Same(t, "the restored wallet", compare.Digests(t, e.wallet), want)
	if left, _ := filepath.Glob(e.wallet + ".walletsync-restore*"); len(left) > 0 {
		t.Errorf("the restore left %v", left)
	}

	// The agent reopened the wallet: its jobs run on the restored one.
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskSucceeded {
		t.Fatalf("sync after: %+v", task)
	}
	ov, err := c.Overview(ctx)
	if err != nil || len(ov.Wallets) != 1 || len(ov.Wallets[0].Identities) != 2 {
		t.Fatalf("overview after: %+v, %v", ov.Wallets, err)
	}
}

// A restore is refused while a task of the wallet runs or waits, with a typed error that
// names the task, and the wallet is left alone; while a restore holds a wallet, jobs are
// refused it.
func TestAgent_RestoreBundle_RefusedWhileATaskRuns(t *testing.T) {
	e := newBundleEnv(t)
	a := launchAgent(t, e.opts)
	// The timetable's first drill (due at once: it never ran) would be one more task of the
	// wallet, refusing the claim below whenever it is still running then.
	waitForDrill(t, a)
	c := apiClient(t, e.opts.Dir)
	ctx := waitCtx(t)
	before := compare.Digests(t, e.wallet)

	running := newBlockingJob()
	first, err := a.tasks.Start(api.KindSync, "file", running.run)
	if err != nil {
		t.Fatal(err)
	}
	<-running.started
	queued, err := a.tasks.Start(api.KindBackup, "file", newBlockingJob().run)
	if err != nil || queued.State != api.TaskQueued {
		t.Fatalf("second task: %+v, %v", queued, err)
	}
	req := api.BundleRequest{Destination: "bundles", Name: e.name, Confirm: true}
	for _, want := range []api.Task{queued, first} { // the newest task is named
		_, err := a.RestoreBundle(req)
		var inUse *walletInUseError
		if !errors.As(err, &inUse) || !errors.Is(err, api.ErrWalletInUse) || inUse.Wallet != e.wallet || inUse.TaskID != want.ID {
			t.Fatalf("restore beside task %s (%s): %v, want a WalletInUseError naming it", want.ID, want.State, err)
		}
		var apiErr *api.APIError
		if _, err := c.RestoreBundle(ctx, req); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || apiErr.Code != "wallet_in_use" ||
			!strings.Contains(apiErr.Message, want.ID) || apiErr.Hint == "" {
			t.Fatalf("restore beside task %s through the API: %#v", want.ID, err)
		}
		if _, err := a.tasks.Cancel(want.ID); err != nil {
			t.Fatal(err)
		}
		waitTask(t, a, want.ID)
	}
	compare.Same(t, "the wallet after the refusals", compare.Digests(t, e.wallet), before)

	// A claimed wallet refuses jobs until the restore lets it go.
	if err := a.claimForRestore(e.wallet); err != nil {
		t.Fatal(err)
	}
	if _, err := a.wallet(ctx, e.wallet); !errors.Is(err, api.ErrWalletInUse) {
		t.Fatalf("a job's open of a wallet being restored: %v", err)
	}
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskFailed || !strings.Contains(task.Error, "restore") {
		t.Fatalf("sync of a wallet being restored: %+v", task)
	}
	a.mu.Lock()
	delete(a.restoring, e.wallet)
	a.mu.Unlock()
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskSucceeded {
		t.Fatalf("sync once the wallet is free: %+v", task)
	}
}

// While another process has the wallet open, the restore fails with the typed refusal, in
// words that say to close it, and the wallet is unchanged: a wallet app in a transaction
// (the toolbox through Node), and another walletsync holding the writer lock.
func TestAgent_RestoreBundle_RefusedWhileAnotherProcessHoldsTheWallet(t *testing.T) {
	e := newBundleEnv(t)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := waitCtx(t)
	// Another walletsync can hold the wallet only while the agent has not opened it; the
	// sync after that case opens it, so the wallet app meets the agent's open handle.
	for _, tc := range []struct {
		name string
		hold func(t *testing.T) (release func())
	}{
		{"walletsync", func(t *testing.T) func() {
			s, err := localstore.Open(ctx, e.wallet, localstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return func() { s.Close() }
		}},
		{"wallet app", func(t *testing.T) func() {
			app := toolboxpeer.StartAppTxn(t, e.wallet, e.identity, "during-restore")
			return func() {
				if res := app.Finish(); !res.Committed {
					t.Errorf("the app's transaction after the refused restore: %+v", res)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := compare.Digests(t, e.wallet)
			release := tc.hold(t)
			rt, err := c.RestoreBundle(ctx, api.BundleRequest{Path: e.dir, Confirm: true})
			if err != nil {
				release()
				t.Fatal(err)
			}
			done := waitTask(t, a, rt.ID)
			compare.Same(t, "the wallet after the refused restore", compare.Digests(t, e.wallet), before)
			release()
			if done.State != api.TaskFailed || !strings.Contains(done.Message, "open in another program") || !strings.Contains(done.Hint, "Close the wallet app") ||
				done.Path != e.wallet {
				t.Fatalf("restore while held: %+v", done)
			}
			if left, _ := filepath.Glob(e.wallet + ".walletsync-restore*"); len(left) > 0 {
				t.Errorf("the refused restore left %v", left)
			}
			// The agent went on protecting the old wallet.
			if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskSucceeded {
				t.Fatalf("sync after the refusal: %+v", task)
			}
		})
	}
}

// A restore that a crash interrupted after its recovery marker is carried through when the
// agent starts, before anything opens the wallet.
func TestAgent_Start_RecoversAnInterruptedRestore(t *testing.T) {
	e := newBundleEnv(t)
	want := compare.Digests(t, e.source)
	// Stop the restore's goroutine dead at the marker, as a kill would stop the process: the
	// deferred cleanups that run are the lock's release (which a dying process's kernel
	// does) and nothing that undoes the marked swap.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		// Goexit at the hook: Restore never returns, so there is no error to look at.
		_, _ = bundle.Restore(context.Background(), e.dir, e.wallet, bundle.RestoreOptions{Hook: func(point string) {
			if point == localstore.HookMarked {
				runtime.Goexit()
			}
		}})
	}()
	<-stopped
	if _, err := os.Stat(e.wallet + ".walletsync-restore"); err != nil {
		t.Fatalf("no recovery marker after the interrupted restore: %v", err)
	}
	launchAgent(t, e.opts)
	if left, _ := filepath.Glob(e.wallet + ".walletsync-restore*"); len(left) > 0 {
		t.Fatalf("the agent started and left %v", left)
	}
	compare.Same(t, "the wallet once the agent started", compare.Digests(t, e.wallet), want)
}

// TestAgent_WalletCensus_CountsWhatTheWalletHolds: the census route answers the wallet's
// identities and the rows of every table of the file, walletsync's and Knex's included, as
// the file holds them; a wallet that is not configured is refused.
func TestAgent_WalletCensus_CountsWhatTheWalletHolds(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	st, err := localstore.Open(t.Context(), e.wallet, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := st.Census(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := st.Identities(t.Context())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		code string // the API error's code; "" for an answer
	}{
		{"the configured wallet", e.wallet, ""},
		{"the only wallet, unnamed", "", ""},
		{"a wallet not configured", filepath.Join(e.dir, "other.sqlite"), "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got api.WalletCensus
			err := c.Call(t.Context(), api.RouteWalletCensus, api.WalletRef{Path: tt.path}, &got)
			if tt.code != "" {
				var apiErr *api.APIError
				if !errors.As(err, &apiErr) || apiErr.Code != tt.code {
					t.Fatalf("census of %s: %v, want the code %s", tt.path, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Wallet != e.wallet || len(ids) == 0 || !slices.Equal(got.Identities, ids) {
				t.Errorf("census names %s with identities %v, the file holds %v", got.Wallet, got.Identities, ids)
			}
			if !maps.Equal(got.Tables, want.Tables) || got.Tables["knex_migrations"] == 0 || got.Tables["transactions"] == 0 {
				t.Errorf("census counts %v, the file holds %v", got.Tables, want.Tables)
			}
		})
	}
}
