package desktop

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/testkit/walletsynctest"
)

// TestAlertNotes_OnceThenAfterADay: a late destination is told once, again only after a
// day, and at once when it is late again after it recovered; failing ones are left to the
// task's own notification.
func TestAlertNotes_OnceThenAfterADay(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	late := func(id string) api.Alert {
		return api.Alert{Destination: id, Kind: api.AlertLate, Text: "Backups to " + id + " are late.", Fix: "Run it now."}
	}
	failing := api.Alert{Destination: "usb", Kind: api.AlertFailing, Text: "Backups to usb are failing."}
	steps := []struct {
		name   string
		at     time.Duration
		alerts []api.Alert
		want   []string // the destinations notified
	}{
		{"first late", 0, []api.Alert{late("a"), failing}, []string{"a"}},
		{"still late, an hour on", time.Hour, []api.Alert{late("a")}, nil},
		{"a second one", 2 * time.Hour, []api.Alert{late("a"), late("b")}, []string{"b"}},
		{"a day after the first", 24 * time.Hour, []api.Alert{late("a"), late("b")}, []string{"a"}},
		{"a recovered", 25 * time.Hour, []api.Alert{late("b")}, nil},
		{"a late again", 26 * time.Hour, []api.Alert{late("a"), late("b")}, []string{"a", "b"}},
	}
	notes := alertNotes{}
	for _, st := range steps {
		got := notes.due(st.alerts, t0.Add(st.at))
		var ids []string
		for _, n := range got {
			if n.Title != "Backup late" || !strings.HasSuffix(n.Body, "are late. Run it now.") {
				t.Errorf("%s: notification %+v", st.name, n)
			}
			ids = append(ids, strings.TrimSuffix(strings.TrimPrefix(n.Body, "Backups to "), " are late. Run it now."))
		}
		if strings.Join(ids, ",") != strings.Join(st.want, ",") {
			t.Errorf("%s: notified %v, want %v", st.name, ids, st.want)
		}
	}
}

// notes records the notifications shown, for tests that also need to see none.
type notes struct{ shown []Notification }

func (n *notes) Notify(_ context.Context, note Notification) error {
	n.shown = append(n.shown, note)
	return nil
}

// TestTray_LateDestinationIsRedAndToldOnce runs a real agent whose clock runs two days
// ahead after a good backup: the tray's icon turns red, and the late notification is
// shown once, then again after a day.
func TestTray_LateDestinationIsRedAndToldOnce(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, nil))
	var ahead atomic.Int64
	opts := f.Options()
	opts.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	a, err := agent.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	ctx := walletsynctest.Wait(t)
	task, err := f.Client(t).Run(ctx, "good-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := walletsynctest.WaitTask(t, f.Client(t), task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("run: %+v", got)
	}
	shown := &notes{}
	var trayAhead atomic.Int64
	tr := &Tray{Endpoint: f.Endpoint, Notifier: shown, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Now().Add(time.Duration(trayAhead.Load())) }}
	seen := alertNotes{}

	s := tr.state(ctx)
	tr.notifyAlerts(ctx, seen, s)
	if s.icon() != iconOK || len(shown.shown) != 0 {
		t.Fatalf("just backed up: icon %s, notified %+v", s.icon(), shown.shown)
	}
	ahead.Store(int64(48 * time.Hour))
	s = tr.state(ctx)
	tr.notifyAlerts(ctx, seen, s)
	tr.notifyAlerts(ctx, seen, tr.state(ctx))
	if s.icon() != iconAlert || len(shown.shown) != 1 || !strings.HasPrefix(shown.shown[0].Body, "Backups to Backup wallet (") {
		t.Fatalf("two days on: icon %s, notified %+v", s.icon(), shown.shown)
	}
	trayAhead.Store(int64(alertRepeat))
	tr.notifyAlerts(ctx, seen, tr.state(ctx))
	if len(shown.shown) != 2 {
		t.Fatalf("a day later: notified %+v, want the reminder", shown.shown)
	}
}
