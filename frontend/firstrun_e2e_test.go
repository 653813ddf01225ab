package frontend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
)

// TestDashboard_FirstRunChoosesTheWallet: a fresh agent protects no wallet. Through the
// dashboard alone, the person adds a destination (told it cannot run yet), is refused a
// backup file in words, chooses the wallet by its path, and makes the first backup.
func TestDashboard_FirstRunChoosesTheWallet(t *testing.T) {
	d := newDash(t)
	d.stopAgent()
	if err := agent.SaveConfig(d.config, agent.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	d.startAgent()
	d.login()
	d.waitFor(`document.querySelector('[data-testid=choose-wallet]')`, "the step that chooses the wallet")
	d.shot("first-run")

	usb := filepath.Join(d.dir, "usb")
	if err := os.Mkdir(usb, 0o700); err != nil {
		t.Fatal(err)
	}
	d.page("destinations")
	d.addFolder("USB disk", usb)
	d.waitFor(`document.querySelector('[data-testid=added]')?.textContent.includes('It cannot run yet: walletsync protects no wallet')`, "why it cannot run yet")

	backup := filepath.Join(d.dir, "old.brc39")
	if err := os.WriteFile(backup, []byte("WDAT\x00\x00\x00\x01 a backup header"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.page("overview")
	problem := `document.querySelector('[data-testid=wallet-problem]')?.textContent ?? ''`
	d.do(typeInto(`[data-testid=choose-wallet] input[name=wallet-path]`, backup),
		chromedp.Click(byText(`[data-testid=choose-wallet] button`, "Protect this wallet")))
	d.waitFor(problem+`.includes('an encrypted BRC-39 backup file, not a wallet')`, "the backup file refused in words")
	d.do(typeInto(`[data-testid=choose-wallet] input[name=wallet-path]`, d.wallet),
		chromedp.Click(byText(`[data-testid=choose-wallet] button`, "Protect this wallet")))
	d.waitFor(`[...document.querySelectorAll('main[data-page=overview] h2')].some((e) => e.textContent === 'Your wallet')`, "the chosen wallet")

	d.page("destinations")
	d.do(chromedp.Click(byText(`[data-destination] button`, "Run now")))
	d.waitFor(`document.querySelector('[data-destination] .task-panel[data-state=succeeded]')`, "the first backup")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != d.wallet || len(cfg.Destinations) != 1 || cfg.Destinations[0].Wallet != d.wallet {
		t.Fatalf("config after the first run: %+v", cfg)
	}
	files, err := os.ReadDir(usb)
	if err != nil || len(files) != 1 {
		t.Fatalf("the backup folder after the first backup: %v, %v", files, err)
	}
}
