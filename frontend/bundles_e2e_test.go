package frontend_test

import (
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
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
	var cfg agent.Config
	d.api(agent.RouteConfig, nil, &cfg)
	var dest agent.Destination
	for _, x := range cfg.Destinations {
		if x.ID == "snapshots" {
			dest = x
		}
	}
	if dest.Kind != agent.DestinationBundles || dest.Path != folder {
		t.Fatalf("the agent has %+v", dest)
	}

	var task agent.Task
	d.api(agent.RouteRun, nil, &task, "snapshots")
	if got := d.wait(task.ID); got.State != agent.TaskSucceeded || got.Kind != agent.KindBundle {
		t.Fatalf("bundle: %s %s %s", got.Kind, got.State, got.Error)
	}
	d.page("backups")
	d.waitFor(`document.querySelector('[data-destination=snapshots] .backups-table tbody tr')`, "the bundle")
	d.do(chromedp.Click(byText(`[data-destination=snapshots] .backups-table button`, "Verify now")))
	d.waitFor(`document.querySelector('[data-destination=snapshots] .backups-table tbody tr .badge')?.textContent === 'Verified'`, "the verified bundle")
	d.shot("bundle-verified")
	var listing agent.BackupListing
	d.api(agent.RouteBackups, nil, &listing, "snapshots")
	if len(listing.Files) == 0 || !listing.Files[0].Keep || listing.Files[0].Record == nil || listing.Files[0].Record.VerifiedAt.IsZero() {
		t.Errorf("the agent lists %+v", listing.Files)
	}
}
