package frontend_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/testkit/servetest"
)

// TestDashboard_StoppedStorageServer adds a walletsync serve destination while the server
// runs, stops the server, and runs it from the Destinations page: while the agent retries,
// the task panel says "Cannot reach HOST (attempt N, next try in …)" rather than
// "Starting…", and so does the overview; once the agent's bound has passed (8 s here, time
// to look at both pages; remote.GiveUp, 60 s, in use) the run fails, and the panel, the
// header and the destination say why in words, with the raw error only behind Details.
func TestDashboard_StoppedStorageServer(t *testing.T) {
	d := newDash(t, func(o *agent.Options) { o.ServerGiveUp = 8 * time.Second })
	srv := servetest.Start(t)
	// The template wallet's identity is FixtureIdentity(1): its key signs for the server.
	req := map[string]any{
		"destination": api.Destination{ID: "stopped-server", Name: "Stopped server", Kind: api.DestinationStorageServer, Path: srv.URL,
			Schedule: api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}, Pause: &api.Pause{}},
		"signer": map[string]string{"key": hex.EncodeToString(localstore.FixtureRootKey(1))},
	}
	d.api(api.RouteServerDestinationAdd, req, nil)
	srv.Stop()
	host := strings.TrimPrefix(srv.URL, "http://")

	d.page("destinations")
	card := `[data-destination=stopped-server]`
	d.waitFor(fmt.Sprintf(`document.querySelector(%q)`, card), "the destination")
	d.do(chromedp.Click(byText(card+` button`, "Run now")))
	d.waitFor(fmt.Sprintf(`document.querySelector(%q)?.textContent.startsWith(%q)`, card+` .task-panel .state-line`, "Cannot reach "+host+" (attempt "),
		"the panel saying the server cannot be reached")
	d.shot("server-unreachable-retrying")
	line := d.text(card + ` .task-panel .state-line`)
	if !strings.Contains(line, ", next try in ") {
		t.Errorf("the panel says %q", line)
	}
	// The overview says the same while the run goes on, not "Working: 0 rows".
	d.page("overview")
	d.waitFor(fmt.Sprintf(`document.querySelector('[data-destination=stopped-server] [data-testid=unreachable]')?.textContent.startsWith(%q)`, "Cannot reach "+host+" (attempt "),
		"the overview saying the server cannot be reached")
	d.page("destinations")

	want := "Cannot reach " + srv.URL + ": connection refused; gave up after 8 s."
	d.waitFor(fmt.Sprintf(`document.querySelector(%q)?.dataset.state === 'failed'`, card+` .task-panel`), "the run's failure")
	d.waitFor(fmt.Sprintf(`[...document.querySelectorAll(%q)].some((p) => p.textContent === %q)`, card+` .task-panel .notice.error p`, want),
		"the failure in words")
	// The header says it too, in the same words, not the error chain it used to show.
	d.waitFor(fmt.Sprintf(`document.getElementById('health')?.textContent.includes(%q)`, want), "the header naming the failure in words")
	d.shot("server-unreachable-failed")
	if msg := d.text(card + ` .task-panel .notice.error p`); strings.Contains(msg, "dial tcp") || strings.Contains(msg, "makeAvailable") {
		t.Errorf("the failure shows the error chain: %q", msg)
	}
	var ov api.Overview
	d.api(api.RouteOverview, nil, &ov)
	for _, dv := range ov.Destinations {
		if dv.ID == "stopped-server" && dv.LastMessage != want {
			t.Errorf("the destination's last failure says %q, want %q", dv.LastMessage, want)
		}
	}
}
