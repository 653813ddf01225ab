package frontend_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// TestDashboard_RecoveryKitRendersAndPrints: the kit page, reached from Settings, holds
// the wallet's identity and network, each destination and where it is, the steps and a
// blank box for the password; printed, it is the kit alone (a real PDF of it is made).
// The password goes on it only when asked and proven, and the text file holds the same.
func TestDashboard_RecoveryKitRendersAndPrints(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	var ov api.Overview
	d.api(api.RouteOverview, nil, &ov)
	identity := ov.Wallets[0].Identities[0].IdentityKey
	d.page("settings")
	d.do(chromedp.Click(`[data-testid=kit-link]`))
	d.waitFor(`document.querySelector('main[data-page=kit] [data-testid=kit] [data-testid=kit-identity]')`, "the kit")
	if got := d.text("[data-testid=kit-identity]"); got != identity {
		t.Errorf("identity %q, want %q", got, identity)
	}
	if got := d.text("[data-testid=kit-network]"); got == "" {
		t.Error("no network on the kit")
	}
	for _, dest := range ov.Destinations {
		if got := d.text("[data-kit-destination=" + dest.ID + "]"); !strings.Contains(got, dest.Name) || !strings.Contains(got, dest.Path) {
			t.Errorf("destination %s on the kit: %q", dest.ID, got)
		}
	}
	if n := eval[int](d, `document.querySelectorAll('[data-testid=kit-steps] li').length`); n < 4 {
		t.Errorf("%d steps", n)
	}
	if !eval[bool](d, `!!document.querySelector('[data-testid=kit-password-box]') && !document.querySelector('[data-testid=kit-password]')`) {
		t.Error("the password is not a blank box to write in")
	}
	if strings.Contains(eval[string](d, `document.body.innerText`), backupPassword) {
		t.Error("the password shows without being asked for")
	}
	d.shot("kit")

	// On paper: the kit alone.
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
		return err
	}))
	if got := eval[string](d, `[getComputedStyle(document.querySelector('nav.side')).display, getComputedStyle(document.querySelector('header.top')).display,
		getComputedStyle(document.querySelector('main .no-print')).display, getComputedStyle(document.querySelector('[data-testid=kit]')).display].join(' ')`); got != "none none none block" {
		t.Errorf("printed, nav header options kit display as %q", got)
	}
	var pdf []byte
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, page.PrintToPDF, page.PrintToPDFParams{})
		pdf = res.Data
		return err
	}))
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) || len(pdf) < 1000 {
		t.Errorf("the printed kit: %d bytes, %q", len(pdf), pdf[:min(len(pdf), 8)])
	}
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: ""})
		return err
	}))

	// The password, when asked for: a wrong one is refused, the right one printed.
	d.do(chromedp.Click(`input[name=print-password]`), chromedp.SendKeys(`input[name=kit-password]`, "not the password"),
		chromedp.Click(byText("button", "Put it on the kit")))
	d.waitFor(`document.querySelector('[data-testid=kit-problem] .notice')`, "the refusal")
	if eval[bool](d, `!!document.querySelector('[data-testid=kit-password]')`) {
		t.Fatal("a wrong password was put on the kit")
	}
	d.do(chromedp.SendKeys(`input[name=kit-password]`, backupPassword), chromedp.Click(byText("button", "Put it on the kit")))
	d.waitFor(`document.querySelector('[data-testid=kit-password]')`, "the password on the kit")
	if got := d.text("[data-testid=kit-password]"); got != backupPassword {
		t.Errorf("the kit's password: %q", got)
	}

	d.do(chromedp.Click(byText("button", "Save as a text file")))
	d.waitFor(`document.querySelector('[data-testid=kit-download]')`, "the download")
	text := eval[string](d, `decodeURIComponent(document.querySelector('[data-testid=kit-download]').href.replace(/^data:text\/plain;charset=utf-8,/, ''))`)
	if name := eval[string](d, `document.querySelector('[data-testid=kit-download]').download`); name != "walletsync-recovery-kit.txt" {
		t.Errorf("download name %q", name)
	}
	for _, want := range []string{"walletsync recovery kit", "Identity key: " + identity, "Backup folder (", "To restore on a new computer:", "Backup password: " + backupPassword} {
		if !strings.Contains(text, want) {
			t.Errorf("the text file lacks %q:\n%s", want, text)
		}
	}
}
