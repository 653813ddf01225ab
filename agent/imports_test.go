package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/internal/importtest"
	"walletsync/localstore"
	"walletsync/portable"
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
	_, err2 := portable.ExportBRC39(ctx, v, settings, res.IdentityKey, testPassword, portable.DefaultKDFParams, backup, portable.ExportOptions{})
	v.Close()
	s.Close()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}

	// A merge of the other identity, asked for, stopped after two pages.
	importtest.HalfMerge(t, doc, e.wallet, filepath.Join(string(e.opts.Dir), "staging"), 2)

	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	var ov Overview
	if err := c.Call(ctx, RouteOverview, nil, &ov); err != nil {
		t.Fatal(err)
	}
	if ov.Healthy || !strings.HasPrefix(ov.Health, "Import in progress into") || ov.Wallets[0].ImportInProgress == nil {
		t.Fatalf("overview mid-merge: %q %+v", ov.Health, ov.Wallets)
	}
	if task := runAndWait(t, c, a, RouteRun, "file"); task.State != TaskFailed || !strings.Contains(task.Error, "import in progress: finish or abandon") {
		t.Fatalf("sync mid-merge: %+v", task)
	}
	var task Task
	if err := c.Call(ctx, RouteImportAbandon, AbandonRequest{}, &task); err != nil {
		t.Fatal(err)
	}
	if done, err := a.tasks.Wait(waitCtx(t), task.ID); err != nil || done.State != TaskSucceeded {
		t.Fatalf("abandon: %+v, %v", done, err)
	}
	var after Overview
	if err := c.Call(ctx, RouteOverview, nil, &after); err != nil || after.Wallets[0].ImportInProgress != nil || len(after.Wallets[0].Identities) != 1 {
		t.Fatalf("overview after abandon: %+v, %v", after.Wallets, err)
	}

	// A Secret never marshals its value, so the body is written as the browser writes it.
	req := map[string]any{"path": backup, "password": testPassword}
	start := func(path Route, req map[string]any) Task {
		t.Helper()
		var task Task
		if err := c.Call(ctx, path, req, &task); err != nil {
			t.Fatal(err)
		}
		done, err := a.tasks.Wait(waitCtx(t), task.ID)
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	prev := start(RouteImportPreview, req)
	var p portable.PreviewResult
	if err := json.Unmarshal(prev.Result, &p); prev.State != TaskSucceeded || err != nil || !p.OtherIdentity || p.ConflictTotal != 0 {
		t.Fatalf("preview: %+v %+v (%v)", prev, p, err)
	}
	req["confirm"] = true
	if refused := start(RouteImport, req); refused.State != TaskFailed || !strings.Contains(refused.Error, "two identities") {
		t.Fatalf("import of another identity: %+v", refused)
	}
	req["allowOtherIdentity"] = true
	if done := start(RouteImport, req); done.State != TaskSucceeded {
		t.Fatalf("import asked for: %+v", done)
	}
	var imported Overview
	if err := c.Call(ctx, RouteOverview, nil, &imported); err != nil || len(imported.Wallets[0].Identities) != 2 {
		t.Fatalf("overview after the import: %+v, %v", imported.Wallets, err)
	}
}
