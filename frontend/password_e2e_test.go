package frontend_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// TestDashboard_TestMyPassword: on Settings, a wrong password is told it does not open the
// newest backup and the right one that it does, the field is cleared after each try, the
// backup file is untouched, and the drill then says when the password was proven.
func TestDashboard_TestMyPassword(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	var listing api.BackupListing
	d.api(api.RouteBackups, nil, &listing, folderID)
	if len(listing.Files) != 1 {
		t.Fatalf("backups: %+v", listing)
	}
	file := filepath.Join(d.dir, "backups", listing.Files[0].Name)
	sum := fileSHA256(t, file)
	d.page("settings")
	try := func(password string) {
		d.do(chromedp.SendKeys(`input[name=test-password]`, password), chromedp.Click(byText("button", "Test my password")))
		d.waitFor(`document.querySelector('[data-testid=password-test] [data-opens]')`, "the password test's answer")
	}
	try("not my password")
	if got := eval[string](d, `document.querySelector('[data-testid=password-test] [data-opens]').dataset.opens`); got != "false" {
		t.Fatalf("a wrong password: opens=%s", got)
	}
	if got := d.text("[data-testid=password-test]"); !strings.HasPrefix(got, "It does not open. That password does not open ") {
		t.Errorf("a wrong password: %q", got)
	}
	if v := eval[string](d, `document.querySelector('input[name=test-password]').value`); v != "" {
		t.Errorf("the field keeps %q", v)
	}
	d.shot("wrong")
	try(backupPassword)
	if got := d.text("[data-testid=password-test]"); !strings.HasPrefix(got, "It opens. Your password opens ") {
		t.Errorf("the right password: %q", got)
	}
	d.shot("right")
	if fileSHA256(t, file) != sum {
		t.Error("the backup file changed")
	}
	d.do(chromedp.Click(byText("button", "Run the drill now")))
	d.waitFor(`document.querySelector('[data-testid=drill-status]')?.textContent.startsWith('Passed')`, "the drill's pass")
	if got := d.text("[data-testid=drill-status]"); !strings.Contains(got, "Your backup password was last proven just now (Test my password).") {
		t.Errorf("the drill line: %q", got)
	}
}
