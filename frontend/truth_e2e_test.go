package frontend_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
	"walletsync/syncer"
)

// runTask starts destination id's job through the API and waits for it to end.
func (d *dash) runTask(route api.Route, args ...string) api.Task {
	d.t.Helper()
	var task api.Task
	d.api(route, nil, &task, args...)
	return d.wait(task.ID)
}

// TestDashboard_DrillColumnReadsTheServer: after a drill proved the folder's backup good,
// the Overview's "Last restore drill" column says so (it read a field the agent never sent,
// and said "Not yet" forever).
func TestDashboard_DrillColumnReadsTheServer(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	if got := d.runTask(api.RouteDrill); got.State != api.TaskSucceeded {
		t.Fatalf("drill: %s %s", got.State, got.Error)
	}
	d.waitFor(`document.querySelector('[data-destination=backup-folder] [data-testid=drill-passed]')`, "the drill's pass on the overview")
	if got := d.text("[data-destination=backup-folder] [data-testid=drill-passed]"); got != "Passed just now" {
		t.Errorf("the drill column says %q", got)
	}
}

// TestDashboard_DrillWithoutBackupIsSkipped: a drill that found nothing to check is
// "Skipped" in Activity and in Settings, never a green "Done".
func TestDashboard_DrillWithoutBackupIsSkipped(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteDrill); got.State != api.TaskSucceeded {
		t.Fatalf("drill: %s %s", got.State, got.Error)
	}
	d.page("activity")
	d.waitFor(`document.querySelector('.task-row .badge')`, "the drill's row")
	if got := d.text(".task-row .badge"); got != "Skipped" {
		t.Errorf("the drill's badge reads %q, want Skipped", got)
	}
	d.page("settings")
	d.waitFor(`document.querySelector('[data-testid=drill-status]')?.textContent.startsWith('Skipped')`, "the drill line")
	if got := d.text("[data-testid=drill-status]"); !strings.Contains(got, "no backup file to check yet") {
		t.Errorf("the drill line says %q", got)
	}
}

// TestDashboard_HealthNamesTheDestination: the banner names the destination that never
// succeeded, with its path; and then the one that fails, with its path and what is wrong.
func TestDashboard_HealthNamesTheDestination(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, fileID); got.State != api.TaskSucceeded {
		t.Fatalf("sync: %s %s", got.State, got.Error)
	}
	d.api(api.RouteResume, nil, nil, fileID)
	folder := filepath.Join(d.dir, "backups")
	d.waitFor(`document.querySelector('[data-testid=health]')?.textContent.includes('1 of 2 destinations')`, "the banner after one backup")
	if got := d.text("[data-testid=health]"); !strings.Contains(got, "1 of 2 destinations") || !strings.Contains(got, "Backup folder ("+folder+") has never completed a backup") {
		t.Errorf("the banner says %q", got)
	}
	if !eval[bool](d, `document.querySelector('.health-card').classList.contains('warn')`) {
		t.Error("the banner is not a warning")
	}

	// A file where the folder should be: every backup there fails.
	if err := os.WriteFile(folder, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskFailed {
		t.Fatalf("backup into a file: %s", got.State)
	}
	d.waitFor(`document.querySelector('[data-testid=health]')?.textContent.includes('failing')`, "the failure in the banner")
	d.shot("failing")
	if got := d.text("[data-testid=health]"); !strings.Contains(got, "Backups to Backup folder ("+folder+") are failing") {
		t.Errorf("the banner says %q", got)
	}
}

// TestDashboard_AgentStoppedSaysSo: with the agent gone, the page says plainly that it is
// not running, what that means, and the command that starts it; it comes back by itself.
func TestDashboard_AgentStoppedSaysSo(t *testing.T) {
	d := newDash(t)
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the live event stream")
	d.stopAgent()
	d.waitFor(`!document.getElementById('agent-down').hidden`, "the agent-down message")
	d.shot("agent-down")
	msg := d.text("#agent-down")
	for _, want := range []string{"not running", "nothing is backed up", "walletsync agent --data-dir " + string(d.data)} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q: %q", want, msg)
		}
	}
	if !eval[bool](d, `document.getElementById('main').hidden`) {
		t.Error("the page still shows what it loaded before the agent stopped")
	}
	d.startAgent()
	d.waitFor(`document.getElementById('agent-down').hidden && !document.getElementById('main').hidden`, "the page back")
}

// TestDashboard_CancelBackupSaysWhatHappens: a cancelled backup file says that the partial
// file was discarded and the next run starts over, not that it "continues from there".
func TestDashboard_CancelBackupSaysWhatHappens(t *testing.T) {
	d := newDash(t)
	d.page("destinations")
	d.do(chromedp.Click(byText(`[data-destination=backup-folder] button`, "Run now")))
	d.waitFor(`document.querySelector('[data-destination=backup-folder] .task-panel[data-state=running]')`, "the backup running")
	d.do(chromedp.Click(byText(`[data-destination=backup-folder] .task-panel button`, "Cancel")))
	d.waitFor(`document.querySelector('[data-destination=backup-folder] .task-panel[data-state=cancelled]')`, "the cancelled state")
	line := d.text("[data-destination=backup-folder] .state-line")
	if strings.Contains(line, "continues from there") || !strings.Contains(line, "discarded") || !strings.Contains(line, "from the start") {
		t.Errorf("the cancelled backup says %q", line)
	}
	left, _ := filepath.Glob(filepath.Join(d.dir, "backups", ".walletsync-*.tmp-*"))
	if len(left) > 0 {
		t.Errorf("the cancel left %v", left)
	}
}

// syncResult decodes a sync task's result.
func syncResult(t *testing.T, task api.Task) api.SyncResult {
	t.Helper()
	var res api.SyncResult
	if err := json.Unmarshal(task.Result, &res); err != nil || len(res.Sessions) == 0 {
		t.Fatalf("sync result %s: %v", task.Result, err)
	}
	return res
}

// resumedFromCheckpoint reports whether the sync task's last session continued at the
// checkpoint a cancelled run left: what "the next run continues from there" promises.
func resumedFromCheckpoint(t *testing.T, task api.Task) bool {
	t.Helper()
	res := syncResult(t, task)
	return res.Sessions[len(res.Sessions)-1].Resumed == syncer.ResumeCheckpoint
}
