package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/agent/api"
	"walletsync/desktop"
	"walletsync/testkit/walletsynctest"
)

// startApp makes an App on f with window and notifier, runs its startup as the window
// toolkit would, and shuts it down at cleanup (a test may shut it down first).
func startApp(t *testing.T, f walletsynctest.Folder, window Window, notifier desktop.Notifier) *App {
	t.Helper()
	app, err := NewApp(AppOptions{Agent: f.Options(), Window: window, Notifier: notifier})
	if err != nil {
		t.Fatal(err)
	}
	app.startup(t.Context())
	t.Cleanup(func() { app.shutdown(context.Background()) })
	return app
}

// windowRequest sends a request as the page in the window does, through the App's asset
// server handler: header holds what the page's engine adds (Origin, Referer).
func windowRequest(t *testing.T, srv *httptest.Server, method, path, body string, header map[string]string) (int, api.APIError, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(walletsynctest.Wait(t), method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the body: %v", method, path, err)
	}
	var eb struct{ Error api.APIError }
	// Only a failure has the error body; a success's body may be empty.
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s = %d %q: not an error body: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, eb.Error, b
}

// fromThePage is what WebKitGTK sends with the window page's own requests: a Referer of
// the page and no Origin (seen under Xvfb with webkit2gtk 4.1).
var fromThePage = map[string]string{"Referer": "wails://wails/"}

func TestApp_StartsItsOwnAgentWhenNoneRuns(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	app := startApp(t, f, &fakeWindow{}, nil)
	info, err := app.Agent()
	if err != nil || !info.InProcess || info.DataDir != string(f.Dir) {
		t.Fatalf("Agent() = %+v, %v; want the in-process agent of %s", info, err, f.Dir)
	}
	srv := httptest.NewServer(app.apiHandler())
	defer srv.Close()
	code, _, body := windowRequest(t, srv, "GET", "/api/v1/overview", "", nil)
	var ov api.Overview
	if err := json.Unmarshal(body, &ov); code != http.StatusOK || err != nil || !strings.HasPrefix(ov.Health, "No wallet yet") {
		t.Fatalf("GET overview through the window = %d %s", code, body)
	}
	app.shutdown(context.Background())
	if _, err := f.Dir.Endpoint(); !errors.Is(err, api.ErrAgentNotRunning) {
		t.Fatalf("after shutdown the in-process agent still publishes an address: %v", err)
	}
}

func TestApp_PrefersTheRunningAgent(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	f.StartAgent(t)
	app := startApp(t, f, &fakeWindow{}, nil)
	if info, err := app.Agent(); err != nil || info.InProcess {
		t.Fatalf("Agent() = %+v, %v; want the running agent", info, err)
	}
	srv := httptest.NewServer(app.apiHandler())
	defer srv.Close()
	if code, _, body := windowRequest(t, srv, "POST", "/api/v1/pause", `{"for":"1h"}`, fromThePage); code != http.StatusOK {
		t.Fatalf("POST pause through the window = %d %s", code, body)
	}
	app.shutdown(context.Background())
	if _, err := f.Client(t).Status(walletsynctest.Wait(t)); err != nil {
		t.Fatalf("closing the window stopped the running agent: %v", err)
	}
}

func TestApp_ProxyKeepsTheAgentsOriginRule(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	app := startApp(t, f, &fakeWindow{}, nil)
	srv := httptest.NewServer(app.apiHandler())
	defer srv.Close()
	tests := []struct {
		name         string
		method, path string
		header       map[string]string
		status       int
		code         string
	}{
		{"page referer", "POST", "/api/v1/resume", fromThePage, http.StatusOK, ""},
		{"page origin (macOS)", "POST", "/api/v1/resume", map[string]string{"Origin": "wails://wails"}, http.StatusOK, ""},
		{"page origin (Windows)", "POST", "/api/v1/resume", map[string]string{"Origin": "http://wails.localhost"}, http.StatusOK, ""},
		{"the page's own bad token is replaced", "POST", "/api/v1/resume", map[string]string{"Referer": "wails://wails/#/settings", "Authorization": "Bearer nope"}, http.StatusOK, ""},
		{"no origin", "POST", "/api/v1/resume", nil, http.StatusForbidden, "cross_origin"},
		{"foreign origin", "POST", "/api/v1/resume", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "cross_origin"},
		{"foreign referer", "POST", "/api/v1/resume", map[string]string{"Referer": "https://evil.example/wails://wails/"}, http.StatusForbidden, "cross_origin"},
		{"reads need no origin", "GET", "/api/v1/status", nil, http.StatusOK, ""},
		{"only the API", "GET", "/login", nil, http.StatusNotFound, "not_found"},
		{"agent errors pass through", "GET", "/api/v1/tasks/nope", nil, http.StatusNotFound, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, e, body := windowRequest(t, srv, tt.method, tt.path, "", tt.header)
			if code != tt.status || e.Code != tt.code {
				t.Fatalf("%s %s = %d %s; want %d %q", tt.method, tt.path, code, body, tt.status, tt.code)
			}
		})
	}
}

func TestApp_ProxyStreamsEvents(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	app := startApp(t, f, &fakeWindow{}, nil)
	srv := httptest.NewServer(app.apiHandler())
	defer srv.Close()
	ctx := walletsynctest.Wait(t)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET events through the window = %d %q", resp.StatusCode, ct)
	}
	// The stream is open before the change, so the event must arrive through it while it
	// stays open: the proxy may not buffer it until the response ends.
	if code, _, body := windowRequest(t, srv, "POST", "/api/v1/pause", "", fromThePage); code != http.StatusOK {
		t.Fatalf("POST pause = %d %s", code, body)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), `"destination.changed"`) {
			return
		}
	}
	t.Fatalf("the event stream ended without the pause's event: %v", sc.Err())
}

func TestApp_ReportsAnAgentItCannotReach(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	// A process that holds the folder's lock but never answers: no agent can start, and
	// none can be reached.
	lock, err := f.Dir.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lock.Release(); err != nil {
			t.Errorf("release the folder lock: %v", err)
		}
	}()
	app := startApp(t, f, &fakeWindow{}, nil)
	var unreachable *desktop.AgentUnreachableError
	if _, err := app.Agent(); !errors.As(err, &unreachable) || !errors.Is(err, api.ErrAgentRunning) {
		t.Fatalf("Agent() error = %v; want an *desktop.AgentUnreachableError naming the agent that holds the folder", err)
	}
	srv := httptest.NewServer(app.apiHandler())
	defer srv.Close()
	code, e, body := windowRequest(t, srv, "GET", "/api/v1/overview", "", nil)
	if code != http.StatusBadGateway || e.Code != "agent_unreachable" || e.Hint == "" {
		t.Fatalf("GET overview = %d %s; want 502 agent_unreachable with a hint", code, body)
	}
}

func TestApp_RaisesTheWindow(t *testing.T) {
	w := &fakeWindow{}
	app := startApp(t, walletsynctest.NewFolder(t, nil), w, nil)
	app.raise()
	if w.raised != 1 {
		t.Fatalf("raised %d times", w.raised)
	}
}

func TestApp_BackupFileDialogs(t *testing.T) {
	w := &fakeWindow{}
	app := startApp(t, walletsynctest.NewFolder(t, nil), w, nil)
	for _, tt := range []struct{ reply, want string }{
		{"/home/p/wallet-backup", "/home/p/wallet-backup.brc39"},
		{"/home/p/mine.brc39", "/home/p/mine.brc39"},
		{"/home/p/mine.bak", "/home/p/mine.bak"},
		{"", ""}, // cancelled
	} {
		w.reply = tt.reply
		if got, err := app.SaveBackupFile("walletsync-03ab.brc39"); err != nil || got != tt.want {
			t.Errorf("SaveBackupFile with the dialog answering %q = %q, %v; want %q", tt.reply, got, err, tt.want)
		}
	}
	w.reply = "/media/usb/old.brc39"
	if got, err := app.OpenBackupFile(); err != nil || got != w.reply {
		t.Errorf("OpenBackupFile = %q, %v", got, err)
	}
	w.reply = "/home/p/.bsv-desktop/wallet.db"
	if got, err := app.OpenWalletFile(); err != nil || got != w.reply || w.dialogs[len(w.dialogs)-1].Filters[0].Pattern != "*.sqlite;*.db" {
		t.Errorf("OpenWalletFile = %q, %v (dialog %+v)", got, err, w.dialogs[len(w.dialogs)-1])
	}
	w.dialogs = w.dialogs[:len(w.dialogs)-1]
	w.reply = "/media/usb"
	if got, err := app.ChooseBackupFolder(); err != nil || got != w.reply || len(w.folders) != 1 {
		t.Errorf("ChooseBackupFolder = %q, %v", got, err)
	}
	save, open := w.dialogs[0], w.dialogs[len(w.dialogs)-1]
	if save.DefaultName != "walletsync-03ab.brc39" || save.Dir != "" || open.Filters[0].Pattern != "*.brc39" {
		t.Errorf("dialogs = %+v", w.dialogs)
	}
	// A suggested path opens the dialog in its folder, when there is one.
	here := t.TempDir()
	w.dialogs = nil
	for _, suggested := range []string{filepath.Join(here, "mine.brc39"), filepath.Join(here, "gone", "mine.brc39")} {
		if _, err := app.SaveBackupFile(suggested); err != nil {
			t.Fatalf("SaveBackupFile(%s): %v", suggested, err)
		}
	}
	if d := w.dialogs; d[0].Dir != here || d[0].DefaultName != "mine.brc39" || d[1].Dir != "" || d[1].DefaultName != "mine.brc39" {
		t.Errorf("dialogs for suggested paths = %+v", d)
	}
}

func TestApp_RemembersTheWindow(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	first := &fakeWindow{geometry: desktop.WindowState{Width: 1300, Height: 900, X: 10, Y: 20}}
	app := startApp(t, f, first, nil)
	if got := app.initialWindow(); got != desktop.DefaultWindowState() || len(first.placed) != 0 {
		t.Fatalf("first run: window %+v, placed %v; want the default size, centred", got, first.placed)
	}
	if app.beforeClose(t.Context()) {
		t.Fatal("beforeClose kept the window from closing")
	}
	app.shutdown(context.Background())

	want := desktop.WindowState{Width: 1300, Height: 900, X: 10, Y: 20, Positioned: true}
	second := &fakeWindow{geometry: desktop.WindowState{Width: 2560, Height: 1400, Maximised: true}}
	app = startApp(t, f, second, nil)
	if got := app.initialWindow(); got != want || len(second.placed) != 1 || second.placed[0] != want {
		t.Fatalf("second run: window %+v, placed %v; want %+v", got, second.placed, want)
	}
	app.beforeClose(t.Context())
	app.shutdown(context.Background())

	// Closed maximised: it reopens maximised, and un-maximises to the size it had before.
	want.Maximised = true
	app = startApp(t, f, &fakeWindow{}, nil)
	if got := app.initialWindow(); got != want {
		t.Fatalf("third run: window %+v; want %+v", got, want)
	}
}

func TestApp_NotifiesFailedBackupsFromNowOn(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, []string{"Old disk", "Missing disk"}))
	f.StartAgent(t)
	c := f.Client(t)
	run := func(id string) api.Task {
		task, err := c.Run(walletsynctest.Wait(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return walletsynctest.WaitTask(t, c, task.ID)
	}
	if task := run("broken-1"); task.State != api.TaskFailed {
		t.Fatalf("the backup to the missing folder = %+v; want failed", task)
	}

	n := walletsynctest.NewRecorder[desktop.Notification]()
	startApp(t, f, &fakeWindow{}, n)
	run("good-1") // succeeds: nothing to say
	run("broken-2")
	// Had the window replayed the history, "Old disk" would come first.
	note := n.Next(t)
	if note.Title != "Backup failed" || !strings.HasPrefix(note.Body, "The backup to Missing disk failed: ") {
		t.Fatalf("notification = %+v; want the failure of Missing disk", note)
	}
}
