package wallet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The sync contract. A session moves one user's rows from a Source to a Destination one
// bounded page at a time. The destination commits each page together with the session's
// checkpoint in one transaction and acknowledges it; the durable checkpoint lives at the
// destination, so a session that lost its process, its view or an acknowledgement asks the
// destination where it stands and resumes from there, never from its own counters.
//
// Every value here is plain data that serializes to JSON, because sources and destinations
// sit on the far side of a network as often as in this process.

// SessionKey names a session: one user's data from one source store. A destination keeps
// one checkpoint per key.
type SessionKey struct {
	SourceStorage string `json:"sourceStorage"` // the source's storageIdentityKey
	IdentityKey   string `json:"identityKey"`   // the user whose rows move
}

func (k SessionKey) String() string {
	return ShortKey(k.IdentityKey, 12) + " from " + ShortKey(k.SourceStorage, 12)
}

// SyncMode says what a session traverses.
type SyncMode string

const (
	// ModeFull traverses every row of the user, table by table in SyncOrder.
	ModeFull SyncMode = "full"
	// ModeIncremental traverses only rows the source's change journal records above Since.
	ModeIncremental SyncMode = "incremental"
)

// Checkpoint is a session's durable position at the destination. The zero Checkpoint (Seq
// 0) means the destination has seen nothing of this session.
type Checkpoint struct {
	Session SessionKey `json:"session"`
	// Seq counts the pages committed by this session; each commit moves it by one.
	Seq  int64    `json:"seq"`
	Mode SyncMode `json:"mode"`
	// Since is, in ModeIncremental, the journal sequence the run reads changes above.
	Since int64 `json:"since"`
	// HighWater is the source journal sequence of the view the run reads: every change at
	// or below it is at the destination for the tables before Table and the rows of Table
	// up to Cursor, and, once Done, for everything.
	HighWater int64 `json:"highWater"`
	// Table is the position in SyncOrder of the traversal: the table of its last committed
	// page, or, during a catch-up, the table where the traversal continues after it.
	Table int `json:"table"`
	// Cursor resumes after the last committed row of Table. It was issued by View; another
	// view of the same source continues from it through View.Resume.
	Cursor Cursor `json:"cursor"`
	View   string `json:"view"`
	// CatchUpTable, CatchUpCursor and CatchUpHighWater record a catch-up in progress: a run
	// that resumed an unfinished one in a newer view first brings the tables up to Table to
	// that view (see syncer.Run). While CatchUpHighWater > 0, the tables before CatchUpTable
	// and the rows of CatchUpTable up to CatchUpCursor (a cursor of a view whose high-water
	// mark is CatchUpHighWater) hold every change up to CatchUpHighWater, which is above
	// HighWater. All three are zero outside a catch-up.
	CatchUpTable     int    `json:"catchUpTable,omitempty"`
	CatchUpCursor    Cursor `json:"catchUpCursor,omitempty"`
	CatchUpHighWater int64  `json:"catchUpHighWater,omitempty"`
	// Done is true when the run finished: the destination holds everything up to HighWater.
	Done      bool      `json:"done"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ActivePolicy says whose users.activeStorage survives a sync. A sync never switches the
// active store on its own: a push keeps the source's value (the backup learns which store is
// active), a pull keeps the destination's (the local wallet stays active).
//
// The zero ActivePolicy is BRC-40's own rule, which processSyncChunk applies: the incoming
// value wins only when the incoming user row is strictly newer.
type ActivePolicy string

const (
	KeepSourceActive      ActivePolicy = "source"
	KeepDestinationActive ActivePolicy = "destination"
)

// Batch is one page on its way to a destination, with the checkpoint that must commit with
// it. The destination commits only if its durable checkpoint for Page's session still has
// sequence Expect (compare-and-set), so a stale retry or a second session can never
// overwrite newer state.
type Batch struct {
	// Chain is the source's chain; a destination on another chain refuses the batch before
	// writing anything.
	Chain      Chain        `json:"chain"`
	Expect     int64        `json:"expect"`
	Checkpoint Checkpoint   `json:"checkpoint"` // Seq must be Expect+1
	Active     ActivePolicy `json:"active"`
	// Mirror says the destination is a backup of the source, which nothing else writes: a
	// matched row takes every column of the incoming one (brc40.MirrorRow), so that the
	// backup equals its source column for column. Without it a matched row merges by BRC-40's
	// rules, as a live wallet (a pull, an import) or a toolbox server must.
	Mirror bool `json:"mirror,omitempty"`
	// Page holds rows of one table with the source's ids; it may be empty (a run's final
	// checkpoint).
	Page Page `json:"page"`
}

// Ack is a destination's acknowledgement of a committed batch.
type Ack struct {
	Checkpoint Checkpoint `json:"checkpoint"` // what is now durable
	Inserts    int64      `json:"inserts"`
	Updates    int64      `json:"updates"`
	// Duplicate is true when the destination had already committed this batch (a retry
	// after a lost acknowledgement): nothing was applied twice.
	Duplicate bool `json:"duplicate"`
	// Error, when set, says the batch failed even though the call returned; a session
	// treats it exactly like a returned error (nothing advances).
	Error string `json:"error,omitempty"`
}

// Match checks that ack acknowledges exactly b: no error inside it (ErrDestinationFailed),
// the same session, the next sequence, the same table position and done flag (else
// ErrAckMismatch). Either way the session must stop before reading another page.
func (ack Ack) Match(b Batch) error {
	got, want := ack.Checkpoint, b.Checkpoint
	switch {
	case ack.Error != "":
		return fmt.Errorf("%s: %w", ack.Error, ErrDestinationFailed)
	case got.Session != want.Session:
		return fmt.Errorf("ack for session %s, sent %s: %w", got.Session, want.Session, ErrAckMismatch)
	case got.Seq != want.Seq:
		return fmt.Errorf("ack for sequence %d, sent %d: %w", got.Seq, want.Seq, ErrAckMismatch)
	case got.Table != want.Table || got.Done != want.Done:
		return fmt.Errorf("ack for table %d done=%v, sent table %d done=%v: %w", got.Table, got.Done, want.Table, want.Done, ErrAckMismatch)
	}
	return nil
}

// Capabilities is what a provider advertises; sessions negotiate from it.
type Capabilities struct {
	// Snapshots: the source serves consistent views. Without them a session falls back to
	// one exclusive grant for the whole copy.
	Snapshots bool `json:"snapshots"`
	// Journal: the source keeps a change journal, so runs after the first are incremental.
	Journal bool `json:"journal"`
	// ConcurrentReads is how many reads the store serves at once (0: exclusive access only).
	ConcurrentReads int `json:"concurrentReads"`
	// ReadsBesideWriter promises that reads may run while one write transaction is open and
	// that each of them sees the store as it was before or after that transaction, never part
	// of it (SQLite in WAL mode). Without it a writer must be alone. Writers stay exclusive
	// among themselves either way.
	ReadsBesideWriter bool `json:"readsBesideWriter"`
}

// Source serves one user's rows as pages of consistent views.
//
// A session only reads its source: nothing in this interface writes, so a push (a backup to
// a file, a folder or a server) leaves the source untouched. That matters because the
// source is usually a wallet file that a wallet app writes from its own process: in WAL
// mode any commit by another connection between an app transaction's first read and its
// first write fails that transaction (SQLITE_BUSY_SNAPSHOT). What a session must remember
// (its checkpoint, the journal high-water mark it holds) lives at the destination.
//
// OpenView pins a consistent view; the caller owns Close. Views may end on their own
// (lifetime, process loss); reads then fail with ErrSnapshotExpired or ErrSnapshotClosed and
// the session opens a new one.
type Source interface {
	Describe(ctx context.Context) (Settings, Capabilities, error)
	OpenView(ctx context.Context, lifetime time.Duration) (View, error)
}

// View is a consistent read-only view of a source.
type View interface {
	PageReader
	// ID identifies the view; cursors and checkpoints carry it.
	ID() string
	// Journal reports the view's journal high-water mark and whether changes above since
	// are all recorded (false without a journal).
	Journal(since int64) (highWater int64, covered bool)
	// Resume returns this view's cursor for the position of c, a cursor that an earlier
	// view of the same source issued for table: reading after it returns the rows of this
	// view after the same key. ReadPage itself never accepts another view's cursor; a
	// checkpoint crosses views only through Resume. A cursor it cannot read, or of another
	// table, is refused with ErrCursorMismatch.
	Resume(table TableName, c Cursor) (Cursor, error)
	Close() error
}

// Destination commits pages and keeps the durable checkpoint of every session it serves.
//
// Begin describes the destination and returns the session's durable checkpoint in one
// request, writing nothing: a session checks the chains before anything is written, and an
// unchanged wallet syncs in this one request.
//
// Commit applies b.Page with the merge rules of BRC-40 and writes b.Checkpoint, both in one
// transaction, or nothing. It refuses a batch of another chain (ErrWrongChain) and a batch
// whose Expect is not its durable sequence (ErrCheckpointConflict), except the batch it
// committed last, which it acknowledges again with Duplicate set (a retry after a lost
// acknowledgement applies nothing twice).
//
// Checkpoint returns the durable checkpoint for a session, the zero Checkpoint when none.
type Destination interface {
	Begin(ctx context.Context, session SessionKey) (DestinationState, error)
	Checkpoint(ctx context.Context, session SessionKey) (Checkpoint, error)
	Commit(ctx context.Context, b Batch) (Ack, error)
}

// DestinationState is what Begin returns.
type DestinationState struct {
	Settings     Settings     `json:"settings"`
	Capabilities Capabilities `json:"capabilities"`
	Checkpoint   Checkpoint   `json:"checkpoint"`
}

// Sync errors.
var (
	// ErrCheckpointConflict: the destination's durable checkpoint moved (another session,
	// a stale retry); nothing was written.
	ErrCheckpointConflict = errors.New("checkpoint conflict")
	// ErrAckMismatch: an acknowledgement does not match the batch it answers.
	ErrAckMismatch = errors.New("acknowledgement does not match the batch")
	// ErrDestinationFailed: the destination answered with an error inside its result.
	ErrDestinationFailed = errors.New("destination reported a failure")
	// ErrNoProgress: a page that is not the last moved no checkpoint forward.
	ErrNoProgress = errors.New("page made no checkpoint progress")
	// ErrStaleSession: the session was fenced (its destination replaced or closed); its
	// work is discarded before it mutates anything.
	ErrStaleSession = errors.New("stale session")
	// ErrDanglingReference: a row refers to a parent row (by any foreign key, nullable or
	// not) that the destination never received; the source's data is inconsistent. Errors
	// that carry it from a merge are *DanglingReferenceError values, which name the column.
	ErrDanglingReference = errors.New("row refers to a row the destination does not have")
)
