package api

import (
	"encoding/json"
	"time"
	"walletsync/syncer"
)

// Task kinds of a restore from a storage server.
const (
	// KindServerPreview pulls what a storage server holds for the signer's identity into a
	// private staging wallet and counts it, table by table; the wallet is not touched.
	KindServerPreview TaskKind = "server-preview"
	// KindServerRestore merges a preview's staged rows into the wallet.
	KindServerRestore TaskKind = "server-restore"
)

// TaskState is where a task is in its life. The strings are a wire format (API, events,
// state database) and never change.
type TaskState string

// A task goes queued -> running -> (cancelling ->) one terminal state. A task whose target
// is free skips queued.
const (
	TaskQueued     TaskState = "queued"     // waiting for the task running on its target
	TaskRunning    TaskState = "running"    // its job is running
	TaskCancelling TaskState = "cancelling" // cancel was asked; the job stops at its next safe point
	TaskCancelled  TaskState = "cancelled"  // stopped by a cancel, or cancelled while queued
	TaskSucceeded  TaskState = "succeeded"  // its job returned nil
	TaskFailed     TaskState = "failed"     // its job returned an error; Error and Hint say which
	// TaskInterrupted: the agent stopped, or died, before the task ended. Work the job had
	// acknowledged is kept; running it again resumes from there.
	TaskInterrupted TaskState = "interrupted"
)

// Terminal reports whether s ends a task.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskCancelled, TaskSucceeded, TaskFailed, TaskInterrupted:
		return true
	}
	return false
}

// TaskKind says what a task's job does. The strings are a wire format (API, events, the
// state database's task history, the dashboard) and never change.
type TaskKind string

// Task kinds.
const (
	KindSync          TaskKind = "sync"           // bring a SQLite backup wallet up to date
	KindBackup        TaskKind = "backup"         // write an encrypted BRC-39 file into a backup folder
	KindBundle        TaskKind = "bundle"         // write a whole-store bundle into a bundle folder
	KindExport        TaskKind = "export"         // write one BRC-39 file where the person asked
	KindDrill         TaskKind = "drill"          // restore the newest backups into scratch wallets
	KindImportPreview TaskKind = "import-preview" // decrypt a backup file and show what an import would do
	KindImport        TaskKind = "import"         // merge or restore a backup file into a wallet
	KindImportAbandon TaskKind = "import-abandon" // take back an unfinished merge of a backup file
	KindVerify        TaskKind = "verify"         // decrypt and validate one backup file of a folder
	KindBundleRestore TaskKind = "bundle-restore" // replace a wallet with a whole-store bundle
)

// String returns k's wire string.
func (k TaskKind) String() string { return string(k) }

// Task is a snapshot of one task. Snapshots are values: later changes never alter one.
type Task struct {
	ID     string    `json:"id"`
	Kind   TaskKind  `json:"kind"`   // what the job does
	Target string    `json:"target"` // what it works on: a destination id; one running task per target
	State  TaskState `json:"state"`
	// Detail is the job's own word for where it is ("committing outputs").
	Detail   string          `json:"detail,omitempty"`
	Counters syncer.Counters `json:"counters"`
	// Total is how many rows the job expects to move, 0 when unknown; the ETA needs it.
	Total int64 `json:"total,omitempty"`
	// RowsPerSec and BytesPerSec: over the sliding window (see stats.RateSpan) while the task
	// runs, the whole run's average once it has ended.
	RowsPerSec  float64 `json:"rowsPerSec"`
	BytesPerSec float64 `json:"bytesPerSec"`
	// ETASeconds is the time left at the current rate, 0 when unknown.
	ETASeconds int64     `json:"etaSeconds,omitempty"`
	QueuedAt   time.Time `json:"queuedAt"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Error and Hint say why a task failed or was interrupted, and what to do about it.
	// Error is the technical text; Message says it in plain words and Path names the path
	// involved, when walletsync knows the failure (see Explanation).
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	Path    string `json:"path,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// Result is what the job produced, as JSON (a sync's checkpoint, a backup file's path
	// and SHA-256, an import preview); absent until the job sets it.
	Result json.RawMessage `json:"result,omitempty"`
	// Place is the fingerprint of the place a destination's run worked on (its kind, path or
	// URL, and signer); a destination's last good backup counts only the runs of the place
	// it names now. Empty for tasks that work on no destination.
	Place string `json:"place,omitempty"`
}

// LogLine is one line of a task's log.
type LogLine struct {
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// TaskLog is the Data of an EventTaskLog event.
type TaskLog struct {
	TaskID string  `json:"taskId"`
	Line   LogLine `json:"line"`
}

// Skipped returns why a finished restore drill checked nothing (DrillResult.Skipped: no
// backup existed yet), or "" for any other task: a skipped drill proved nothing, so the
// agent runs it again after the first backup and the task list says so.
func (t Task) Skipped() string {
	var res DrillResult
	if t.Kind != KindDrill || json.Unmarshal(t.Result, &res) != nil {
		return ""
	}
	return res.Skipped
}
