package frontend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// TestScreenshots_States photographs the states a person must be able to trust, in light
// and dark at 1280x800: a long sync in progress with its percentage and time left, the
// restore preview of a backup wallet file, a path refused at its step, a failing
// destination named in the banner, and the agent stopped. With -screenshots DIR it writes
// them there, for the README:
//
//	go test ./frontend -run TestScreenshots -args -screenshots "$PWD/docs/screenshots"
func TestScreenshots_States(t *testing.T) {
	d := newDash(t, smallPages)
	dir := d.screenshots()
	shots := func(name string) {
		for _, scheme := range []string{"light", "dark"} {
			d.view(1280, 800, scheme)
			d.shotTo(dir, name+"-"+scheme+"-1280x800")
		}
	}

	d.page("destinations")
	d.do(chromedp.Click(byText(`[data-destination=backup-file] button`, "Run now")))
	panel := `[data-destination=backup-file] .task-panel`
	d.waitFor(`[...document.querySelectorAll('`+panel+` .stats dd')].some((e) => e.textContent.startsWith('about '))`, "a time left")
	d.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + panel + `').scrollIntoView({block: 'center'})`))
	shots("sync-progress")
	d.do(chromedp.Click(byText(panel+` button`, "Cancel")))
	d.waitFor(`document.querySelector('`+panel+`[data-state=cancelled]')`, "the cancel")

	// The rest of the copy at full page size, from the checkpoint.
	d.stopAgent()
	d.tweaks = nil
	d.startAgent()
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the page back")
	if got := d.runTask(api.RouteRun, fileID); got.State != api.TaskSucceeded {
		t.Fatalf("sync: %s %s", got.State, got.Error)
	}
	d.page("restore")
	d.do(chromedp.Click(byText(`[data-testid=backup-wallet-sources] button`, "Use Backup wallet")))
	d.waitFor(`document.querySelector('.wizard input[value=restore]')`, "the how step")
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[value=restore]`)), chromedp.Click(byText(`.wizard button`, "Check the file")))
	d.waitFor(`document.querySelector('[data-testid=import-preview]')`, "the preview")
	shots("restore-backup-wallet-preview")

	d.page("destinations")
	d.addFolder("USB disk", "usb/backups")
	d.waitFor(`document.querySelector('form.editor [data-testid=path-problem] .notice')`, "the path's problem")
	shots("path-error")

	if err := os.WriteFile(filepath.Join(d.dir, "backups"), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskFailed {
		t.Fatalf("backup into a file: %s", got.State)
	}
	d.page("overview")
	d.waitFor(`document.querySelector('[data-testid=health]')?.textContent.includes('failing')`, "the failure in the banner")
	shots("banner-failing")

	d.stopAgent()
	d.waitFor(`!document.getElementById('agent-down').hidden`, "the agent-down message")
	shots("agent-stopped")
}

// TestScreenshots_SignIn photographs the sign-in page a browser without the cookie gets,
// and the one a used link gets, in light and dark at 1280x800.
func TestScreenshots_SignIn(t *testing.T) {
	d := newDash(t)
	dir := d.screenshots()
	used := d.agent.LoginURL()
	d.do(chromedp.Navigate(used))
	d.waitFor(`document.querySelector('main[data-page=overview] [data-testid=health]')`, "the overview")
	d.forgetCookies()
	for _, shot := range []struct{ name, url string }{{"signin", d.agent.URL() + "/"}, {"signin-link-used", used}} {
		d.do(chromedp.Navigate(shot.url))
		d.signInPage()
		for _, scheme := range []string{"light", "dark"} {
			d.view(1280, 800, scheme)
			d.shotTo(dir, shot.name+"-"+scheme+"-1280x800")
		}
	}
}
