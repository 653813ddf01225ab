package frontend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/testkit/compare"
)

// TestDashboard_BundleFolder adds a snapshot bundle folder through the destination editor,
// runs it, and finds the bundle on the Backups page beside the backup files, where
// "Verify now" verifies it without a password.
func TestDashboard_BundleFolder(t *testing.T) {
	d := newDash(t)
	folder := filepath.Join(d.dir, "bundles")
	d.page("destinations")
	d.do(chromedp.Click(byText("button", "Add a destination")))
	d.waitFor(`document.querySelector('form.editor')`, "the editor")
	d.do(chromedp.SendKeys(chromedp.CSS(`form.editor input[type=text]`), "Snapshots"),
		chromedp.Click(chromedp.CSS(`form.editor input[value=bundles]`)),
		chromedp.SendKeys(chromedp.CSS(`form.editor input.mono`), folder),
		chromedp.Click(byText(`form.editor button`, "Add destination")))
	d.waitFor(`document.querySelector('[data-destination=snapshots]')`, "the new destination")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	var dest api.Destination
	for _, x := range cfg.Destinations {
		if x.ID == "snapshots" {
			dest = x
		}
	}
	if dest.Kind != api.DestinationBundles || dest.Path != folder {
		t.Fatalf("the agent has %+v", dest)
	}

	var task api.Task
	d.api(api.RouteRun, nil, &task, "snapshots")
	if got := d.wait(task.ID); got.State != api.TaskSucceeded || got.Kind != api.KindBundle {
		t.Fatalf("bundle: %s %s %s", got.Kind, got.State, got.Error)
	}
	d.page("backups")
	d.waitFor(`document.querySelector('[data-destination=snapshots] .backups-table tbody tr')`, "the bundle")
	d.do(chromedp.Click(byText(`[data-destination=snapshots] .backups-table button`, "Verify now")))
	d.waitFor(`document.querySelector('[data-destination=snapshots] .backups-table tbody tr .badge')?.textContent === 'Verified'`, "the verified bundle")
	d.shot("bundle-verified")
	var listing api.BackupListing
	d.api(api.RouteBackups, nil, &listing, "snapshots")
	if len(listing.Files) == 0 || !listing.Files[0].Keep || listing.Files[0].Record == nil || listing.Files[0].Record.VerifiedAt.IsZero() {
		t.Errorf("the agent lists %+v", listing.Files)
	}
}

// TestDashboard_BundleRestore restores a snapshot bundle through the Restore page: the
// person picks it in its bundle folder, sees its manifest and the verify result while the
// wallet is still untouched, confirms, and the agent (which had the wallet open) replaces
// the wallet with the bundle's copy and opens it again.
func TestDashboard_BundleRestore(t *testing.T) {
	d := newDash(t)
	ctx := context.Background()
	source := filepath.Join(d.dir, "source.sqlite")
	if _, err := seedWallet(source, localstore.FixtureSmall, localstore.SeedOptions{Seed: 3, IdentityKey: localstore.FixtureIdentity(2)}); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(d.dir, "bundles")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	name := agent.BundleName(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	src, err := localstore.Open(ctx, source, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bundle.Create(ctx, src, filepath.Join(folder, name), bundle.CreateOptions{})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := compare.Digests(t, source)
	var cfg api.Config
	d.api(api.RouteDestinationAdd, api.Destination{ID: "snapshots", Name: "Snapshots", Kind: api.DestinationBundles, Path: folder,
		Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}}, &cfg)
	// A sync first: the agent has the wallet open when the restore comes.
	var task api.Task
	d.api(api.RouteRun, nil, &task, fileID)
	if got := d.wait(task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("sync: %s %s", got.State, got.Error)
	}
	before := compare.Digests(t, d.wallet)

	d.page("restore")
	row := fmt.Sprintf(`[data-testid=bundle-restore] [data-bundle=%q]`, name)
	d.waitFor(fmt.Sprintf(`document.querySelector('%s button')`, row), "the bundle in its folder")
	d.do(chromedp.Click(chromedp.CSS(row + " button")))
	d.waitFor(`document.querySelector('[data-testid=bundle-preview]')`, "the bundle's manifest")
	if got := d.text(`[data-testid=bundle-chain]`); got != "Test network" {
		t.Errorf("the manifest's network: %q", got)
	}
	if got := d.text(`[data-testid=bundle-identities]`); !strings.Contains(got, localstore.FixtureIdentity(2)[:8]) {
		t.Errorf("the manifest's identities: %q", got)
	}
	if n := eval[int](d, `document.querySelectorAll('[data-testid=bundle-manifest] tbody tr').length`); n < 10 {
		t.Errorf("the manifest shows %d tables", n)
	}
	if got := d.text(`[data-testid=bundle-preview] .notice.ok`); !strings.HasPrefix(got, "Verified.") {
		t.Errorf("the verify result: %q", got)
	}
	d.shot("bundle-preview")
	compare.Same(t, "the wallet at the preview", compare.Digests(t, d.wallet), before)

	d.do(chromedp.Click(chromedp.CSS(`[data-testid=bundle-ack]`)),
		chromedp.Click(byText(`[data-testid=bundle-preview] button`, "Restore now")))
	d.waitFor(`document.querySelector('dialog[open]')`, "the confirm dialog")
	d.do(chromedp.Click(chromedp.CSS(`dialog[open] button[value=ok]`)))
	d.waitFor(`document.querySelector('[data-testid=bundle-restored]') || document.querySelector('[data-testid=bundle-restore] .notice.error')`, "the restore's end")
	d.shot("bundle-restored")
	if got := d.text(`[data-testid=bundle-restored] .notice`); !strings.HasPrefix(got, "Restored.") {
		t.Fatalf("the page after the restore: %q / %q", got, d.text(`[data-testid=bundle-restore] .notice.error`))
	}
	compare.Same(t, "the restored wallet", compare.Digests(t, d.wallet), want)

	// The agent opened the restored wallet again: a sync runs on it.
	d.api(api.RouteRun, nil, &task, fileID)
	if got := d.wait(task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("sync after the restore: %s %s", got.State, got.Error)
	}
}
