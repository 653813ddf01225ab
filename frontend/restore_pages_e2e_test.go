package frontend_test

import (
	"testing"

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
