package api

import "time"

// EventType names what an event reports. The strings are a wire format: the dashboard, the
// SSE stream and the state database's event log use them, so they never change.
type EventType string

// Event types. Task events carry a Task snapshot; task.log carries a TaskLog.
const (
	EventTaskQueued   EventType = "task.queued"   // a task waits for another on its target
	EventTaskStarted  EventType = "task.started"  // a task began running
	EventTaskProgress EventType = "task.progress" // counters, detail or cancelling (throttled)
	EventTaskLog      EventType = "task.log"      // a line was appended to a task's log
	EventTaskFinished EventType = "task.finished" // a task reached a terminal state

	EventDestinationChanged EventType = "destination.changed" // a destination was added, edited, paused or removed
	EventBackupWritten      EventType = "backup.written"      // a backup file was written and renamed into place
	EventDrillFinished      EventType = "drill.finished"      // a restore drill passed or failed
	EventMetrics            EventType = "metrics"             // a wallet's foreground latency while a task runs (LatencyMetrics)

	// EventMissed is synthetic: a subscriber fell behind the ring, or asked for events
	// that are no longer retained. Its Data is a Missed.
	EventMissed EventType = "missed"
)

// Event is one thing that happened, numbered by the bus that published it.
type Event struct {
	// Seq is strictly increasing within one bus: 1, 2, 3... A missed event carries the
	// Seq of the last event it stands for, so that a client resuming from it continues
	// with the first event after the gap.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type EventType `json:"type"`
	Data any       `json:"data,omitempty"`
}

// Missed is the Data of an EventMissed event: the events First..Last (inclusive) were not
// delivered. A client that needs them asks again with since = First-1: they arrive if the
// ring still holds them; otherwise it reloads the state it shows (tasks, destinations).
type Missed struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	// Reset: the subscriber's cursor came from another bus (an earlier run of the agent),
	// so what it missed is unknown: reload everything. First and Last are zero.
	Reset bool `json:"reset,omitempty"`
}

// Directions of the background work a latency probe ran beside. The strings are a wire format.
const (
	// DirectionBackup: the wallet is read or copied out (syncs, backups, exports, drills).
	// A paged copy out takes no grant on the wallet.
	DirectionBackup = "backup"
	// DirectionRestore: rows are copied into the wallet (an import; a pull). Each page
	// commit holds a write grant on the wallet.
	DirectionRestore = "restore"
)

// LatencyMetrics is the payload of a metrics event: how long a small foreground read of
// one wallet took, waiting in its access queue included, over its last probes made while
// background work of one direction ran. It is what a wallet front end would feel while
// that work runs, and what the dashboard's "does background work slow the wallet?" plot
// draws, one line per direction. A probe made while work of both directions ran counts
// for both.
type LatencyMetrics struct {
	Wallet     string         `json:"wallet"`
	Direction  string         `json:"direction"` // DirectionBackup or DirectionRestore
	Foreground LatencySummary `json:"foreground"`
}

// LatencySummary is the median and 95th percentile of a set of durations, in milliseconds.
type LatencySummary struct {
	P50Ms   float64 `json:"p50Ms"`
	P95Ms   float64 `json:"p95Ms"`
	Samples int     `json:"samples"`
}
