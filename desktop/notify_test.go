package desktop

import (
	"encoding/json"
	"testing"

	"walletsync/agent"
)

func TestNotificationFor(t *testing.T) {
	finished := func(kind agent.TaskKind, state agent.TaskState) agent.StreamedEvent {
		b, err := json.Marshal(agent.Task{ID: "t1", Kind: kind, Target: "usb", State: state, Error: "disk full", Hint: "Free some space."})
		if err != nil {
			t.Fatal(err)
		}
		return agent.StreamedEvent{Type: agent.EventTaskFinished, Data: b}
	}
	names := func(id string) string { return map[string]string{"usb": "USB stick"}[id] }
	tests := []struct {
		name  string
		ev    agent.StreamedEvent
		title string // "" for no notification
		body  string
	}{
		{"failed sync", finished(agent.KindSync, agent.TaskFailed), "Backup failed", "The backup to USB stick failed: disk full Free some space."},
		{"failed backup file", finished(agent.KindBackup, agent.TaskFailed), "Backup failed", "The backup to USB stick failed: disk full Free some space."},
		{"finished restore", finished(agent.KindImport, agent.TaskSucceeded), "Restore finished", "Your wallet has been restored from the backup file."},
		{"failed restore", finished(agent.KindImport, agent.TaskFailed), "Restore failed", "Nothing was changed in your wallet: disk full Free some space."},
		{"good backup", finished(agent.KindBackup, agent.TaskSucceeded), "", ""},
		{"cancelled backup", finished(agent.KindSync, agent.TaskCancelled), "", ""},
		{"interrupted backup", finished(agent.KindSync, agent.TaskInterrupted), "", ""},
		{"failed export", finished(agent.KindExport, agent.TaskFailed), "", ""},
		{"a start is no end", agent.StreamedEvent{Type: agent.EventTaskStarted, Data: finished(agent.KindSync, agent.TaskFailed).Data}, "", ""},
		{"undecodable", agent.StreamedEvent{Type: agent.EventTaskFinished, Data: json.RawMessage(`"x"`)}, "", ""},
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
