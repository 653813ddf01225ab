package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"walletsync/wallet"
)

// Shared views: one client's view served by several server processes over one database.
//
// A load balancer sends a client's requests to any of the `walletsync serve` processes
// over one database, so the page after the one a process served may land on another. A
// view must stay the same view whichever process serves it: every page read as of the
// moment the view opened, whatever commits in between.
//
// The process that opens a view (its owner) opens a REPEATABLE READ READ ONLY transaction
// on a connection of its own (never a pooled one: a held view must not starve the pool),
// exports its snapshot (pg_export_snapshot) and keeps that transaction open, idle, for the
// view's lifetime: it only pins the snapshot. The view is a row of walletsync_views: its
// random handle (128 bits, unguessable), its identity, the snapshot's id, the view's state
// (its ID, which its cursors carry, and its journal bounds), the owner, its deadline on the
// database's clock and a closed flag. Every page, on whichever process, the owner's
// included, is read in a short transaction that begins with
//
//	BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '<id>'
//
// so it sees exactly the owner's snapshot. Reading through imports on every process,
// instead of on the owner's transaction when the owner serves the page, costs one round
// trip per page (SET TRANSACTION SNAPSHOT) and buys one code path, a pinning transaction
// that no query ever touches (a cancelled request cannot break it, a failed query cannot
// abort it), and pages of one view served by the owner's pool like any other.
//
// One read at a time: the reading transaction takes pg_try_advisory_xact_lock(readLocks,
// id) right after importing; a second read of the view, on any process, finds it taken
// and is refused with wallet.ErrConcurrentRead. The lock ends with the transaction.
//
// The owner's liveness: the owner's connection holds the session-level advisory lock
// (heldLocks, id) for the view's life, taken before the row is committed, so a committed
// row whose lock nobody holds (pg_locks) is a view whose owner is gone. A process killed
// with -9 loses its connections, and PostgreSQL ends their backends: the exporting
// transaction ends, the lock goes, and importing the snapshot fails with SQLSTATE 22023
// "invalid snapshot identifier", which a read answers as wallet.ErrSnapshotExpired: the
// client opens a new view (on any process) and resumes from its checkpoint at the
// destination. Rows of dead owners are deleted under the quota lock when a view opens and
// by every process's reaper.
//
// Quotas: opening a view takes the transaction-level advisory lock viewQuotaLock, deletes
// the dead rows, counts the live ones (not closed, deadline ahead) for the identity and in
// all, asks the caller's admit (the wire's quota policy), and inserts the row; opens are
// serialized across every process, which costs little (one per sync) and makes the count
// exact. The memory budget of reads in flight stays each process's own (remote/wire).
//
// Expiry is the deadline in the row, on the database's clock, the one clock all processes
// share: a read after it is refused with wallet.ErrSnapshotExpired wherever it lands, and
// the owner releases the view at the same lifetime on its own monotonic clock. The idle
// timeout is the row's too: every lookup of a live view, on any process, sets its used_at,
// and a view whose used_at is older than its idle timeout is no longer live: a lookup
// answers wallet.ErrSnapshotClosed (as for a view a client closed), it no longer counts
// against the quotas, and its owner's reaper releases it at its next poll (and counts it,
// IdleReleasedViews).
//
// Close, from any process, marks the row closed: from then on every process refuses the
// handle (wallet.ErrSnapshotClosed) and the view no longer counts against the quotas. The
// owner releases what pins it (ends the transaction, closes the connection, deletes the
// row) at once when the close lands on it, else at its reaper's next poll of its own rows
// (reapInterval). Polling rather than LISTEN/NOTIFY: a notification needs one more
// connection held per process and is lost when that connection drops, so a poll would be
// needed beside it anyway; the poll is one indexed query a second per process holding
// views, and its delay costs only a connection and a snapshot held a second longer, the
// quota being free at the close itself.

// Advisory lock spaces of shared views: the classid of the two-key advisory locks whose
// objid is a view's row id. ("ws" and 1, 2.)
const (
	heldLocks int32 = 0x77730001 // session lock of the owner's connection: the view lives
	readLocks int32 = 0x77730002 // transaction lock of the read in flight
)

// viewQuotaLock serializes the opening of views on all processes (a transaction-level
// advisory lock), so that the quota counts are exact.
const viewQuotaLock int64 = migrationLock + 1

// reapInterval is how often a process holding views looks for its views that another
// process closed or whose deadline passed, and deletes the rows of dead owners.
const reapInterval = time.Second

// viewsDDL is the table of shared views. id keys the advisory locks (an int4: the locks
// take two int4 keys; 2^31 views are never reached by one database's opens, and a
// wrapped identity would fail the insert, not share a lock).
func viewsDDL() string {
	return `CREATE TABLE walletsync_views (
	id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	handle text NOT NULL UNIQUE,
	identity_key text NOT NULL,
	snapshot text NOT NULL,
	view_id text NOT NULL,
	state bytea NOT NULL,
	owner text NOT NULL,
	opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	deadline timestamptz NOT NULL,
	closed boolean NOT NULL DEFAULT false
);
CREATE INDEX walletsync_views_owner ON walletsync_views (owner);
`
}

// viewsIdleDDL adds the idle timeout to the shared views: when a lookup last used the view,
// and its idle timeout (0: none).
func viewsIdleDDL() string {
	return `ALTER TABLE walletsync_views
	ADD COLUMN used_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	ADD COLUMN idle_us bigint NOT NULL DEFAULT 0;
`
}

// idleView is true of a row of walletsync_views (v) that nobody used for its idle timeout.
const idleView = `(v.idle_us > 0 AND v.used_at + v.idle_us * interval '1 microsecond' <= clock_timestamp())`

// liveView is true of a row of walletsync_views (v) that still serves: not closed, before
// its deadline, used within its idle timeout.
const liveView = `(NOT v.closed AND v.deadline > clock_timestamp() AND NOT ` + idleView + `)`

// liveOwner is true of a row of walletsync_views (v) whose owner's connection still holds
// its lock.
var liveOwner = fmt.Sprintf(`EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid = %d::oid AND l.objid = v.id::oid AND l.objsubid = 2 AND l.granted)`, heldLocks)

// snapshotID is the form of pg_export_snapshot's ids: checked before one is spliced into
// SET TRANSACTION SNAPSHOT, which takes no parameters.
var snapshotID = regexp.MustCompile(`^[0-9A-F]+-[0-9A-F]+-[0-9]+$`)

// sharedViews is a Store's part in the shared views: the views this process owns.
type sharedViews struct {
	owner string // this process's name in the rows it owns: host, pid and a random part

	mu     sync.Mutex
	held   map[string]*heldView // by handle
	reaper context.CancelFunc   // the running reaper, nil until the first view
	reaped chan struct{}        // closed when the reaper returns
	closed bool                 // the store closed: nothing opens any more
	// idleReleases counts the views this process released because nobody used them for
	// their idle timeout.
	idleReleases int64
}

// heldView is a view this process owns: the connection whose transaction pins its snapshot.
type heldView struct {
	id       int32
	handle   string
	conn     *pgx.Conn
	timer    *time.Timer
	released bool // guarded by sharedViews.mu
}

func newSharedViews() *sharedViews {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	rand.Read(b)
	return &sharedViews{owner: fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b), held: map[string]*heldView{}}
}

// viewRow is what a process reads of a shared view to serve it.
type viewRow struct {
	ID       int32
	Snapshot string
	ViewID   string
	State    []byte
}

// prepareView computes a new view's ID and state in its exporting transaction.
type prepareView func(ctx context.Context, tx pgx.Tx) (viewID string, state []byte, err error)

// openShared opens a shared view of identity for lifetime, counted from start: it pins a
// snapshot on a connection of its own, computes the view through prepare in that
// transaction, then registers it within the quotas (see the package's notes). It returns
// the handle and the row.
func (s *Store) openShared(ctx context.Context, identity string, start time.Time, lifetime, idle time.Duration, admit func(identityViews, allViews int) error, prepare prepareView) (string, viewRow, error) {
	sv := s.shared
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return "", viewRow{}, fmt.Errorf("open shared view: connect: %w", classify(err))
	}
	keep := false
	defer func() {
		if !keep {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return "", viewRow{}, fmt.Errorf("open shared view: begin: %w", classify(err))
	}
	row := viewRow{}
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&row.Snapshot); err != nil {
		return "", viewRow{}, fmt.Errorf("open shared view: export the snapshot: %w", classify(err))
	}
	if row.ViewID, row.State, err = prepare(ctx, tx); err != nil {
		return "", viewRow{}, fmt.Errorf("open shared view: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	handle := hex.EncodeToString(b)
	err = s.tx(ctx, pgx.ReadCommitted, func(q pgx.Tx) error {
		if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", viewQuotaLock); err != nil {
			return fmt.Errorf("take the view quota lock: %w", err)
		}
		if _, err := q.Exec(ctx, "DELETE FROM walletsync_views v WHERE NOT "+liveOwner); err != nil {
			return fmt.Errorf("delete the views of gone processes: %w", err)
		}
		var mine, all int
		if err := q.QueryRow(ctx, `SELECT count(*) FILTER (WHERE identity_key = $1), count(*) FROM walletsync_views v
			WHERE `+liveView, identity).Scan(&mine, &all); err != nil {
			return fmt.Errorf("count the open views: %w", err)
		}
		if err := admit(mine, all); err != nil {
			return err
		}
		left := lifetime - time.Since(start)
		if err := q.QueryRow(ctx, `INSERT INTO walletsync_views (handle, identity_key, snapshot, view_id, state, owner, deadline, idle_us)
			VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() + $7 * interval '1 microsecond', $8) RETURNING id`,
			handle, identity, row.Snapshot, row.ViewID, row.State, sv.owner, left.Microseconds(), max(idle.Microseconds(), 0)).Scan(&row.ID); err != nil {
			return fmt.Errorf("record the view: %w", err)
		}
		// Locked before the row commits: no process ever sees the row without its lock
		// while the owner lives.
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", heldLocks, row.ID); err != nil {
			return fmt.Errorf("lock the view: %w", classify(err))
		}
		return nil
	})
	if err != nil {
		return "", viewRow{}, fmt.Errorf("open shared view: %w", err)
	}
	h := &heldView{id: row.ID, handle: handle, conn: conn}
	sv.mu.Lock()
	if sv.closed {
		sv.mu.Unlock()
		s.dropRow(ctx, row.ID)
		return "", viewRow{}, fmt.Errorf("open shared view: the store is closing: %w", wallet.ErrSnapshotClosed)
	}
	sv.held[handle] = h
	h.timer = time.AfterFunc(time.Until(start.Add(lifetime)), func() { s.release(h) })
	if sv.reaper == nil {
		rctx, cancel := context.WithCancel(context.Background())
		sv.reaper, sv.reaped = cancel, make(chan struct{})
		go s.reap(rctx, sv.reaped)
	}
	sv.mu.Unlock()
	keep = true
	return handle, row, nil
}

// lookupShared returns identity's view under handle as it stands in the table, and marks
// it used (its idle timeout counts from now): closed, idle past its timeout, unknown and
// another identity's are wallet.ErrSnapshotClosed alike, past its deadline
// wallet.ErrSnapshotExpired.
func (s *Store) lookupShared(ctx context.Context, identity, handle string) (viewRow, error) {
	var row viewRow
	var closed, expired bool
	err := s.pool.QueryRow(ctx, `WITH v AS (
			SELECT v.id, v.snapshot, v.view_id, v.state, v.closed OR `+idleView+` AS closed, v.deadline <= clock_timestamp() AS expired
			FROM walletsync_views v WHERE v.handle = $1 AND v.identity_key = $2),
		used AS (UPDATE walletsync_views w SET used_at = clock_timestamp() FROM v WHERE w.id = v.id AND NOT v.closed AND NOT v.expired)
		SELECT id, snapshot, view_id, state, closed, expired FROM v`, handle, identity).
		Scan(&row.ID, &row.Snapshot, &row.ViewID, &row.State, &closed, &expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && closed:
		return row, fmt.Errorf("view %.16s: %w", handle, wallet.ErrSnapshotClosed)
	case err != nil:
		return row, fmt.Errorf("find view %.16s: %w", handle, classify(err))
	case expired:
		return row, fmt.Errorf("view %.16s: %w", handle, wallet.ErrSnapshotExpired)
	}
	return row, nil
}

// inSnapshot runs fn in a transaction that imports row's snapshot, as the view's one read
// on every process: a read of the view in flight elsewhere refuses this one with
// wallet.ErrConcurrentRead, and a snapshot whose owner is gone fails with
// wallet.ErrSnapshotExpired.
func (s *Store) inSnapshot(ctx context.Context, row viewRow, fn func(pgx.Tx) error) error {
	if !snapshotID.MatchString(row.Snapshot) {
		return fmt.Errorf("view snapshot %q is not a snapshot id: %w", row.Snapshot, wallet.ErrCorrupt)
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+row.Snapshot+"'"); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "22023" {
				return fmt.Errorf("import the view's snapshot: the process that opened the view is gone: %w", wallet.ErrSnapshotExpired)
			}
			return fmt.Errorf("import the view's snapshot: %w", classify(err))
		}
		var alone bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1, $2)", readLocks, row.ID).Scan(&alone); err != nil {
			return fmt.Errorf("lock the view's read: %w", classify(err))
		}
		if !alone {
			return wallet.ErrConcurrentRead
		}
		return fn(tx)
	})
}

// closeShared marks identity's view under handle closed, from any process, and releases it
// at once when this process holds it; a view that is gone or another identity's is left
// alone.
func (s *Store) closeShared(ctx context.Context, identity, handle string) error {
	tag, err := s.pool.Exec(ctx, "UPDATE walletsync_views SET closed = true WHERE handle = $1 AND identity_key = $2", handle, identity)
	if err != nil {
		return fmt.Errorf("close view %.16s: %w", handle, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return nil // gone, or another identity's: not this caller's to release
	}
	s.shared.mu.Lock()
	h := s.shared.held[handle]
	s.shared.mu.Unlock()
	if h != nil {
		s.release(h)
	}
	return nil
}

// release ends a held view exactly once, whoever asks first (a close, its timer, the
// reaper, the store's Close): it deletes the row, then closes the connection, which ends
// the pinning transaction and its lock.
func (s *Store) release(h *heldView) {
	sv := s.shared
	sv.mu.Lock()
	if h.released {
		sv.mu.Unlock()
		return
	}
	h.released = true
	delete(sv.held, h.handle)
	h.timer.Stop()
	sv.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A row left behind (the database unreachable) has no lock once the connection is
	// closed: the next open or reaper deletes it.
	s.dropRow(ctx, h.id)
	h.conn.Close(ctx)
}

// dropRow deletes a view's row. Its callers are cleanups (a view released, or one never
// handed out), so a failure is logged: a row left behind has no lock once its connection
// closes, and the next open or reaper deletes it.
func (s *Store) dropRow(ctx context.Context, id int32) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM walletsync_views WHERE id = $1", id); err != nil {
		s.log.Warn("could not delete a released shared view's row; a later reap deletes it", "id", id, "err", classify(err))
	}
}

// HeldViews returns how many shared views this process holds open.
func (s *Store) HeldViews() int {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return len(s.shared.held)
}

// IdleReleasedViews returns how many shared views this process released so far because no
// process used them for their idle timeout (a counter).
func (s *Store) IdleReleasedViews() int64 {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return s.shared.idleReleases
}

// reap runs until ctx ends: every reapInterval it releases this process's views that
// another process closed, whose deadline passed or that nobody used for their idle
// timeout, and deletes the rows of gone owners.
func (s *Store) reap(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rows, err := s.pool.Query(ctx, `SELECT handle, NOT v.closed AND v.deadline > clock_timestamp() FROM walletsync_views v
			WHERE owner = $1 AND NOT `+liveView, s.shared.owner)
		if err != nil {
			continue // the next tick tries again
		}
		type ended struct {
			handle string
			idle   bool // released for its idle timeout, not closed or expired
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (e ended, err error) {
			err = r.Scan(&e.handle, &e.idle)
			return e, err
		})
		if err != nil {
			continue
		}
		for _, e := range all {
			s.shared.mu.Lock()
			h := s.shared.held[e.handle]
			if h != nil && !h.released && e.idle {
				s.shared.idleReleases++
			}
			s.shared.mu.Unlock()
			if h != nil {
				s.release(h)
			}
		}
		// Stopping ends ctx, which fails the delete: that is no failure worth a line.
		if _, err := s.pool.Exec(ctx, "DELETE FROM walletsync_views v WHERE NOT "+liveOwner); err != nil && ctx.Err() == nil {
			s.log.Warn("could not delete the shared views of gone processes; the next tick tries again", "err", classify(err))
		}
	}
}

// closeShared releases every view this process holds and stops its reaper (the store
// closing): their rows are deleted, so their clients get wallet.ErrSnapshotClosed.
func (sv *sharedViews) closeAll(s *Store) {
	sv.mu.Lock()
	sv.closed = true
	all := make([]*heldView, 0, len(sv.held))
	for _, h := range sv.held {
		all = append(all, h)
	}
	stop, reaped := sv.reaper, sv.reaped
	sv.mu.Unlock()
	if stop != nil {
		stop()
		<-reaped
	}
	for _, h := range all {
		s.release(h)
	}
}

// OpenSharedView opens a view of the store that every server process over the database
// serves (wire.SharedViews, whose contract it keeps; see the notes at the top of this
// file): its snapshot pinned by this process on a connection of its own (not one of
// Options.MaxViews' pooled views: the wire's quotas, counted through admit over all the
// processes, bound these), its ID and journal bounds recorded for the others.
func (s *Store) OpenSharedView(ctx context.Context, identity string, lifetime, idle time.Duration, admit func(identityViews, allViews int) error) (string, wallet.View, error) {
	start := time.Now()
	if lifetime < wallet.MinViewLifetime || lifetime > wallet.MaxViewLifetime {
		return "", nil, fmt.Errorf("open shared view: lifetime %v outside %v..%v: %w", lifetime, wallet.MinViewLifetime, wallet.MaxViewLifetime, wallet.ErrInvalidArgument)
	}
	handle, row, err := s.openShared(context.WithoutCancel(ctx), identity, start, lifetime, idle, admit, func(ctx context.Context, tx pgx.Tx) (string, []byte, error) {
		j, err := ReadJournal(ctx, tx)
		if err != nil {
			return "", nil, err
		}
		// The view is identity's alone: its high-water mark is that of identity's rows,
		// which no other identity's write moves.
		if j.HighWater, err = IdentityHighWater(ctx, tx, identity, j); err != nil {
			return "", nil, err
		}
		state, err := json.Marshal(j)
		b := make([]byte, 8)
		rand.Read(b)
		return hex.EncodeToString(b), state, err
	})
	if err != nil {
		return "", nil, err
	}
	v, err := s.sharedView(row)
	return handle, v, err
}

// SharedView returns identity's view under handle, whichever process opened it
// (wire.SharedViews).
func (s *Store) SharedView(ctx context.Context, identity, handle string) (wallet.View, error) {
	row, err := s.lookupShared(ctx, identity, handle)
	if err != nil {
		return nil, err
	}
	return s.sharedView(row)
}

// CloseSharedView closes identity's view under handle from any process
// (wire.SharedViews).
func (s *Store) CloseSharedView(ctx context.Context, identity, handle string) error {
	return s.closeShared(ctx, identity, handle)
}

func (s *Store) sharedView(row viewRow) (*sharedView, error) {
	v := &sharedView{s: s, row: row}
	if err := json.Unmarshal(row.State, &v.journal); err != nil {
		return nil, fmt.Errorf("view %s: read its journal bounds: %v: %w", row.ViewID, err, wallet.ErrCorrupt)
	}
	return v, nil
}

// sharedView is a shared view as one request of any process sees it: every read imports
// its snapshot (inSnapshot); ID, Journal and Resume are those of its opening.
type sharedView struct {
	s       *Store
	row     viewRow
	journal wallet.JournalBounds
}

func (v *sharedView) ID() string { return v.row.ViewID }

func (v *sharedView) Journal(since int64) (int64, bool) {
	return v.journal.HighWater, v.journal.CoversSince(since)
}

func (v *sharedView) Resume(table wallet.TableName, c wallet.Cursor) (wallet.Cursor, error) {
	return wallet.ResumeCursor(v.row.ViewID, table, c)
}

func (v *sharedView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	var page wallet.Page
	err := v.s.inSnapshot(ctx, v.row, func(tx pgx.Tx) error {
		var err error
		page, err = ReadPage(ctx, tx, v.row.ViewID, req)
		return err
	})
	return page, err
}

// Close does nothing: a shared view ends through CloseSharedView, its deadline or its
// owner's end (wire.SharedViews: the Handler never closes it).
func (v *sharedView) Close() error { return nil }

var _ wallet.View = (*sharedView)(nil)
