package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/cli"
)

// signInPage waits for the sign-in page and returns the reason it gives
// (data-reason: "signed-out" or "link-used"), checking that it came as an HTML page with
// status 401 and names every way back in.
func (d *dash) signInPage() string {
	d.t.Helper()
	d.waitFor(`document.querySelector('main[data-page=signin]')`, "the sign-in page")
	if got := eval[string](d, `document.contentType`); got != "text/html" {
		d.t.Errorf("the sign-in page is %s, want text/html", got)
	}
	if got := eval[int](d, `performance.getEntriesByType('navigation')[0].responseStatus`); got != 401 {
		d.t.Errorf("the sign-in page came with status %d, want 401", got)
	}
	text := d.text("main")
	for _, want := range []string{"walletsync open --data-dir " + string(d.data), "tray", "Open dashboard", "desktop window", "30 days"} {
		if !strings.Contains(text, want) {
			d.t.Errorf("the sign-in page lacks %q: %q", want, text)
		}
	}
	if strings.Contains(text, `"error"`) || strings.Contains(text, "unauthorized") {
		d.t.Errorf("the sign-in page shows the API's JSON: %q", text)
	}
	return eval[string](d, `document.querySelector('main[data-page=signin]').dataset.reason`)
}

// openLink runs the command the sign-in page shows, with --print-only, in process as a
// person would in a terminal, and returns the link it prints.
func (d *dash) openLink() string {
	d.t.Helper()
	cmd := strings.Fields(d.text("[data-testid=signin-command]"))
	if len(cmd) < 2 || cmd[0] != "walletsync" || cmd[1] != "open" {
		d.t.Fatalf("the sign-in page offers %q, want walletsync open", cmd)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := cli.Run(ctx, append(cmd[1:], "--print-only"), &out, &errOut); code != 0 {
		d.t.Fatalf("%s --print-only: exit %d: %s", strings.Join(cmd, " "), code, errOut.String())
	}
	link, ok := strings.CutPrefix(strings.SplitN(out.String(), "\n", 2)[0], "dashboard: ")
	if !ok || !strings.HasPrefix(link, d.agent.URL()+"/login?code=") {
		d.t.Fatalf("walletsync open printed %q", out.String())
	}
	return link
}

// forgetCookies clears the tab's cookies, as a browser that was never signed in (or was
// cleared) has none.
func (d *dash) forgetCookies() {
	d.t.Helper()
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}))
}

// signInCookie returns the tab's cookie for the agent's origin.
func (d *dash) signInCookie() *network.Cookie {
	d.t.Helper()
	var res network.GetCookiesResult
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		res, err = cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{d.agent.URL() + "/"}})
		return err
	}))
	for _, c := range res.Cookies {
		if strings.HasPrefix(c.Name, "walletsync-") {
			return c
		}
	}
	d.t.Fatalf("no sign-in cookie among %d", len(res.Cookies))
	return nil
}

// TestDashboard_SignInPageLeadsBackIn: a browser without the cookie, and a login link
// used before, both get the HTML sign-in page (never JSON); the command it names gives a
// fresh link, which signs the browser in for 30 days.
func TestDashboard_SignInPageLeadsBackIn(t *testing.T) {
	d := newDash(t)
	used := d.agent.LoginURL()
	d.do(chromedp.Navigate(used))
	d.waitFor(`document.querySelector('main[data-page=overview] [data-testid=health]')`, "the overview")

	d.forgetCookies()
	d.do(chromedp.Navigate(d.agent.URL() + "/"))
	if reason := d.signInPage(); reason != "signed-out" {
		t.Errorf("without a cookie the page says %q, want signed-out", reason)
	}
	d.shot("signed-out")
	if !strings.Contains(d.text("[data-testid=signin-reason]"), "not signed in") {
		t.Errorf("the reason says %q", d.text("[data-testid=signin-reason]"))
	}

	d.do(chromedp.Navigate(used))
	if reason := d.signInPage(); reason != "link-used" {
		t.Errorf("a used link's page says %q, want link-used", reason)
	}
	d.shot("link-used")
	if got := d.text("[data-testid=signin-reason]"); !strings.Contains(got, "already been used or has expired") || !strings.Contains(got, "two minutes") {
		t.Errorf("the reason says %q", got)
	}

	d.do(chromedp.Navigate(d.openLink()))
	d.waitFor(`document.querySelector('main[data-page=overview] [data-testid=health]')`, "the overview through the fresh link")
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the live event stream")
	c := d.signInCookie()
	// "Remember this browser": a persistent cookie (not a session one), for 30 days.
	if c.Session || time.Until(cdpTime(c.Expires)) < api.DefaultSessionTTL-time.Hour {
		t.Errorf("the cookie expires at %v (session %v), want %v from now", cdpTime(c.Expires), c.Session, api.DefaultSessionTTL)
	}
	if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/" {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if token, _ := d.data.Token(); strings.Contains(c.Value, token) {
		t.Error("the cookie holds the API token")
	}
}

func cdpTime(secs float64) time.Time { return time.Unix(int64(secs), 0) }

// rememberAddr is an agent option tweak that moves the test's address into the config, as
// the agent's first start would have, and starts the agent without --addr: as
// `walletsync agent` and the service do.
func rememberAddr(o *agent.Options) {
	b, err := os.ReadFile(o.ConfigPath)
	var cfg api.Config
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		panic(err) // the harness wrote this file a moment ago
	}
	if cfg.Addr == "" {
		cfg.Addr = o.Addr
		if err := agent.SaveConfig(o.ConfigPath, cfg); err != nil {
			panic(err)
		}
	}
	o.Addr = ""
}

// TestDashboard_AgentDownPanelReconnectsOnTheStableAddr: the agent, stopped and started
// again the way its "not running" panel says (no address given), listens where it did, so
// the open tab comes back to a live dashboard by itself, still signed in.
func TestDashboard_AgentDownPanelReconnectsOnTheStableAddr(t *testing.T) {
	d := newDash(t, rememberAddr)
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the live event stream")
	if d.agent.URL() != "http://"+d.addr {
		t.Fatalf("the agent listens at %s, want the remembered %s", d.agent.URL(), d.addr)
	}
	d.stopAgent()
	d.waitFor(`!document.getElementById('agent-down').hidden`, "the agent-down panel")
	if got := d.text("#agent-down"); !strings.Contains(got, "reconnects by itself once the agent answers at "+d.addr) || !strings.Contains(got, "walletsync open") {
		t.Errorf("the panel says %q", got)
	}
	d.startAgent()
	if n := d.agent.AddrNotice(); n != "" || d.agent.URL() != "http://"+d.addr {
		t.Fatalf("the restarted agent listens at %s (%q), want %s", d.agent.URL(), n, d.addr)
	}
	d.waitFor(`document.getElementById('agent-down').hidden && !document.getElementById('main').hidden && document.getElementById('conn').dataset.state === 'live'`, "the live dashboard again")
	d.page("destinations")
	d.addDestination("usb") // only the live event stream shows it
	if eval[bool](d, `!!document.querySelector('main[data-page=signin]') || !document.getElementById('signin').hidden`) {
		t.Error("the tab was signed out by the restart")
	}
}

// TestDashboard_SignedOutNoticeLeadsToTheSignInPage: when the agent signs every browser
// out (walletsync open --forget-browsers), the open tab says so at once, names the way
// back, and its link leads to the sign-in page.
func TestDashboard_SignedOutNoticeLeadsToTheSignInPage(t *testing.T) {
	d := newDash(t)
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the live event stream")
	d.api(api.RouteForgetBrowsers, nil, nil)
	d.waitFor(`!document.getElementById('signin').hidden`, "the signed-out notice")
	d.shot("signed-out-notice")
	if got := d.text("#signin"); !strings.Contains(got, "walletsync open") || !strings.Contains(got, "tray") {
		t.Errorf("the notice says %q", got)
	}
	d.do(chromedp.Click(chromedp.CSS(`#signin a[href="/"]`)))
	if reason := d.signInPage(); reason != "signed-out" {
		t.Errorf("the sign-in page says %q", reason)
	}
}
