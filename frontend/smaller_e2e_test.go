package frontend_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// TestDashboard_SmallerOnes: the overview shows each destination's path, shortened, whole
// on hover; adding a destination confirms, and scrolls to and focuses the new card; the
// Destinations page says which are paused and pauses or resumes them all; retention reads
// as sentences; a stale "Saved." or "not the same" goes once what it described changes;
// the overview's "Add a destination" opens the form.
func TestDashboard_SmallerOnes(t *testing.T) {
	d := newDash(t)
	d.waitFor(`document.querySelector('[data-destination=backup-folder] [data-testid=dest-path]')`, "the destination's path")
	folder := filepath.Join(d.dir, "backups")
	if got := eval[string](d, `document.querySelector('[data-destination=backup-folder] [data-testid=dest-path]').title`); got != folder {
		t.Errorf("the path's title is %q, want %q", got, folder)
	}
	if shown := d.text("[data-destination=backup-file] [data-testid=dest-path]"); !strings.HasPrefix(shown, "…/") || !strings.HasSuffix(shown, "backup-wallet.sqlite") {
		t.Errorf("the path shows as %q", shown)
	}

	d.page("destinations")
	d.waitFor(`document.querySelector('[data-testid=paused-header]')?.textContent.includes('Every destination is paused')`, "the paused header")
	d.do(chromedp.Click(byText("button", "Resume all")))
	d.waitFor(`!document.querySelector('[data-testid=paused-header] .notice')`, "the header gone after Resume all")
	d.do(chromedp.Click(byText("summary", "Pause all")), chromedp.Click(byText(`button`, "For 1 hour")))
	d.waitFor(`document.querySelector('[data-testid=paused-header]')?.textContent.includes('Every destination is paused')`, "the header after Pause all")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	for _, dest := range cfg.Destinations {
		if dest.Pause == nil || dest.Pause.Until.IsZero() {
			t.Errorf("%s: pause %+v after Pause all for an hour", dest.ID, dest.Pause)
		}
	}

	d.view(1280, 600, "light") // short enough that a new card starts below the fold
	d.addFolder("Cloud folder", filepath.Join(d.dir, "cloud"))
	d.waitFor(`document.querySelector('[data-destination=cloud-folder] [data-testid=added]')`, "the confirmation")
	if !eval[bool](d, `document.activeElement === document.querySelector('[data-destination=cloud-folder]')`) {
		t.Error("the new card does not have the focus")
	}
	if !eval[bool](d, `(() => { const r = document.querySelector('[data-destination=cloud-folder]').getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; })()`) {
		t.Error("the new card is not in view")
	}
	d.shot("added")

	d.page("settings")
	d.waitFor(`document.querySelector('[data-testid=retention]')`, "the retention rules")
	if got := d.text("[data-testid=retention]"); !strings.Contains(got, "Keep the newest") || !strings.Contains(got, "one a day for") || !strings.Contains(got, "one a week for") {
		t.Errorf("retention reads %q", got)
	}
	d.do(chromedp.Click(byText("button", "Save settings")))
	d.waitFor(`[...document.querySelectorAll('.notice.ok')].some((n) => n.textContent === 'Saved.')`, "Saved.")
	d.do(chromedp.SendKeys(chromedp.JSPath(`document.querySelector('[data-testid=retention] input')`), "2"))
	d.waitFor(`![...document.querySelectorAll('.notice.ok')].some((n) => n.textContent === 'Saved.')`, "Saved. to go")
	d.do(chromedp.SendKeys(chromedp.JSPath(`document.querySelectorAll('.password-pair input')[0]`), "orbit lantern quietly 42"),
		chromedp.SendKeys(chromedp.JSPath(`document.querySelectorAll('.password-pair input')[1]`), "orbit lantern"),
		chromedp.Click(byText("button", "Replace password")))
	d.waitFor(`[...document.querySelectorAll('.notice.error')].some((n) => n.textContent.includes('not the same'))`, "not the same")
	d.do(chromedp.SendKeys(chromedp.JSPath(`document.querySelectorAll('.password-pair input')[1]`), " quietly 42"))
	d.waitFor(`![...document.querySelectorAll('.notice.error')].some((n) => n.textContent.includes('not the same'))`, "not the same to go")

	// With no destination, the overview's link opens the form.
	for _, dest := range []string{fileID, folderID, "cloud-folder"} {
		d.api(api.RouteDestinationDelete, nil, nil, dest)
	}
	d.page("overview")
	d.waitFor(`document.querySelector('a[href="#/destinations/add"]')`, "the add link")
	// Clicked in the page's own turn: the overview redraws every second, and a click
	// that first looks the node up may find it replaced.
	d.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('a[href="#/destinations/add"]').click()`))
	d.waitFor(`document.querySelector('form.editor') && document.activeElement === document.querySelector('form.editor input[type=text]')`, "the form open, its name focused")
}
