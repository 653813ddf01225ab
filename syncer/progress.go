package syncer

import (
	"time"

	"walletsync/wallet"
)

// State is where a session is. The wire strings are stable: the agent's events and the
// dashboard use them.
type State string

// A page goes reading -> preparing -> committing -> committed; a session ends in exactly one
// terminal state.
const (
	StateReading    State = "reading"
	StatePreparing  State = "preparing"
	StateCommitting State = "committing"
	StateCommitted  State = "committed"
	StateCompleted  State = "completed"
	StateCancelled  State = "cancelled"
	StateFailed     State = "failed"
)

// Terminal reports whether s ends a session.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateCancelled || s == StateFailed
}

// Kind says what a session had to do.
type Kind string

const (
	// KindFull: every row of the user was traversed.
	KindFull Kind = "full"
	// KindIncremental: only rows the source's journal recorded as changed.
	KindIncremental Kind = "incremental"
	// KindUnchanged: the destination already held everything; no page was sent.
	KindUnchanged Kind = "unchanged"
)

// Access says how the session shared the store with foreground work.
type Access string

const (
	// AccessPaged: consistent views, one short grant per commit.
	AccessPaged Access = "paged"
	// AccessExclusive: the source offers no consistent views, so the session held one
	// exclusive grant for the whole copy.
	AccessExclusive Access = "exclusive"
)

// Timings of one page.
type Timings struct {
	Read      time.Duration `json:"read"`
	Prepare   time.Duration `json:"prepare"`
	QueueWait time.Duration `json:"queueWait"`
	Commit    time.Duration `json:"commit"`
}

// Counters are what a session has moved so far; only acknowledged pages count.
type Counters struct {
	Pages   int64 `json:"pages"`
	Rows    int64 `json:"rows"`
	Inserts int64 `json:"inserts"`
	Updates int64 `json:"updates"`
	Bytes   int64 `json:"bytes"`
	// Requests counts calls to the destination (descriptions, checkpoints, commits); in a
	// BRC-40 session (RunChunks), calls to either store.
	Requests int64 `json:"requests"`
	// Retries counts the attempts a BRC-40 session repeated because a store was unavailable.
	Retries int64 `json:"retries,omitempty"`
}

// Progress is one state change of a session.
type Progress struct {
	State State            `json:"state"`
	Kind  Kind             `json:"kind"`
	Table wallet.TableName `json:"table,omitempty"`
	// PageRows and PageBytes describe the page in flight.
	PageRows  int     `json:"pageRows"`
	PageBytes int64   `json:"pageBytes"`
	Timings   Timings `json:"timings"`
	Counters
	// Checkpoint is the last durable checkpoint.
	Checkpoint wallet.Checkpoint `json:"checkpoint"`
	// Total is the number of rows the session will move, when known (0: unknown).
	Total int64 `json:"total,omitempty"`
	// Err is set in the failed state.
	Err string `json:"error,omitempty"`
}

// Result is how a session ended.
type Result struct {
	State  State  `json:"state"`
	Kind   Kind   `json:"kind"`
	Access Access `json:"access"`
	Counters
	// Checkpoint is the last durable checkpoint at the destination.
	Checkpoint wallet.Checkpoint `json:"checkpoint"`
	Elapsed    time.Duration     `json:"elapsed"`
	// Resumed says how the run continued an unfinished one it found at the destination;
	// empty when there was none.
	Resumed Resume `json:"resumed,omitempty"`
	// CatchUpPages counts the pages, among Pages, that brought the tables before a resumed
	// position up to the new view.
	CatchUpPages int64 `json:"catchUpPages,omitempty"`
	// Resumable is true when the source keeps a change journal, so that the next run
	// continues a run that ended unfinished from Checkpoint. When false the next run begins
	// again at the first table: what already landed is merged again, never duplicated, but
	// it is read and sent again.
	Resumable bool `json:"resumable"`
}

// Resume says how a run continued an unfinished run of its session.
type Resume string

const (
	// ResumeCheckpoint: the run continued at the checkpoint's table and cursor, after
	// catching up from the source's change journal what changed since the checkpoint's view.
	ResumeCheckpoint Resume = "checkpoint"
	// ResumeFirstTable: the run began again at the first table, because the source keeps no
	// change journal or its journal no longer covers the checkpoint's view.
	ResumeFirstTable Resume = "first-table"
)
