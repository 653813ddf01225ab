package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/wallet"
)

// TestAgent_BundleFolder runs a "bundles" destination through the API: each run writes a
// whole-store bundle that verifies, the drill verifies the newest and marks it, retention
// deletes the bundles it no longer keeps (whole folders, never the newest verified one),
// and a damaged bundle fails the drill loudly, by name.
func TestAgent_BundleFolder(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(e.dir, "bundles")
	cfg.Destinations = append(cfg.Destinations, api.Destination{ID: "bundles", Name: "Bundles", Kind: api.DestinationBundles, Path: folder,
		Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}})
	cfg.Retention = api.Retention{Last: 1}
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	// Each run an hour after the last, so that bundle names and retention's days differ.
	var hours atomic.Int64
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	e.opts.Clock = func() time.Time { return base.Add(time.Duration(hours.Load()) * time.Hour) }
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)

	run := func() api.BackupRecord {
		t.Helper()
		hours.Add(1)
		if task := runAndWait(t, c, a, api.RouteRun, "bundles"); task.State != api.TaskSucceeded || task.Kind != api.KindBundle {
			t.Fatalf("bundle run: %+v", task)
		}
		recs, err := a.state.Backups(context.Background(), "bundles")
		if err != nil || len(recs) == 0 {
			t.Fatalf("records: %v, %v", recs, err)
		}
		m, err := bundle.Verify(context.Background(), recs[0].Path)
		if err != nil || len(m.Identities) != 1 || m.Identities[0].IdentityKey != e.identity || recs[0].Rows[wallet.TableTransactions] == 0 {
			t.Fatalf("the newest bundle %s: %+v, %v", recs[0].Path, m, err)
		}
		return recs[0]
	}
	drill := func(want api.TaskState) api.Task {
		t.Helper()
		task := runAndWait(t, c, a, api.RouteDrill)
		if task.State != want {
			t.Fatalf("drill: %+v %s", task, task.Result)
		}
		return task
	}
	names := func() []string {
		t.Helper()
		var listing api.BackupListing
		if err := c.Call(context.Background(), api.RouteBackups, nil, &listing, "bundles"); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range listing.Files {
			out = append(out, f.Name)
		}
		return out
	}

	first := run()
	drill(api.TaskSucceeded)
	second := run()
	if got := names(); len(got) != 2 { // the newest, and the newest verified
		t.Fatalf("after the second bundle: %v", got)
	}
	drill(api.TaskSucceeded)
	third := run()
	got := names()
	if len(got) != 2 || got[0] != filepath.Base(third.Path) || got[1] != filepath.Base(second.Path) {
		t.Fatalf("after the third bundle: %v, want the third and the verified second", got)
	}
	if _, err := os.Lstat(first.Path); !os.IsNotExist(err) {
		t.Fatalf("retention left the first bundle's folder: %v", err)
	}

	// Damage the newest bundle's data file: the drill fails and names it.
	data := filepath.Join(third.Path, bundle.WalletName)
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(data, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := drill(api.TaskFailed)
	if !strings.Contains(bad.Error, filepath.Base(third.Path)) {
		t.Fatalf("the failed drill does not name the bundle: %+v", bad)
	}
}
