package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/testkit/importtest"
	"walletsync/wallet"
)

// TestAgent_ImportRefusalsAndAbandon drives the import API the way the restore wizard does.
// A merge stopped half-way before the agent starts marks the wallet: the overview says so,
// a sync of the wallet is refused, and POST /api/v1/import/abandon takes the merge back.
// Then the backup of another identity: the preview says otherIdentity, the import is refused
// until allowOtherIdentity asks for it.
func TestAgent_ImportRefusalsAndAbandon(t *testing.T) {
	ctx := context.Background()
	e := newAgentEnv(t, localstore.FixtureSmall)
	other := filepath.Join(t.TempDir(), "other.sqlite")
	s, err := localstore.Create(ctx, other, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := localstore.Seed(ctx, s, localstore.FixtureSmall, localstore.SeedOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := s.Settings(ctx)
	doc, backup := filepath.Join(t.TempDir(), "other.json"), filepath.Join(t.TempDir(), "other.brc39")
	_, err1 := portable.ExportBRC38(ctx, v, settings, res.IdentityKey, doc, portable.ExportOptions{})
	_, err2 := portable.ExportBRC39(ctx, v, settings, res.IdentityKey, testPassword, brc39.DefaultKDFParams, backup, portable.ExportOptions{})
	v.Close()
	s.Close()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}

	// A merge of the other identity, asked for, stopped after two pages.
	importtest.HalfMerge(t, doc, e.wallet, filepath.Join(string(e.opts.Dir), "staging"), 2)

	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	var ov api.Overview
	if err := c.Call(ctx, api.RouteOverview, nil, &ov); err != nil {
		t.Fatal(err)
	}
	if ov.Healthy || !strings.HasPrefix(ov.Health, "Import in progress into") || ov.Wallets[0].ImportInProgress == nil {
		t.Fatalf("overview mid-merge: %q %+v", ov.Health, ov.Wallets)
	}
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskFailed || !strings.Contains(task.Error, "import in progress: finish or abandon") {
		t.Fatalf("sync mid-merge: %+v", task)
	}
	var task api.Task
	if err := c.Call(ctx, api.RouteImportAbandon, api.AbandonRequest{}, &task); err != nil {
		t.Fatal(err)
	}
	if done, err := a.tasks.Wait(waitCtx(t), task.ID); err != nil || done.State != api.TaskSucceeded {
		t.Fatalf("abandon: %+v, %v", done, err)
	}
	var after api.Overview
	if err := c.Call(ctx, api.RouteOverview, nil, &after); err != nil || after.Wallets[0].ImportInProgress != nil || len(after.Wallets[0].Identities) != 1 {
		t.Fatalf("overview after abandon: %+v, %v", after.Wallets, err)
	}

	// A Secret never marshals its value, so the body is written as the browser writes it.
	req := map[string]any{"path": backup, "password": testPassword}
	start := func(path api.Route, req map[string]any) api.Task {
		t.Helper()
		var task api.Task
		if err := c.Call(ctx, path, req, &task); err != nil {
			t.Fatal(err)
		}
		done, err := a.tasks.Wait(waitCtx(t), task.ID)
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	prev := start(api.RouteImportPreview, req)
	var p portable.PreviewResult
	if err := json.Unmarshal(prev.Result, &p); prev.State != api.TaskSucceeded || err != nil || !p.OtherIdentity || p.ConflictTotal != 0 {
		t.Fatalf("preview: %+v %+v (%v)", prev, p, err)
	}
	req["confirm"] = true
	if refused := start(api.RouteImport, req); refused.State != api.TaskFailed || !strings.Contains(refused.Error, "two identities") {
		t.Fatalf("import of another identity: %+v", refused)
	}
	req["allowOtherIdentity"] = true
	if done := start(api.RouteImport, req); done.State != api.TaskSucceeded {
		t.Fatalf("import asked for: %+v", done)
	}
	var imported api.Overview
	if err := c.Call(ctx, api.RouteOverview, nil, &imported); err != nil || len(imported.Wallets[0].Identities) != 2 {
		t.Fatalf("overview after the import: %+v, %v", imported.Wallets, err)
	}
}

// TestAgent_Start_CleansAbandonedCopies: an upload or a server preview's staging wallet
// that nobody confirmed for more than a day is a stale copy of wallet data; the agent
// removes it at start and keeps the recent ones, which a person may still confirm.
func TestAgent_Start_CleansAbandonedCopies(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	dirs := []string{filepath.Join(string(e.opts.Dir), "uploads"), filepath.Join(string(e.opts.Dir), "server-staging")}
	old := time.Now().Add(-25 * time.Hour)
	var stale, fresh []string
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"stale", "fresh"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("rows"), 0o600); err != nil {
				t.Fatal(err)
			}
			if name == "stale" {
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
				stale = append(stale, p)
			} else {
				fresh = append(fresh, p)
			}
		}
	}
	launchAgent(t, e.opts)
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s, a day old, is still there: %v", p, err)
		}
	}
	for _, p := range fresh {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s, made just now, is gone: %v", p, err)
		}
	}
}
