package agent

import (
	"strings"
	"testing"
	"time"
)

// TestHealth_NamesWhatIsWrong: the banner names the destination that never succeeded or
// fails, with its path, and a warning never reads as plain good news.
func TestHealth_NamesWhatIsWrong(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)
	ok := func(name string) DestinationView {
		return DestinationView{Destination: Destination{Name: name, Path: "/b/" + name}, LastSuccess: now}
	}
	never := DestinationView{Destination: Destination{Name: "USB", Path: "/media/usb"}}
	failing := DestinationView{Destination: Destination{Name: "Cloud", Path: "/cloud"}, LastFailure: now, LastError: "the folder is missing"}
	paused := ok("Disk")
	paused.Paused = true
	running := never
	running.Running = &Task{}
	tests := []struct {
		name    string
		dests   []DestinationView
		want    []string
		healthy bool
	}{
		{"all good", []DestinationView{ok("A"), ok("B")}, []string{"Backed up just now to 2 destinations."}, true},
		{"one never", []DestinationView{ok("A"), ok("B"), ok("C"), never}, []string{"to 3 of 4 destinations", "USB (/media/usb) has never completed a backup"}, false},
		{"first run", []DestinationView{ok("A"), running}, []string{"USB (/media/usb): the first backup is running"}, false},
		{"failing", []DestinationView{ok("A"), failing}, []string{"Backups to Cloud (/cloud) are failing", "the folder is missing"}, false},
		{"paused", []DestinationView{ok("A"), paused}, []string{"Paused: Disk."}, true},
		{"none yet", []DestinationView{never}, []string{"Not backed up yet.", "USB (/media/usb)"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, healthy := health(Overview{Wallets: []WalletView{{Path: "/w"}}, Destinations: tt.dests}, now)
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
