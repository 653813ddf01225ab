package frontend_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
)

// TestDashboard_LateDestinationTurnsRed: once the agent's clock passes the backup folder's
// hourly schedule by more than its margin, the overview turns red (the header, the health
// card and the folder's row, which says "Late" and the fix), while the backup wallet that
// was never backed up (paused) stays amber, in another colour; the Destinations page says it too.
func TestDashboard_LateDestinationTurnsRed(t *testing.T) {
	var ahead atomic.Int64
	d := newDash(t, func(o *agent.Options) {
		o.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	d.waitFor(`document.querySelector('[data-destination=backup-folder] [data-testid=last-success]')?.textContent.startsWith('just now')`, "the folder backed up")
	if got := eval[string](d, `document.querySelector('.health-card').dataset.health`); got != "warn" {
		t.Fatalf("before: the health card is %q, want warn (the backup wallet never ran)", got)
	}

	ahead.Store(int64(3 * time.Hour))
	d.do(chromedp.Reload())
	d.waitFor(`document.querySelector('main[data-page=overview] .health-card.alert')`, "the red health card")
	d.shot("late")
	if got := d.text("[data-testid=health]"); !strings.HasPrefix(got, "Backups to Backup folder (") || !strings.Contains(got, "are late: the last good backup was 3 hours ago") ||
		!strings.Contains(got, "walletsync resume backup-folder") {
		t.Errorf("health: %q", got)
	}
	if !eval[bool](d, `document.getElementById('health').classList.contains('alert')`) {
		t.Errorf("the header's health is not red: %q", eval[string](d, `document.getElementById('health').className`))
	}
	if got := d.text("tr.alert[data-destination=backup-folder] [data-alert=late]"); !strings.HasPrefix(got, "Late") || !strings.Contains(got, "It is paused: resume it") {
		t.Errorf("the folder's status: %q", got)
	}
	if got := d.text("tr[data-destination=backup-file] [data-testid=last-success]"); got != "Not backed up here yet" ||
		eval[bool](d, `document.querySelector('tr[data-destination=backup-file]').classList.contains('alert')`) {
		t.Errorf("the never-run backup wallet: %q, or red", got)
	}
	if color := eval[string](d, `getComputedStyle(document.querySelector('tr[data-destination=backup-folder] [data-alert] .badge')).color`); color == eval[string](d, `getComputedStyle(document.querySelector('tr[data-destination=backup-file] .badge')).color`) {
		t.Errorf("late and not-yet badges share the colour %s", color)
	}

	d.page("destinations")
	d.waitFor(`document.querySelector('[data-destination=backup-folder] .notice.error')`, "the late notice on Destinations")
	if got := d.text("[data-destination=backup-folder] .notice.error"); !strings.HasPrefix(got, "Late since") {
		t.Errorf("Destinations says %q", got)
	}
}
