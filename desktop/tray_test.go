package desktop

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"walletsync/agent/api"
	"walletsync/testkit/walletsynctest"
)

// overviewHealth is the agent's own health sentence, to compare the tray's with.
func overviewHealth(t *testing.T, f walletsynctest.Folder) string {
	t.Helper()
	ov, err := f.Client(t).Overview(walletsynctest.Wait(t))
	if err != nil {
		t.Fatal(err)
	}
	return ov.Health
}

func TestTray_ShowsHealthAndActsOnEveryDestination(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet", "Second copy"}, nil))
	f.StartAgent(t)
	opened, quit := 0, false
	tr := &Tray{Endpoint: f.Endpoint, Open: func(context.Context) error { opened++; return nil }, Quit: func() { quit = true }, Log: slog.New(slog.DiscardHandler)}
	ctx := walletsynctest.Wait(t)

	s := tr.state(ctx)
	if !s.Reachable || s.Destinations != 2 || s.Health != overviewHealth(t, f) || !s.Paused || !s.PausedUntil.IsZero() {
		t.Fatalf("state = %+v; want the configured destinations, paused until resumed", s)
	}
	for _, a := range trayActions {
		if !s.enabled(a) {
			t.Errorf("%q disabled with two destinations", s.label(a))
		}
	}

	tasks, err := tr.backUpNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]api.TaskState{}
	for _, task := range tasks {
		ran[task.Target] = walletsynctest.WaitTask(t, f.Client(t), task.ID).State
	}
	if len(ran) != 2 || ran["good-1"] != api.TaskSucceeded || ran["good-2"] != api.TaskSucceeded {
		t.Fatalf("Back up now ran %v; want both destinations, succeeded", ran)
	}
	if s = tr.state(ctx); !s.Healthy || s.Health != overviewHealth(t, f) || !strings.HasPrefix(s.Health, "Backed up just now to 2 destinations") {
		t.Fatalf("after backing up: %+v", s)
	}

	if got := s.label(trayPause); got != "Resume backups (paused)" {
		t.Fatalf("paused until resumed, the entry reads %q", got)
	}
	if err := tr.do(ctx, trayPause, s); err != nil {
		t.Fatal(err)
	}
	if s = tr.state(ctx); s.Paused || s.label(trayPause) != "Pause for 1 hour" {
		t.Fatalf("after Resume: %+v", s)
	}
	before := time.Now()
	if err := tr.do(ctx, trayPause, s); err != nil {
		t.Fatal(err)
	}
	s = tr.state(ctx)
	if !s.Paused || s.PausedUntil.Before(before.Add(trayPauseFor)) || s.PausedUntil.After(time.Now().Add(trayPauseFor)) {
		t.Fatalf("after Pause for 1 hour: %+v", s)
	}
	if want := "Resume backups (paused until " + s.PausedUntil.Local().Format("15:04") + ")"; s.label(trayPause) != want {
		t.Fatalf("paused, the entry reads %q; want %q", s.label(trayPause), want)
	}
	if err := tr.do(ctx, trayPause, s); err != nil {
		t.Fatal(err)
	}
	if s = tr.state(ctx); s.Paused {
		t.Fatalf("after Resume: %+v", s)
	}

	if tr.do(ctx, trayOpen, s) != nil || opened != 1 || tr.do(ctx, trayQuit, s) != nil || !quit {
		t.Fatalf("open and quit: opened %d, quit %v", opened, quit)
	}
}

func TestTray_WithoutAnAgent(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil) // nothing runs there
	n := walletsynctest.NewRecorder[Notification]()
	tr := &Tray{Endpoint: f.Endpoint, Notifier: n, Log: slog.New(slog.DiscardHandler)}
	ctx := walletsynctest.Wait(t)
	s := tr.state(ctx)
	if s.Reachable || !strings.HasPrefix(s.Health, "The walletsync agent is not reachable") || s.enabled(trayBackUp) || s.enabled(trayPause) || !s.enabled(trayOpen) {
		t.Fatalf("state = %+v", s)
	}
	if err := tr.do(ctx, trayBackUp, s); !errors.Is(err, api.ErrAgentNotRunning) {
		t.Fatalf("Back up now = %v; want ErrAgentNotRunning", err)
	}
	if note := n.Next(t); note.Title != "Back up now failed" {
		t.Fatalf("notification = %+v", note)
	}
}

func TestTray_WatchFollowsTheAgent(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, nil))
	f.StartAgent(t)
	tr := &Tray{Endpoint: f.Endpoint, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(walletsynctest.Wait(t))
	shown := make(chan trayState, 16)
	done := make(chan struct{})
	go func() { defer close(done); tr.watch(ctx, func(s trayState) { shown <- s }) }()
	defer func() { cancel(); <-done }()

	if s := <-shown; !s.Reachable || !s.Paused || !s.PausedUntil.IsZero() {
		t.Fatalf("first state = %+v", s)
	}
	// The pause comes from elsewhere (the dashboard); the tray learns of it from the
	// event stream. Until the stream is open a pause may be missed, so pause until the
	// tray shows it.
	for {
		if _, err := f.Client(t).PauseAll(ctx, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-shown:
			if s.Paused && s.PausedUntil.After(time.Now().Add(time.Hour)) {
				return
			}
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the tray never showed the pause")
		}
	}
}

func TestTray_OpensTheDashboardLoggedIn(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	f.StartAgent(t)
	var browser http.Client
	browser.Jar, _ = cookiejar.New(nil)
	open := BrowserDashboard(f.Endpoint, func(ctx context.Context, url string) error {
		resp, err := browser.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		// Logged in: the cookie alone now opens the API.
		e, _ := f.Dir.Endpoint()
		resp, err = browser.Get("http://" + e.Addr + "/api/v1/status")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New("not logged in: " + resp.Status)
		}
		return nil
	})
	if err := open(walletsynctest.Wait(t)); err != nil {
		t.Fatal(err)
	}
}
