package desktop

import (
	"encoding/json"
	"testing"

	"walletsync/agent/api"
)

func TestNotificationFor(t *testing.T) {
	finished := func(kind api.TaskKind, state api.TaskState) api.StreamedEvent {
		b, err := json.Marshal(api.Task{ID: "t1", Kind: kind, Target: "usb", State: state, Error: "disk full", Hint: "Free some space."})
		if err != nil {
			t.Fatal(err)
		}
		return api.StreamedEvent{Type: api.EventTaskFinished, Data: b}
	}
	names := func(id string) string { return map[string]string{"usb": "USB stick"}[id] }
	tests := []struct {
		name  string
		ev    api.StreamedEvent
		title string // "" for no notification
		body  string
	}{
		{"failed sync", finished(api.KindSync, api.TaskFailed), "Backup failed", "The backup to USB stick failed: disk full Free some space."},
		{"failed backup file", finished(api.KindBackup, api.TaskFailed), "Backup failed", "The backup to USB stick failed: disk full Free some space."},
		{"finished restore", finished(api.KindImport, api.TaskSucceeded), "Restore finished", "Your wallet has been restored from the backup file."},
		{"failed restore", finished(api.KindImport, api.TaskFailed), "Restore failed", "Nothing was changed in your wallet: disk full Free some space."},
		{"good backup", finished(api.KindBackup, api.TaskSucceeded), "", ""},
		{"cancelled backup", finished(api.KindSync, api.TaskCancelled), "", ""},
		{"interrupted backup", finished(api.KindSync, api.TaskInterrupted), "", ""},
		{"failed export", finished(api.KindExport, api.TaskFailed), "", ""},
		{"a start is no end", api.StreamedEvent{Type: api.EventTaskStarted, Data: finished(api.KindSync, api.TaskFailed).Data}, "", ""},
		{"undecodable", api.StreamedEvent{Type: api.EventTaskFinished, Data: json.RawMessage(`"x"`)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := notificationFor(tt.ev, names)
			if ok != (tt.title != "") || n.Title != tt.title || n.Body != tt.body {
				t.Fatalf("notificationFor = %+v, %v; want %q %q", n, ok, tt.title, tt.body)
			}
		})
	}
}
