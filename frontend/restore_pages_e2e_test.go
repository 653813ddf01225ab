package frontend_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboard_RestoreRefusesAWalletAsBackupFile: a wallet .sqlite typed as the backup
// file is refused at the path step, in words, before the password is asked for.
func TestDashboard_RestoreRefusesAWalletAsBackupFile(t *testing.T) {
	d := newDash(t)
	d.page("restore")
	d.do(typeInto(`.wizard input[name=path]`, d.wallet), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.waitFor(`document.querySelector('.wizard [data-testid=path-problem]')?.textContent.includes(`+
		jsString(d.wallet+" is a wallet (SQLite database), not a backup file")+`)`, "the wallet refused as a backup file")
	if eval[bool](d, `!!document.querySelector('.wizard input[type=password]')`) {
		t.Error("the wizard asked for the password of a wallet file")
	}
}

// TestDashboard_ExportSuggestsBRC39Names: the export wizard suggests wallet-YYYY-MM-DD.brc39
// beside the wallet, offers a .brc39 name for a folder or a name without it, and refuses
// the backup wallet file and the wallet as its target at the path step, naming the path
// and the reason.
func TestDashboard_ExportSuggestsBRC39Names(t *testing.T) {
	d := newDash(t)
	backupWallet := filepath.Join(d.dir, "backup-wallet.sqlite") // the "Backup wallet" destination's file
	copyFile(t, d.wallet, backupWallet)
	d.page("export")
	d.do(chromedp.Click(byText(`.wizard button`, "Next")))
	d.waitFor(`document.querySelector('.wizard input[name=path]')`, "the where step")
	day := time.Now().UTC().Format("2006-01-02")
	want := filepath.Join(d.dir, "wallet-"+day+".brc39")
	if got := eval[string](d, `document.querySelector('.wizard input[name=path]').value`); got != want {
		t.Errorf("the export suggests %q, want %q", got, want)
	}

	next := chromedp.Click(byText(`.wizard button`, "Next"))
	offer := `document.querySelector('[data-testid=use-brc39-name]')?.textContent ?? ''`
	d.do(typeInto(`.wizard input[name=path]`, d.dir), next)
	d.waitFor(offer+` === `+jsString("Use "+want), "a name offered in the folder")
	d.do(typeInto(`.wizard input[name=path]`, filepath.Join(d.dir, "mine")), next)
	d.waitFor(offer+` === `+jsString("Use "+filepath.Join(d.dir, "mine.brc39")), "the .brc39 name offered")
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=use-brc39-name]`)))
	if got := eval[string](d, `document.querySelector('.wizard input[name=path]').value`); got != filepath.Join(d.dir, "mine.brc39") {
		t.Errorf("the offer put %q in the path field", got)
	}

	problem := `document.querySelector('.wizard [data-testid=path-problem]')?.textContent ?? ''`
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[name=overwrite]`)))
	for _, tt := range []struct{ path, reason string }{
		{backupWallet, backupWallet + ` is the backup wallet file of the destination "Backup wallet"`},
		{d.wallet, d.wallet + " is the wallet itself"},
	} {
		d.do(typeInto(`.wizard input[name=path]`, tt.path), next)
		d.waitFor(problem+`.includes(`+jsString(tt.reason)+`)`, "the refusal of "+tt.path)
		if eval[bool](d, `!!document.querySelector('.password-pair')`) {
			t.Errorf("the export of %s went on to the password", tt.path)
		}
	}
	d.shot("export-backup-wallet-refused")
}
