package agent

import (
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"
)

// TestHealth_NamesWhatIsWrong: the banner names the destination that never succeeded or
// fails, with its path, and a warning never reads as plain good news.
func TestHealth_NamesWhatIsWrong(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)
	ok := func(name string) api.DestinationView {
		return api.DestinationView{Destination: api.Destination{Name: name, Path: "/b/" + name}, LastSuccess: now}
	}
	never := api.DestinationView{Destination: api.Destination{Name: "USB", Path: "/media/usb"}}
	failing := api.DestinationView{Destination: api.Destination{Name: "Cloud", Path: "/cloud"}, LastFailure: now, LastError: "the folder is missing"}
	paused := ok("Disk")
	paused.Paused = true
	running := never
	late := ok("Old")
	late.ID, late.LastSuccess, late.Schedule = "old", now.Add(-3*time.Hour), api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}
	late.LateAt = lateAt(late, time.Time{})
	running.Running = &api.Task{}
	tests := []struct {
		name    string
		dests   []api.DestinationView
		want    []string
		healthy bool
	}{
		{"all good", []api.DestinationView{ok("A"), ok("B")}, []string{"Backed up just now to 2 destinations."}, true},
		{"one never", []api.DestinationView{ok("A"), ok("B"), ok("C"), never}, []string{"to 3 of 4 destinations", "USB (/media/usb) has never completed a backup"}, false},
		{"first run", []api.DestinationView{ok("A"), running}, []string{"USB (/media/usb): the first backup is running"}, false},
		{"failing", []api.DestinationView{ok("A"), failing}, []string{"Backups to Cloud (/cloud) are failing", "the folder is missing", "Open Destinations"}, false},
		{"late", []api.DestinationView{ok("A"), late}, []string{"Backups to Old (/b/Old) are late: the last good backup was 3 hours ago, and one is expected every 1 hour.", "walletsync run old"}, false},
		{"paused", []api.DestinationView{ok("A"), paused}, []string{"Paused: Disk."}, true},
		{"none yet", []api.DestinationView{never}, []string{"Not backed up yet.", "USB (/media/usb)"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.dests {
				tt.dests[i].Alert = alertFor(tt.dests[i], now)
			}
			text, healthy := health(api.Overview{Wallets: []api.WalletView{{Path: "/w"}}, Destinations: tt.dests}, now)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
			if healthy != tt.healthy {
				t.Errorf("%q: healthy %v, want %v", text, healthy, tt.healthy)
			}
		})
	}
}
