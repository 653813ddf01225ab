package frontend_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// typeInto replaces an input's text as a person does, firing input and change.
func typeInto(css, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector(` + jsString(css) + `);
		e.value = ` + jsString(text) + `; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); })()`)
}

// addFolder fills the destination editor for a new backup folder and asks to add it.
func (d *dash) addFolder(name, path string) {
	d.t.Helper()
	d.do(chromedp.Click(byText("button", "Add a destination")))
	d.waitFor(`document.querySelector('form.editor')`, "the editor")
	d.do(chromedp.SendKeys(chromedp.CSS(`form.editor input[type=text]`), name),
		chromedp.Click(chromedp.CSS(`form.editor input[value=folder]`)),
		typeInto(`form.editor input.mono`, path),
		chromedp.Click(byText(`form.editor button`, "Add destination")))
}

// TestDashboard_PathsCheckedWhereTyped: a wrong path is named at the step where it is
// typed, with what is wrong; what was typed stays; and the restore wizard's Back keeps the
// password.
func TestDashboard_PathsCheckedWhereTyped(t *testing.T) {
	d := newDash(t)
	problem := `document.querySelector('form.editor [data-testid=path-problem]')?.textContent ?? ''`
	d.page("destinations")
	d.addFolder("USB disk", "relative/backups")
	d.waitFor(problem+`.includes('relative/backups is not a full path')`, "the relative path's problem")
	d.shot("relative-path")
	if got := eval[string](d, `document.querySelector('form.editor input.mono').value`); got != "relative/backups" {
		t.Errorf("the path field holds %q after the check", got)
	}
	missing := filepath.Join(d.dir, "unplugged")
	d.do(typeInto(`form.editor input.mono`, filepath.Join(missing, "backups")))
	d.waitFor(problem+`.includes('The folder `+missing+` does not exist')`, "the missing folder's problem")
	d.do(chromedp.Click(chromedp.CSS(`form.editor input[value=sqlite]`)), typeInto(`form.editor input.mono`, d.wallet))
	d.waitFor(problem+`.includes('is the wallet itself')`, "the wallet itself refused")
	d.do(chromedp.Click(byText(`form.editor button`, "Add destination")))
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if len(cfg.Destinations) != 2 {
		t.Errorf("a wrong path was saved: %+v", cfg.Destinations)
	}

	// The restore wizard: a missing file is named at the file step.
	d.page("restore")
	gone := filepath.Join(d.dir, "gone.brc39")
	d.do(typeInto(`.wizard input[name=path]`, gone), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.waitFor(`document.querySelector('.wizard [data-testid=path-problem]')?.textContent.includes('`+gone+` does not exist')`, "the missing file at its step")
	// "Restore into" defaults to a new file beside the wallet, and an existing file is
	// named before the file is checked.
	d.do(typeInto(`.wizard input[name=path]`, backupFile), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.waitFor(`document.querySelector('.wizard input[type=password]')`, "the password step")
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[value=restore]`)))
	into := eval[string](d, `document.querySelector('.wizard input[name=restore-into]').value`)
	if filepath.Dir(into) != filepath.Dir(d.wallet) || into == d.wallet || !strings.HasPrefix(filepath.Base(into), "wallet-restored-") {
		t.Errorf("restore into defaults to %q", into)
	}
	d.do(typeInto(`.wizard input[name=restore-into]`, d.wallet), chromedp.SendKeys(chromedp.CSS(`.wizard input[type=password]`), backupFilePassword),
		chromedp.Click(byText(`.wizard button`, "Check the file")))
	d.waitFor(`document.querySelector('.wizard [data-testid=path-problem]')?.textContent.includes('is the wallet itself')`, "the wallet refused as a restore target")
	d.shot("path-error")
	if got := eval[string](d, `document.querySelector('.wizard input[type=password]').value`); got != backupFilePassword {
		t.Error("the refused path cleared the password")
	}

	// Back from the preview keeps the password.
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[value=merge]`)), chromedp.Click(byText(`.wizard button`, "Check the file")))
	d.waitFor(`document.querySelector('[data-testid=import-preview]')`, "the preview")
	d.do(chromedp.Click(byText(`.wizard button`, "Back")))
	d.waitFor(`document.querySelector('.wizard input[type=password]')`, "the password step again")
	if got := eval[string](d, `document.querySelector('.wizard input[type=password]').value`); got != backupFilePassword {
		t.Error("Back cleared the password")
	}
}

// TestDashboard_RestoreFromBackupWalletLeadsSomewhere: a backup wallet file destination is
// offered in the restore wizard, with the preview of a backup file; the restore goes to a
// new file beside the wallet, which is then shown, and made the protected wallet on request.
func TestDashboard_RestoreFromBackupWalletLeadsSomewhere(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, fileID); got.State != api.TaskSucceeded {
		t.Fatalf("sync: %s %s", got.State, got.Error)
	}
	before := d.walletState()
	d.page("restore")
	d.waitFor(`document.querySelector('[data-testid=backup-wallet-sources] button')`, "the backup wallet offered")
	d.do(chromedp.Click(byText(`[data-testid=backup-wallet-sources] button`, "Use Backup wallet")))
	d.waitFor(`document.querySelector('.wizard input[value=restore]')`, "the how step")
	if eval[bool](d, `!!document.querySelector('.wizard input[type=password]')`) {
		t.Error("a backup wallet file asks for a password")
	}
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[value=restore]`)))
	into := eval[string](d, `document.querySelector('.wizard input[name=restore-into]').value`)
	d.do(chromedp.Click(byText(`.wizard button`, "Check the file")))
	d.waitFor(`document.querySelector('[data-testid=import-preview]')`, "the preview")
	d.shot("backup-wallet-preview")
	if got := eval[int](d, `document.querySelectorAll('.preview-table tbody tr').length`); got < 5 {
		t.Errorf("the preview lists %d tables", got)
	}
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=import-preview] input[type=checkbox]`)), chromedp.Click(byText(`.wizard button`, "Restore now")))
	d.waitFor(`document.querySelector('[data-testid=restored-wallet]')`, "the restored wallet")
	d.shot("restored")
	if got := d.text("[data-testid=restored-path]"); got != into {
		t.Errorf("the page shows %q restored, the restore went to %q", got, into)
	}
	if d.walletState() != before {
		t.Error("the restore changed the wallet")
	}
	d.do(chromedp.Click(byText(`[data-testid=restore-next] button`, "Make it the wallet walletsync protects")))
	d.waitFor(`document.querySelector('dialog[open]')`, "the question")
	d.do(chromedp.Click(byText(`dialog button`, "Protect it")))
	d.waitFor(`document.querySelector('[data-testid=restore-next] .notice.ok')`, "the change")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != into {
		t.Errorf("the agent protects %+v, want %s", cfg.Wallets, into)
	}
}
