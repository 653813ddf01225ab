package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"walletsync/agent/api"
)

// ErrNoTray: the system has no tray (notification area, menu bar extra, StatusNotifierItem
// host) that walletsync can show an icon in.
var ErrNoTray = errors.New("no system tray")

// trayAction is one entry of the tray menu that does something.
type trayAction int

// The tray's actions, in menu order.
const (
	trayBackUp trayAction = iota // run every destination now
	trayPause                    // pause every destination for an hour, or resume them
	trayOpen                     // open the dashboard
	trayQuit                     // end the tray (and the window, in the desktop build)
)

// trayActions are the tray's actions in menu order.
var trayActions = []trayAction{trayBackUp, trayPause, trayOpen, trayQuit}

// trayPauseFor is how long "Pause for 1 hour" pauses.
const trayPauseFor = time.Hour

// trayRefreshEvery re-reads the overview while nothing happens, because its sentence
// ages ("backed up 3 minutes ago").
const trayRefreshEvery = time.Minute

// alertRepeat is how long the tray waits before it says again that a destination is late,
// while it stays late: once a day is a reminder, more often is nagging.
const alertRepeat = 24 * time.Hour

// trayState is what the tray shows: the overview's health sentence and which actions make
// sense now.
type trayState struct {
	Health  string
	Healthy bool
	// Reachable: the agent answered. Without it only Open dashboard and Quit are offered.
	Reachable bool
	// Destinations is how many destinations there are to back up to.
	Destinations int
	// PausedUntil is set when every destination is paused: the time the pause ends, zero
	// for "until resumed". The pause entry then offers to resume.
	Paused      bool
	PausedUntil time.Time
	// Alerts are the destinations that are late or failing (the overview's): the icon is
	// red while there is any.
	Alerts []api.Alert
}

// icon is which tray icon state s shows.
func (s trayState) icon() trayIconKind {
	switch {
	case len(s.Alerts) > 0:
		return iconAlert
	case s.Healthy:
		return iconOK
	}
	return iconAttention
}

// trayIconKind is one of the tray's icons.
type trayIconKind string

// The tray's icons, named as their files in build/tray.
const (
	iconOK        trayIconKind = "ok"        // backed up everywhere
	iconAttention trayIconKind = "attention" // amber: not backed up yet, paused, unreachable
	iconAlert     trayIconKind = "alert"     // red: a destination is late or failing
)

// label returns an action's menu text in state s.
func (s trayState) label(a trayAction) string {
	switch a {
	case trayBackUp:
		return "Back up now"
	case trayPause:
		switch {
		case !s.Paused:
			return "Pause for 1 hour"
		case s.PausedUntil.IsZero():
			return "Resume backups (paused)"
		}
		return "Resume backups (paused until " + s.PausedUntil.Local().Format("15:04") + ")"
	case trayOpen:
		return "Open dashboard"
	}
	return "Quit"
}

// enabled reports whether an action makes sense in state s.
func (s trayState) enabled(a trayAction) bool {
	switch a {
	case trayBackUp, trayPause:
		return s.Reachable && s.Destinations > 0
	}
	return true
}

// Tray is the tray icon's logic, kept apart from the system tray library (tray_systray.go
// draws it) so that it is tested against a real agent: what the icon says, and what each
// menu entry asks the agent. It is the same in the desktop build, where Open dashboard
// shows the window, and in `walletsync tray`, where it opens the browser.
type Tray struct {
	// Endpoint finds the agent; it is asked again for every request.
	Endpoint EndpointFunc
	// Open opens the dashboard; Quit ends the tray (and the window).
	Open func(ctx context.Context) error
	Quit func()
	// Notifier, when set, reports actions that failed: a tray has no other place to say so.
	Notifier Notifier
	Log      *slog.Logger // required
	// Now is the clock that spaces the late notifications (time.Now when nil).
	Now func() time.Time
}

// alertNotes remembers when the tray last said that each destination is late, so that it
// says it once and again after alertRepeat. Only the goroutine of watch uses it.
type alertNotes map[string]time.Time

// due returns the notifications alerts deserve at now and records them. It covers late
// destinations only: a failed run has its own notification as it ends (NotifyEvents). A
// destination that is no longer late is forgotten, so that it is told again at once when
// it is late again.
func (m alertNotes) due(alerts []api.Alert, now time.Time) []Notification {
	late := map[string]bool{}
	var notes []Notification
	for _, a := range alerts {
		if a.Kind != api.AlertLate {
			continue
		}
		late[a.Destination] = true
		if last, ok := m[a.Destination]; ok && now.Sub(last) < alertRepeat {
			continue
		}
		m[a.Destination] = now
		notes = append(notes, Notification{Title: "Backup late", Body: a.Text + " " + a.Fix})
	}
	for id := range m {
		if !late[id] {
			delete(m, id)
		}
	}
	return notes
}

// notifyAlerts shows the notifications that s's alerts deserve (see alertNotes.due).
func (t *Tray) notifyAlerts(ctx context.Context, notes alertNotes, s trayState) {
	if t.Notifier == nil || !s.Reachable {
		return
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	for _, n := range notes.due(s.Alerts, now()) {
		if err := t.Notifier.Notify(ctx, n); err != nil {
			t.Log.Warn("desktop notification not shown", "title", n.Title, "err", err)
		}
	}
}

// state reads the overview and returns what the tray shows. An agent that cannot be
// reached is a state too, with the reason as its sentence.
func (t *Tray) state(ctx context.Context) trayState {
	c, err := t.client(ctx)
	var ov api.Overview
	if err == nil {
		ov, err = c.Overview(ctx)
	}
	if err != nil {
		return trayState{Health: "The walletsync agent is not reachable: " + err.Error()}
	}
	s := trayState{Health: ov.Health, Healthy: ov.Healthy, Reachable: true, Destinations: len(ov.Destinations), Alerts: ov.Alerts}
	s.Paused = len(ov.Destinations) > 0
	for _, d := range ov.Destinations {
		if !d.Paused {
			s.Paused = false
			break
		}
		if d.Pause != nil && d.Pause.Until.After(s.PausedUntil) {
			s.PausedUntil = d.Pause.Until
		}
	}
	return s
}

// do runs action a as the menu shows it in state s. An action that fails is reported
// through the notifier as well as returned.
func (t *Tray) do(ctx context.Context, a trayAction, s trayState) error {
	var err error
	switch a {
	case trayBackUp:
		_, err = t.backUpNow(ctx)
	case trayPause:
		err = t.pauseOrResume(ctx, s.Paused)
	case trayOpen:
		err = t.Open(ctx)
	case trayQuit:
		t.Quit()
	}
	if err != nil && t.Notifier != nil {
		if nerr := t.Notifier.Notify(ctx, Notification{Title: s.label(a) + " failed", Body: err.Error()}); nerr != nil {
			t.Log.Warn("desktop notification not shown", "err", nerr)
		}
	}
	return err
}

// backUpNow asks the agent to bring every destination up to date now and returns the
// tasks it started. It asks for each one even when an earlier one is refused, and
// returns the refusals together.
func (t *Tray) backUpNow(ctx context.Context) ([]api.Task, error) {
	c, err := t.client(ctx)
	if err != nil {
		return nil, err
	}
	dests, err := c.Destinations(ctx)
	if err != nil {
		return nil, err
	}
	var tasks []api.Task
	var errs []error
	for _, d := range dests {
		task, err := c.Run(ctx, d.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("back up to %s: %w", d.Name, err))
			continue
		}
		tasks = append(tasks, task)
	}
	return tasks, errors.Join(errs...)
}

// pauseOrResume pauses every destination for trayPauseFor, or resumes them all when
// paused.
func (t *Tray) pauseOrResume(ctx context.Context, paused bool) error {
	c, err := t.client(ctx)
	if err != nil {
		return err
	}
	if paused {
		_, err = c.ResumeAll(ctx)
	} else {
		_, err = c.PauseAll(ctx, trayPauseFor)
	}
	return err
}

// watch calls show with the tray's state now, then again after every event that can change
// it and every trayRefreshEvery, until ctx ends, and notifies of late destinations (once,
// then again after alertRepeat). show runs on watch's goroutine.
func (t *Tray) watch(ctx context.Context, show func(trayState)) {
	changed := make(chan struct{}, 1) // 1-buffered: a burst of events costs one refresh
	var following sync.WaitGroup
	defer following.Wait()
	following.Go(func() {
		// It returns only ctx's end, which the loop below sees for itself.
		_ = followEvents(ctx, t.Endpoint, "", t.Log, func(ev api.StreamedEvent) {
			if ev.Type == api.EventTaskProgress || ev.Type == api.EventTaskLog {
				return // progress never changes the sentence; the end of the task does
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	})
	tick := time.NewTicker(trayRefreshEvery)
	defer tick.Stop()
	notes := alertNotes{}
	for {
		s := t.state(ctx)
		show(s)
		t.notifyAlerts(ctx, notes, s)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func (t *Tray) client(ctx context.Context) (*api.Client, error) {
	e, err := t.Endpoint(ctx)
	if err != nil {
		return nil, err
	}
	return api.NewClient(e), nil
}

// BrowserDashboard returns an opener that logs the person's browser in to the agent's
// dashboard: it asks for a one-time login URL (POST /api/v1/login-url), so that the token
// never appears in the browser's history, and hands it to open (OpenURL).
func BrowserDashboard(endpoint EndpointFunc, open func(ctx context.Context, url string) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		e, err := endpoint(ctx)
		if err != nil {
			return err
		}
		url, err := api.NewClient(e).LoginURL(ctx)
		if err != nil {
			return err
		}
		return open(ctx, url)
	}
}

// OpenURL opens url in the person's default browser.
func OpenURL(ctx context.Context, url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", url)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.CommandContext(ctx, "xdg-open", url)
	}
	// Run, not Output: a browser that the opener starts may inherit a pipe and keep it
	// open for as long as it runs.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("open the browser (%s): %w", cmd.Path, err)
	}
	return nil
}
