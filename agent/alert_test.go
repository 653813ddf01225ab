package agent

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
)

// TestLateAt_FollowsTheSchedule: a destination is late after its schedule's interval plus
// half of it, at least 15 minutes; never, when it never succeeded or (on change) when the
// wallet was not written since.
func TestLateAt_FollowsTheSchedule(t *testing.T) {
	good := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule api.Schedule
		success  time.Time
		write    time.Time
		want     time.Time
	}{
		{"hourly", api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, good, time.Time{}, good.Add(90 * time.Minute)},
		{"every 5 minutes: the 15-minute floor", api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(5 * time.Minute)}, good, time.Time{}, good.Add(20 * time.Minute)},
		{"daily", api.Schedule{Kind: api.ScheduleDaily, At: "04:00"}, good, time.Time{}, good.Add(36 * time.Hour)},
		{"on change, written after", api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(30 * time.Second)}, good, good.Add(time.Hour), good.Add(time.Hour + 20*time.Minute)},
		{"on change, default debounce", api.Schedule{Kind: api.ScheduleChange}, good, good.Add(time.Hour), good.Add(time.Hour + 20*time.Minute)},
		{"on change, nothing written since", api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(30 * time.Second)}, good, good.Add(-time.Minute), time.Time{}},
		{"never succeeded", api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, time.Time{}, time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := api.DestinationView{Destination: api.Destination{Schedule: tt.schedule}, LastSuccess: tt.success}
			if got := lateAt(v, tt.write); !got.Equal(tt.want) {
				t.Fatalf("lateAt = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAlertFor_RedOnlyWhenLateOrFailing: the red state names the destination and the fix;
// a destination that never succeeded (amber) or is within its margin has none.
func TestAlertFor_RedOnlyWhenLateOrFailing(t *testing.T) {
	good := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	hourly := api.Destination{ID: "usb", Name: "USB disk", Path: "/media/usb", Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}}
	view := func(change func(*api.DestinationView)) api.DestinationView {
		v := api.DestinationView{Destination: hourly, LastSuccess: good}
		change(&v)
		v.LateAt = lateAt(v, time.Time{})
		return v
	}
	tests := []struct {
		name string
		v    api.DestinationView
		now  time.Time
		kind api.AlertKind // "" for none
		want []string      // in Text + " " + Fix
	}{
		{"on time", view(func(*api.DestinationView) {}), good.Add(time.Hour), "", nil},
		{"within the margin", view(func(*api.DestinationView) {}), good.Add(90*time.Minute - time.Second), "", nil},
		{"late", view(func(*api.DestinationView) {}), good.Add(3 * time.Hour), api.AlertLate,
			[]string{"Backups to USB disk (/media/usb) are late: the last good backup was 3 hours ago, and one is expected every 1 hour.", "walletsync run usb"}},
		{"late and paused", view(func(v *api.DestinationView) { v.Paused = true }), good.Add(3 * time.Hour), api.AlertLate,
			[]string{"are late", "It is paused: resume it", "walletsync resume usb"}},
		{"late and running", view(func(v *api.DestinationView) { v.Running = &api.Task{} }), good.Add(3 * time.Hour), api.AlertLate,
			[]string{"are late", "A backup is running there now"}},
		{"failing, with the task's hint", view(func(v *api.DestinationView) {
			v.LastFailure, v.LastMessage, v.LastHint = good.Add(time.Hour), "the disk is not plugged in", "plug the disk in"
		}), good.Add(time.Hour), api.AlertFailing, []string{"Backups to USB disk (/media/usb) are failing since", "the disk is not plugged in", "plug the disk in"}},
		{"failing, never succeeded", view(func(v *api.DestinationView) {
			v.LastSuccess, v.LastFailure, v.LastError = time.Time{}, good, "open: no such file"
		}), good, api.AlertFailing, []string{"are failing", "open: no such file", "Open Destinations"}},
		{"never succeeded: amber, not red", view(func(v *api.DestinationView) { v.LastSuccess = time.Time{} }), good.Add(100 * time.Hour), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := alertFor(tt.v, tt.now)
			if tt.kind == "" {
				if a != nil {
					t.Fatalf("alert %+v, want none", a)
				}
				return
			}
			if a == nil || a.Kind != tt.kind || a.Destination != "usb" {
				t.Fatalf("alert %+v, want %s for usb", a, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.Text+" "+a.Fix, w) {
					t.Errorf("%q lacks %q", a.Text+" "+a.Fix, w)
				}
			}
		})
	}
}

// TestOverview_LateDestinationTurnsRed runs a real agent on a held clock: after a good
// backup the overview has no alert; once the clock passes the hourly schedule's margin the
// destination is late, in the overview's alerts, its health and its view.
func TestOverview_LateDestinationTurnsRed(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	var ahead atomic.Int64
	e.opts.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	if task := runAndWait(t, c, a, api.RouteRun, "file"); task.State != api.TaskSucceeded {
		t.Fatalf("run: %+v", task)
	}
	ov, err := c.Overview(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Alerts) != 0 || ov.Destinations[0].LateAt.IsZero() {
		t.Fatalf("just backed up: alerts %+v, late at %v", ov.Alerts, ov.Destinations[0].LateAt)
	}
	ahead.Store(int64(2 * time.Hour))
	if ov, err = c.Overview(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if len(ov.Alerts) != 1 || ov.Alerts[0].Destination != "file" || ov.Alerts[0].Kind != api.AlertLate || ov.Destinations[0].Alert == nil {
		t.Fatalf("two hours on: alerts %+v", ov.Alerts)
	}
	if ov.Healthy || !strings.HasPrefix(ov.Health, "Backups to Backup wallet (") || !strings.Contains(ov.Health, "are late") {
		t.Fatalf("two hours on: health %q (healthy %v)", ov.Health, ov.Healthy)
	}
}

// TestExpectation_InWords: how often a schedule expects a backup, as the alert says it.
func TestExpectation_InWords(t *testing.T) {
	tests := []struct {
		schedule api.Schedule
		want     string
	}{
		{api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, "every 1 hour"},
		{api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(90 * time.Minute)}, "every 90 minutes"},
		{api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(72 * time.Hour)}, "every 3 days"},
		{api.Schedule{Kind: api.ScheduleDaily, At: "04:00"}, "every day"},
		{api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(30 * time.Second)}, "within 5 minutes of a change to the wallet"},
		{api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(2 * time.Second)}, "within 20 seconds of a change to the wallet"},
	}
	for _, tt := range tests {
		if got := expectation(tt.schedule); got != tt.want {
			t.Errorf("expectation(%+v) = %q, want %q", tt.schedule, got, tt.want)
		}
	}
}
