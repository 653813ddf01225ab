package agent

import (
	"strings"
	"testing"
	"time"

	"walletsync/agent/api"
	"walletsync/localstore"
)

// TestAgent_StoppedStorageServer_SaysCannotReachAndFailsInWords runs a storage-server
// destination whose server is stopped: while it retries, the task's detail (the line the
// dashboard shows) says "cannot reach HOST (attempt N, next try in …)"; once the bound
// (ServerGiveUp, short here) has passed it fails with the reason in words and the bound,
// not the error chain, and its log says what happened from the first failure.
func TestAgent_StoppedStorageServer_SaysCannotReachAndFailsInWords(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	e.opts.ServerGiveUp = 2 * time.Second
	dead := closedURL(t)
	a, c := serverDestinationEnv(t, e, dead)
	sub := a.bus.Subscribe(a.bus.Last())
	task := runAndWait(t, c, a, api.RouteRun, "server")

	host := strings.TrimPrefix(dead, "http://")
	if task.State != api.TaskFailed {
		t.Fatalf("push to a stopped server: %+v", task)
	}
	if want := "Cannot reach " + dead + ": connection refused; gave up after 2 s."; task.Message != want {
		t.Errorf("message %q, want %q", task.Message, want)
	}
	if task.Hint == "" || task.Detail != "" {
		t.Errorf("hint %q, detail %q: want a hint and no step left over", task.Hint, task.Detail)
	}
	var waiting []string
	for {
		ev, err := sub.Next(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		tk, ok := ev.Data.(api.Task)
		if !ok || tk.ID != task.ID {
			continue
		}
		if strings.HasPrefix(tk.Detail, "cannot reach ") {
			waiting = append(waiting, tk.Detail)
		}
		if ev.Type == api.EventTaskFinished {
			break
		}
	}
	// Progress events are throttled (4 a second), so not every attempt need be seen.
	if len(waiting) == 0 || !strings.HasPrefix(waiting[len(waiting)-1], "cannot reach "+host+" (attempt ") ||
		!strings.Contains(waiting[len(waiting)-1], ", next try in ") {
		t.Errorf("progress while retrying: %q; want cannot reach %s (attempt N, next try in …)", waiting, host)
	}
	log, err := a.tasks.Log(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, l := range log {
		text = append(text, l.Text)
	}
	if all := strings.Join(text, "\n"); !strings.Contains(all, "cannot reach "+dead+": connection refused; trying again for up to 2s") {
		t.Errorf("log:\n%s", all)
	}
	if !strings.Contains(task.Error, "connection refused") {
		t.Errorf("the technical text is not kept beside the words: %q", task.Error)
	}
}
