package frontend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// problemText returns the message, the hint and the technical details of the first error
// box under css.
func (d *dash) problemText(css string) (message, hint, details string) {
	d.t.Helper()
	parts := eval[[]string](d, `(() => { const b = document.querySelector(`+jsString(css+" .notice.error")+`);
		return [b?.querySelector('p')?.textContent ?? '', b?.querySelector('.hint')?.textContent ?? '', b?.querySelector('details code')?.textContent ?? '']; })()`)
	return parts[0], parts[1], parts[2]
}

func jsString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
}

// TestDashboard_ErrorsInWords: a backup wallet file that is not a database and a "backup"
// that is not a BRC-39 file each read in plain words that name the path and the next step
// (the backup file's with the technical text behind "Details"); a machine without a service manager gets an
// explanation, not a red box.
func TestDashboard_ErrorsInWords(t *testing.T) {
	d := newDash(t)
	notADB := filepath.Join(d.dir, "backup-wallet.sqlite")
	if err := os.WriteFile(notADB, []byte("these are my notes, not a database at all, long enough for SQLite to look"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := d.runTask(api.RouteRun, fileID); got.State != api.TaskFailed {
		t.Fatalf("sync into a text file: %s", got.State)
	}
	d.page("destinations")
	d.waitFor(`document.querySelector('[data-destination=backup-file] .notice.error')`, "the destination's error")
	msg, hint, details := d.problemText("[data-destination=backup-file]")
	if !strings.Contains(msg, notADB+" is not a wallet file") || strings.Contains(msg, "(26)") {
		t.Errorf("the message says %q", msg)
	}
	// The run refuses the file when it checks the place, before SQLite opens it, so there is
	// no driver error to put behind Details.
	if !strings.Contains(hint, "Choose a new file name") || strings.Contains(hint, "check that the folder exists") {
		t.Errorf("the hint says %q", hint)
	}
	if details != "" {
		t.Errorf("the details say %q, want none: nothing was opened", details)
	}
	d.shot("not-a-wallet")

	// A wallet file offered as a backup file: its first bytes are SQLite's, not "WDAT". It is
	// refused at the path step, before any password is asked for.
	d.page("restore")
	d.do(chromedp.SetValue(chromedp.CSS(`.wizard input[name=path]`), d.wallet), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.waitFor(`document.querySelector('.wizard [data-testid=path-problem] .notice')`, "the path's problem")
	msg = d.text(".wizard [data-testid=path-problem] .notice p")
	hint = d.text(".wizard [data-testid=path-problem] .notice .hint")
	if !strings.Contains(msg, d.wallet+" is a wallet (SQLite database), not a backup file") || strings.Contains(msg, "WDAT") {
		t.Errorf("the message says %q", msg)
	}
	if !strings.Contains(hint, ".brc39") {
		t.Errorf("the hint says %q", hint)
	}
	if eval[bool](d, `!!document.querySelector('.wizard input[type=password]')`) {
		t.Error("the wizard asked for the password of a wallet file")
	}

	var svc api.ServiceInfo
	d.api(api.RouteService, nil, &svc)
	if svc.Status == api.ServiceUnavailable {
		d.page("settings")
		d.waitFor(`document.querySelector('[data-testid=service-note]')`, "the service's explanation")
		if eval[bool](d, `!!document.querySelector('[aria-labelledby=svc-title] .notice.error')`) {
			t.Error("a machine without a service manager shows a red error")
		}
		if note := d.text("[data-testid=service-note]"); !strings.Contains(note, "walletsync agent") {
			t.Errorf("the note says %q", note)
		}
	}
}
