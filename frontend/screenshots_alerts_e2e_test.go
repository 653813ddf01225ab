package frontend_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
)

// TestScreenshots_AlertsAndKit photographs, in light and dark at 1280x800, a late
// destination in red on the overview, "Test my password" answering, and the recovery
// kit. With -screenshots DIR it writes them there, for the docs:
//
//	go test ./frontend -run TestScreenshots -args -screenshots "$PWD/docs/screenshots"
func TestScreenshots_AlertsAndKit(t *testing.T) {
	var ahead atomic.Int64
	d := newDash(t, func(o *agent.Options) {
		o.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	dir := d.screenshots()
	shots := func(name string) {
		for _, scheme := range []string{"light", "dark"} {
			d.view(1280, 800, scheme)
			d.shotTo(dir, name+"-"+scheme+"-1280x800")
		}
	}
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	if got := d.runTask(api.RouteRun, fileID); got.State != api.TaskSucceeded {
		t.Fatalf("sync: %s %s", got.State, got.Error)
	}
	ahead.Store(int64(3 * time.Hour))
	d.do(chromedp.Reload())
	d.waitFor(`document.querySelector('main[data-page=overview] .health-card.alert')`, "the red health card")
	shots("late-destination")

	d.page("settings")
	d.do(chromedp.SendKeys(`input[name=test-password]`, backupPassword), chromedp.Click(byText("button", "Test my password")))
	d.waitFor(`document.querySelector('[data-testid=password-test] [data-opens=true]')`, "the password test's answer")
	d.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=password-test]').scrollIntoView({block: 'center'})`))
	shots("test-my-password")

	d.do(chromedp.Click(`[data-testid=kit-link]`))
	d.waitFor(`document.querySelector('main[data-page=kit] [data-testid=kit-identity]')`, "the kit")
	shots("recovery-kit")
}
