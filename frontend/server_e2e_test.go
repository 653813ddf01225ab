package frontend_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/testkit/toolboxpeer"
)

// TestDashboard_StorageServer adds a real toolbox StorageServer through the Add destination
// form (a key of another identity is refused in words first), runs it, reads on the
// overview when the server confirmed the backup, and restores from the server with the
// restore wizard, which shows what the server holds before anything is written.
func TestDashboard_StorageServer(t *testing.T) {
	d := newDash(t)
	// The small fixture: the toolbox fixture takes the server half a minute to receive.
	d.stopAgent()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(d.wallet + suffix)
	}
	if _, err := seedWallet(d.wallet, localstore.FixtureSmall, localstore.SeedOptions{Seed: 4}); err != nil {
		t.Fatal(err)
	}
	d.startAgent()
	d.login()
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	keyFile := func(n uint64) string {
		path := filepath.Join(d.dir, "identity-"+string(rune('0'+n))+".key")
		if err := os.WriteFile(path, []byte(hex.EncodeToString(localstore.FixtureRootKey(n))+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	d.page("destinations")
	d.do(chromedp.Click(byText("button", "Add a destination")))
	d.waitFor(`document.querySelector('form.editor')`, "the editor")
	d.do(chromedp.SendKeys(chromedp.CSS(`form.editor input[type=text]`), "Toolbox server"),
		chromedp.Click(chromedp.CSS(`form.editor input[value="storage-server"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.editor input[name=server-url]`), srv.URL),
		chromedp.SendKeys(chromedp.CSS(`form.editor input[name=key-file]`), keyFile(5)),
		chromedp.Click(byText(`form.editor button`, "Add destination")))
	d.waitFor(`document.querySelector('form.editor .notice.error')?.textContent.includes("not one of your wallet's identities")`, "the refusal of another identity")
	d.shot("server-refused")
	d.do(chromedp.SetValue(chromedp.CSS(`form.editor input[name=key-file]`), keyFile(4)),
		chromedp.Click(byText(`form.editor button`, "Add destination")))
	d.waitFor(`document.querySelector('[data-destination=toolbox-server]')`, "the new destination")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if dest := cfg.Destinations[len(cfg.Destinations)-1]; dest.Kind != api.DestinationStorageServer || dest.Path != srv.URL || dest.WalletURL != "" {
		t.Fatalf("the agent has %+v", dest)
	}

	d.do(chromedp.Click(byText(`[data-destination=toolbox-server] button`, "Run now")))
	d.waitFor(`document.querySelector('[data-destination=toolbox-server] .task-panel')`, "the push's progress")
	d.waitIdle()
	var pushed *api.Task
	for _, task := range d.agent.Tasks().List() {
		if task.Target == "toolbox-server" && pushed == nil {
			pushed = &task
		}
	}
	if pushed == nil || pushed.State != api.TaskSucceeded {
		t.Fatalf("the push: %+v", pushed)
	}
	// Pause, edit and resume work for a storage server as for the others; the edit keeps
	// the URL, the signer and the pause.
	server := func() api.Destination {
		var cfg api.Config
		d.api(api.RouteConfig, nil, &cfg)
		for _, x := range cfg.Destinations {
			if x.ID == "toolbox-server" {
				return x
			}
		}
		t.Fatal("no toolbox-server in the config")
		return api.Destination{}
	}
	d.do(chromedp.Click(byText(`[data-destination=toolbox-server] summary`, "Pause")),
		chromedp.Click(byText(`[data-destination=toolbox-server] button`, "Until I resume")))
	d.waitFor(`[...document.querySelectorAll('[data-destination=toolbox-server] .badge')].some((b) => b.textContent.startsWith('Paused'))`, "the pause")
	d.do(chromedp.Click(byText(`[data-destination=toolbox-server] button`, "Edit")))
	d.waitFor(`document.querySelector('[data-destination=toolbox-server] form.editor input[name=server-url]')?.value`, "the editor with the URL")
	d.do(chromedp.SetValue(chromedp.CSS(`[data-destination=toolbox-server] form.editor input[type=text]`), "Toolbox storage"),
		chromedp.Click(byText(`[data-destination=toolbox-server] form.editor button`, "Save changes")))
	d.waitFor(`document.querySelector('[data-destination=toolbox-server] h2')?.textContent === 'Toolbox storage'`, "the new name")
	if dest := server(); dest.Path != srv.URL || dest.Kind != api.DestinationStorageServer || dest.Pause == nil {
		t.Errorf("after the edit the agent has %+v", dest)
	}
	d.do(chromedp.Click(byText(`[data-destination=toolbox-server] button`, "Resume")))
	d.waitFor(`![...document.querySelectorAll('[data-destination=toolbox-server] .badge')].some((b) => b.textContent.startsWith('Paused'))`, "the resume")
	if dest := server(); dest.Pause != nil {
		t.Errorf("resumed, the agent still has %+v", dest.Pause)
	}
	d.page("activity")
	d.waitFor(fmt.Sprintf(`document.querySelector('[data-task=%q]')`, pushed.ID), "the push in the history")

	d.page("overview")
	d.waitFor(`document.querySelector('[data-destination=toolbox-server] [data-testid=last-confirmed]')?.textContent.startsWith('Server confirmed')`, "the server's confirmation")
	d.shot("server-confirmed")

	d.page("restore")
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=restore-from-server]`)))
	d.waitFor(`document.querySelector('main[data-page=restore-server] input[name=server-url]')`, "the server restore")
	d.do(chromedp.SendKeys(chromedp.CSS(`input[name=server-url]`), srv.URL),
		chromedp.SendKeys(chromedp.CSS(`input[name=key-file]`), keyFile(4)),
		chromedp.Click(byText(`main button`, "Check what it holds")))
	d.waitFor(`document.querySelector('[data-testid=server-preview] tr[data-table=transactions] td')`, "the preview")
	d.shot("server-preview")
	if got := d.text(`[data-testid=server-preview] tr[data-table=transactions] td`); got != "6" {
		t.Errorf("the preview counts %q transactions, the server holds 6", got)
	}
	for _, task := range d.agent.Tasks().List() {
		if task.Kind == api.KindServerRestore {
			t.Fatalf("a restore started before the confirm: %+v", task)
		}
	}
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=server-preview] input[type=checkbox]`)),
		chromedp.Click(byText(`[data-testid=server-preview] button`, "Restore now")))
	d.waitFor(`document.querySelector('[data-testid=server-restore-result]')`, "the restore's end")
	d.shot("server-restored")
	if text := d.text(`[data-testid=server-restore-result]`); !strings.Contains(text, "Restored.") || !strings.Contains(text, d.wallet) {
		t.Errorf("the result says %q", text)
	}
}
