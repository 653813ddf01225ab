package frontend_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/testkit/importtest"
)

// otherIdentityWallet seeds, in dir, a small wallet of another identity than the template's
// and returns its path and identity.
func otherIdentityWallet(t *testing.T, dir string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, "other-identity.sqlite")
	res, err := seedWallet(path, localstore.FixtureSmall, localstore.SeedOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return path, res.IdentityKey
}

// TestDashboard_OtherIdentityNeedsItsOwnYes: the restore wizard's preview of another
// identity's backup says so, and the import button waits for a box of its own.
func TestDashboard_OtherIdentityNeedsItsOwnYes(t *testing.T) {
	d := newDash(t)
	src, identity := otherIdentityWallet(t, d.dir)
	file := filepath.Join(d.dir, "other-identity.brc39")
	if err := exportWallet(src, identity, file, backupFilePassword); err != nil {
		t.Fatal(err)
	}
	before := d.walletState()

	d.page("restore")
	d.do(chromedp.SetValue(chromedp.CSS(`.wizard input[name=path]`), file), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.checkFile(backupFilePassword)
	d.waitFor(`document.querySelector('[data-testid=preview-other-identity]')`, "the other identity's notice")
	d.shot("other-identity")
	if msg := d.text("[data-testid=preview-other-identity]"); !strings.Contains(msg, "This file holds another identity") {
		t.Errorf("the notice says %q", msg)
	}
	submit := `document.querySelector('[data-testid=import-preview] button[type=submit]').disabled`
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=import-preview] input[aria-describedby=nothing-yet]`)))
	if !eval[bool](d, submit) {
		t.Error("the import button works before the other identity is said yes to")
	}
	if d.walletState() != before {
		t.Error("the wallet changed before the import was confirmed")
	}
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=allow-other-identity]`)))
	if eval[bool](d, submit) {
		t.Fatal("the import button stays disabled with both boxes ticked")
	}
	d.do(chromedp.Click(byText(`.wizard button`, "Import now")))
	d.waitFor(`document.querySelector('[data-testid=import-result]')`, "the import's result")
	if task := d.newestTask(api.KindImport, ""); task.State != api.TaskSucceeded {
		t.Fatalf("import %s: %s", task.State, task.Error)
	}
	var ov api.Overview
	d.api(api.RouteOverview, nil, &ov)
	if len(ov.Wallets[0].Identities) != 2 {
		t.Fatalf("identities after the import: %+v", ov.Wallets[0].Identities)
	}
}

// TestDashboard_AbandonAnUnfinishedImport: a merge that stopped half-way shows on the
// overview and on the Restore page, whose button abandons it; the wallet then holds what it
// held before.
func TestDashboard_AbandonAnUnfinishedImport(t *testing.T) {
	d := newDash(t)
	var ov api.Overview
	d.api(api.RouteOverview, nil, &ov)
	counts := ov.Wallets[0].Identities[0].Counts

	// Stop the agent, stop a merge of another identity after two pages, start it again.
	d.stopAgent()
	ctx := context.Background()
	src, identity := otherIdentityWallet(t, d.dir)
	s, err := localstore.Open(ctx, src, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := s.Settings(ctx)
	v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(d.dir, "other-identity.json")
	_, err = portable.ExportBRC38(ctx, v, settings, identity, doc, portable.ExportOptions{})
	v.Close()
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	importtest.HalfMerge(t, doc, d.wallet, filepath.Join(string(d.data), "staging"), 2)
	d.startAgent()
	d.login()
	if health := d.text("[data-testid=health]"); !strings.Contains(health, "Import in progress") {
		t.Errorf("the overview says %q", health)
	}

	d.page("restore")
	d.waitFor(`document.querySelector('[data-testid=import-unfinished]')`, "the unfinished import's notice")
	d.shot("import-unfinished")
	d.do(chromedp.Click(byText(`[data-testid=import-unfinished] button`, "Abandon that import")))
	d.waitFor(`document.querySelector('[data-testid=import-unfinished] .notice.ok')`, "the abandon's result")
	if task := d.newestTask(api.KindImportAbandon, ""); task.State != api.TaskSucceeded {
		t.Fatalf("abandon %s: %s", task.State, task.Error)
	}
	var after api.Overview
	d.api(api.RouteOverview, nil, &after)
	w := after.Wallets[0]
	if w.ImportInProgress != nil || len(w.Identities) != 1 {
		t.Fatalf("after the abandon: %+v", w)
	}
	for table, n := range counts {
		if w.Identities[0].Counts[table] != n {
			t.Errorf("%s: %d rows after the abandon, %d before the import", table, w.Identities[0].Counts[table], n)
		}
	}
}
