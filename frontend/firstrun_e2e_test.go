package frontend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
)

// freshAgent restarts d's agent as a fresh install: a config with no wallet and no
// destination, and a new login.
func (d *dash) freshAgent() {
	d.t.Helper()
	d.stopAgent()
	if err := agent.SaveConfig(d.config, agent.DefaultConfig()); err != nil {
		d.t.Fatal(err)
	}
	d.startAgent()
	d.login()
	d.waitFor(`document.querySelector('[data-testid=choose-wallet]')`, "the step that chooses the wallet")
}

// firstBackup checks that the overview shows the chosen wallet, that the only destination,
// added before there was a wallet to back up, makes its first backup by itself once the
// wallet is chosen (nothing is scheduled until then), that the backup file is in usb, and
// that the config protects wallet.
func (d *dash) firstBackup(usb, wallet string) {
	d.t.Helper()
	d.waitFor(`[...document.querySelectorAll('main[data-page=overview] h2')].some((e) => e.textContent === 'Your wallet')`, "the chosen wallet")
	d.page("destinations")
	d.waitFor(`document.querySelector('[data-destination] .task-panel[data-state=succeeded]')`, "the first backup")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != wallet || len(cfg.Destinations) != 1 || cfg.Destinations[0].Wallet != wallet {
		d.t.Fatalf("config after the first run: %+v", cfg)
	}
	files, err := os.ReadDir(usb)
	files = slices.DeleteFunc(files, func(f os.DirEntry) bool { return strings.HasPrefix(f.Name(), agent.PlaceMarkerPrefix) })
	if err != nil || len(files) != 1 {
		d.t.Fatalf("the backup folder after the first backup: %v, %v", files, err)
	}
}

// addUSBFolder adds a backup folder destination through the dashboard and checks that it
// says why it cannot run yet.
func (d *dash) addUSBFolder() string {
	d.t.Helper()
	usb := filepath.Join(d.dir, "usb")
	if err := os.Mkdir(usb, 0o700); err != nil {
		d.t.Fatal(err)
	}
	d.page("destinations")
	d.addFolder("USB disk", usb)
	d.waitFor(`document.querySelector('[data-testid=added]')?.textContent.includes('It cannot run yet: walletsync protects no wallet')`, "why it cannot run yet")
	d.page("overview")
	d.waitFor(`document.querySelector('[data-testid=choose-wallet] input[name=wallet-path]')`, "the step that chooses the wallet")
	return usb
}

// TestDashboard_FirstRunChoosesTheWallet: a fresh agent protects no wallet. Through the
// dashboard alone, the person adds a destination (told it cannot run yet), is refused a
// backup file in words, chooses the wallet by its path, and makes the first backup.
func TestDashboard_FirstRunChoosesTheWallet(t *testing.T) {
	d := newDash(t)
	d.freshAgent()
	d.shot("first-run")
	usb := d.addUSBFolder()
	backup := filepath.Join(d.dir, "old.brc39")
	if err := os.WriteFile(backup, []byte("WDAT\x00\x00\x00\x01 a backup header"), 0o600); err != nil {
		t.Fatal(err)
	}
	problem := `document.querySelector('[data-testid=wallet-problem]')?.textContent ?? ''`
	d.do(typeInto(`[data-testid=choose-wallet] input[name=wallet-path]`, backup),
		chromedp.Click(byText(`[data-testid=choose-wallet] form button`, "Protect this wallet")))
	d.waitFor(problem+`.includes('an encrypted BRC-39 backup file, not a wallet')`, "the backup file refused in words")
	d.do(typeInto(`[data-testid=choose-wallet] input[name=wallet-path]`, d.wallet),
		chromedp.Click(byText(`[data-testid=choose-wallet] form button`, "Protect this wallet")))
	d.firstBackup(usb, d.wallet)
}

// TestDashboard_FirstRunBrowsesForTheWallet: in the desktop window, the step that chooses
// the wallet has a Browse button, which asks the window's native open dialog (here the
// walletsyncConfig hook the window provides, answering the wallet's path) and fills the path
// in; the wallet is then protected and backed up. A browser, without the hook, shows no
// Browse button there.
func TestDashboard_FirstRunBrowsesForTheWallet(t *testing.T) {
	d := newDash(t)
	browse := `document.querySelector('[data-testid=choose-wallet] button.browse')`
	d.freshAgent()
	if eval[bool](d, browse+` !== null`) {
		t.Fatal("a browser shows a Browse button, which it cannot serve")
	}
	d.onNewDocument(fmt.Sprintf(`window.walletsyncConfig = {chooseWalletPath: async () => %q}`, d.wallet))
	usb := d.addUSBFolder()
	d.do(chromedp.Reload())
	d.waitFor(browse, "the Browse button")
	d.do(chromedp.Evaluate[chromedp.Void](browse + `.click()`))
	d.waitFor(fmt.Sprintf(`document.querySelector('[data-testid=choose-wallet] input[name=wallet-path]').value === %q`, d.wallet), "the chosen path filled in")
	d.do(chromedp.Click(byText(`[data-testid=choose-wallet] form button`, "Protect this wallet")))
	d.firstBackup(usb, d.wallet)
}

// TestDashboard_FirstRunOffersTheWalletFound: the wallet BSV Desktop keeps under the home
// folder is offered with its network, and one click protects it.
func TestDashboard_FirstRunOffersTheWalletFound(t *testing.T) {
	home := t.TempDir()
	found := filepath.Join(home, ".bsv-desktop", "wallet-fixture-test.sqlite")
	if err := os.Mkdir(filepath.Dir(found), 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, templateWallet, found)
	d := newDash(t, func(o *agent.Options) { o.Home = home })
	d.freshAgent()
	row := `[data-found="` + found + `"]`
	d.waitFor(`document.querySelector('`+row+`')?.textContent.includes('Test network')`, "the wallet found, with its network")
	d.shot("first-run-found")
	usb := d.addUSBFolder()
	d.do(chromedp.Click(byText(row+` button`, "Protect this wallet")))
	d.firstBackup(usb, found)
}
