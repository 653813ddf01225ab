package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
	"walletsync/agent/api"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"walletsync/wallet"
)

// defaultEventLog is how many events the state database's event log keeps by default.
const defaultEventLog = 10_000

// stateDB is the agent's own SQLite database in its data folder: the task history and the
// event log, under their own forward-only migration ledger. It is never a wallet file, and
// no wallet data goes into it: tasks and events hold counts, ids, paths and scrubbed text.
//
// WAL journal, synchronous=FULL (a recorded task end survives a power cut), a bounded busy
// timeout. The creator closes it, after the Manager's Shutdown and after RecordEvents has
// returned.
type stateDB struct {
	db   *sql.DB
	path string
}

type stateMigration struct {
	name string
	ddl  string
}

// stateMigrations is the state database's schema history. Append only: a shipped step is
// never edited, since databases in the field record it. Each step runs in one transaction
// with its ledger row, so an interrupted step leaves no trace and runs again next time.
var stateMigrations = []stateMigration{
	{
		name: "task history and event log",
		ddl: `
CREATE TABLE migrations (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at TEXT NOT NULL
);
CREATE TABLE tasks (
	id TEXT PRIMARY KEY,
	ord INTEGER NOT NULL UNIQUE,   -- creation order
	terminal INTEGER NOT NULL,     -- 1 once the task has ended
	task TEXT NOT NULL,            -- the Task snapshot, JSON
	log TEXT NOT NULL              -- the task's bounded log, JSON
);
CREATE INDEX tasks_terminal_ord ON tasks (terminal, ord);
CREATE TABLE events (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	epoch TEXT NOT NULL,           -- the publishing bus's epoch
	seq INTEGER NOT NULL,
	time TEXT NOT NULL,
	type TEXT NOT NULL,
	data TEXT NOT NULL             -- JSON
);
CREATE INDEX events_epoch_seq ON events (epoch, seq);
`,
	},
	{
		name: "backup files",
		ddl: `
CREATE TABLE backups (
	path TEXT PRIMARY KEY,
	destination TEXT NOT NULL,
	identity_key TEXT NOT NULL,
	size INTEGER NOT NULL,
	sha256 TEXT NOT NULL,
	rows TEXT NOT NULL,            -- per-table row counts at export, JSON: the drill compares them
	created_at TEXT NOT NULL,
	verified_at TEXT,              -- when a verify or a drill last passed
	verify_error TEXT              -- why the last verify or drill failed
);
CREATE INDEX backups_destination ON backups (destination, created_at);
`,
	},
	{
		name: "places written",
		ddl: `
CREATE TABLE places (
	destination TEXT NOT NULL,
	place TEXT NOT NULL,           -- placeOf: the destination's kind, path and signer, hashed
	path TEXT NOT NULL,
	written_at TEXT NOT NULL,      -- when a run first wrote there
	PRIMARY KEY (destination, place)
);
`,
	},
	{
		name: "facts",
		ddl: `
CREATE TABLE facts (
	key TEXT PRIMARY KEY,          -- what the agent remembers, such as "password-proven"
	value TEXT NOT NULL            -- JSON
);
`,
	},
}

// openState opens the state database at path, creating it (mode 0600) if missing and
// applying the migrations it lacks. It refuses a database whose ledger is newer than this
// binary (wallet.ErrSchemaTooNew) and a non-empty SQLite file without the ledger, such as
// a wallet (wallet.ErrUnknownSchema), leaving both untouched.
func openState(ctx context.Context, path string) (*stateDB, error) {
	// SQLite gives the -wal and -shm files the database file's mode, so creating the file
	// first keeps all three private.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open state database: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open state database: %w", err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open state database: %w", err)
	}
	db.SetMaxOpenConns(1)
	s := &stateDB{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *stateDB) migrate(ctx context.Context) error {
	var objects, ledger int
	err := s.db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE type = 'table' AND name = 'migrations') FROM sqlite_master`).Scan(&objects, &ledger)
	if err != nil {
		return fmt.Errorf("read state database schema: %w", err)
	}
	applied := 0
	switch {
	case ledger == 1:
		if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM migrations`).Scan(&applied); err != nil {
			return fmt.Errorf("read state database ledger: %w", err)
		}
	case objects > 0:
		return &wallet.SchemaError{Path: s.path, Reason: "not a walletsync agent state database", Err: wallet.ErrUnknownSchema}
	}
	if applied > len(stateMigrations) {
		return &wallet.SchemaError{Path: s.path, Err: wallet.ErrSchemaTooNew,
			Reason: fmt.Sprintf("state database schema version %d, this walletsync knows up to %d", applied, len(stateMigrations))}
	}
	for v := applied + 1; v <= len(stateMigrations); v++ {
		m := stateMigrations[v-1]
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.ddl); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				v, m.name, time.Now().UTC().Format(time.RFC3339Nano))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate state database to version %d (%s): %w", v, m.name, err)
		}
	}
	return nil
}

func (s *stateDB) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// Close closes the database.
func (s *stateDB) Close() error { return s.db.Close() }

// taskRecord is one task as the state database holds it.
type taskRecord struct {
	api.Task
	ord uint64
	log []api.LogLine
}

// loadTasks returns every recorded task, oldest first.
func (s *stateDB) loadTasks(ctx context.Context) ([]taskRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT ord, task, log FROM tasks ORDER BY ord`)
	if err != nil {
		return nil, fmt.Errorf("load task history: %w", err)
	}
	defer rows.Close()
	var out []taskRecord
	for rows.Next() {
		var r taskRecord
		var snap, log []byte
		if err := rows.Scan(&r.ord, &snap, &log); err != nil {
			return nil, fmt.Errorf("load task history: %w", err)
		}
		if err := errors.Join(json.Unmarshal(snap, &r.Task), json.Unmarshal(log, &r.log)); err != nil {
			return nil, fmt.Errorf("load task history: task %d: %w", r.ord, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load task history: %w", err)
	}
	return out, nil
}

// saveTasks writes recs and forgets all but the newest keep ended tasks, in one
// transaction.
func (s *stateDB) saveTasks(ctx context.Context, recs []taskRecord, keep int) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, r := range recs {
			snap, err := json.Marshal(r.Task)
			if err != nil {
				return err
			}
			log, err := json.Marshal(r.log)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, ord, terminal, task, log) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET terminal = excluded.terminal, task = excluded.task, log = excluded.log`,
				r.ID, r.ord, r.State.Terminal(), snap, log); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE terminal AND ord <=
	(SELECT ord FROM tasks WHERE terminal ORDER BY ord DESC LIMIT 1 OFFSET ?)`, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("save task history: %w", err)
	}
	return nil
}

// loggedEvent is an event as the event log holds it: its data stays JSON.
type loggedEvent struct {
	Epoch string          `json:"epoch"`
	Seq   uint64          `json:"seq"`
	Time  time.Time       `json:"time"`
	Type  api.EventType   `json:"type"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// RecordEvents appends bus's events to the event log until ctx ends or the bus closes,
// then returns nil. task.progress and task.log events are left out: the task history
// holds their outcome. The log keeps the newest keep events (defaultEventLog when keep
// is not positive).
//
// It starts after the last event it recorded from this bus, so running it again after an
// error neither repeats nor skips events the ring still holds; events it fell too far
// behind for are recorded as one missed event. It returns the first write error.
func (s *stateDB) RecordEvents(ctx context.Context, bus *Bus, keep int) error {
	keep = positiveOr(keep, defaultEventLog)
	var since uint64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE epoch = ?`, bus.Epoch()).Scan(&since)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("record events: %w", err)
	}
	sub := bus.Subscribe(since)
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, api.ErrClosed) || ctx.Err() != nil {
			return nil
		}
		batch := []api.Event{ev}
		for len(batch) < 256 {
			ev, ok := sub.TryNext()
			if !ok {
				break
			}
			batch = append(batch, ev)
		}
		if err := s.appendEvents(context.WithoutCancel(ctx), bus.Epoch(), batch, keep); err != nil {
			return fmt.Errorf("record events: %w", err)
		}
	}
}

func (s *stateDB) appendEvents(ctx context.Context, epoch string, batch []api.Event, keep int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, ev := range batch {
			if ev.Type == api.EventTaskProgress || ev.Type == api.EventTaskLog {
				continue
			}
			data, err := json.Marshal(ev.Data)
			if err != nil {
				return fmt.Errorf("encode %s event %d: %w", ev.Type, ev.Seq, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (epoch, seq, time, type, data) VALUES (?, ?, ?, ?, ?)`,
				epoch, ev.Seq, ev.Time.UTC().Format(time.RFC3339Nano), string(ev.Type), data); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?`, keep)
		return err
	})
}

// Events returns the newest limit events of the event log, oldest first.
func (s *stateDB) Events(ctx context.Context, limit int) ([]loggedEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT epoch, seq, time, type, data FROM
	(SELECT * FROM events ORDER BY id DESC LIMIT ?) ORDER BY id`, limit)
	if err != nil {
		return nil, fmt.Errorf("read event log: %w", err)
	}
	defer rows.Close()
	var out []loggedEvent
	for rows.Next() {
		var e loggedEvent
		var at string
		var data []byte
		if err := rows.Scan(&e.Epoch, &e.Seq, &at, &e.Type, &data); err != nil {
			return nil, fmt.Errorf("read event log: %w", err)
		}
		if e.Time, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("read event log: event %d: %w", e.Seq, err)
		}
		e.Data = data
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read event log: %w", err)
	}
	return out, nil
}

// RecordBackup remembers a backup file the agent wrote (replacing an older record of the
// same path).
func (s *stateDB) RecordBackup(ctx context.Context, f api.Backup) error {
	rows, err := json.Marshal(f.Rows)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO backups (path, destination, identity_key, size, sha256, rows, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET destination = excluded.destination,
identity_key = excluded.identity_key, size = excluded.size, sha256 = excluded.sha256, rows = excluded.rows,
created_at = excluded.created_at, verified_at = NULL, verify_error = NULL`,
			f.Path, f.Destination, f.IdentityKey, f.Size, f.SHA256, string(rows), f.CreatedAt.UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return fmt.Errorf("record backup %s: %w", f.Path, err)
	}
	return nil
}

// Backups returns the recorded files of a destination, newest first.
func (s *stateDB) Backups(ctx context.Context, destination string) ([]api.BackupRecord, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT path, destination, identity_key, size, sha256, rows, created_at,
coalesce(verified_at, ''), coalesce(verify_error, '') FROM backups WHERE destination = ? ORDER BY created_at DESC`, destination)
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	defer rs.Close()
	var out []api.BackupRecord
	for rs.Next() {
		var r api.BackupRecord
		var rows, created, verified string
		if err := rs.Scan(&r.Path, &r.Destination, &r.IdentityKey, &r.Size, &r.SHA256, &rows, &created, &verified, &r.VerifyError); err != nil {
			return nil, fmt.Errorf("list backups: %w", err)
		}
		if err := json.Unmarshal([]byte(rows), &r.Rows); err != nil {
			return nil, fmt.Errorf("list backups: %w", err)
		}
		r.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		if verified != "" {
			r.VerifiedAt, _ = time.Parse(time.RFC3339Nano, verified)
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// MarkVerified records the outcome of verifying (or drilling) the backup at path: a nil
// failure marks it verified now.
func (s *stateDB) MarkVerified(ctx context.Context, path string, now time.Time, failure error) error {
	verified, msg := any(now.UTC().Format(time.RFC3339Nano)), any(nil)
	if failure != nil {
		verified, msg = nil, failure.Error()
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE backups SET verified_at = coalesce(?, verified_at), verify_error = ? WHERE path = ?`, verified, msg, path)
		return err
	})
}

// ForgetBackup drops the record of a deleted backup file.
func (s *stateDB) ForgetBackup(ctx context.Context, path string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM backups WHERE path = ?`, path)
		return err
	})
}

// RecordPlace remembers that a run of destination wrote at place (its path path), keeping
// the time of the first such run: a place written before that is missing now is a disk
// that is not connected, never a place to create again.
func (s *stateDB) RecordPlace(ctx context.Context, destination, place, path string, now time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO places (destination, place, path, written_at) VALUES (?, ?, ?, ?)
ON CONFLICT (destination, place) DO NOTHING`, destination, place, path, now.UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return fmt.Errorf("record place of %s: %w", destination, err)
	}
	return nil
}

// PlaceWritten returns when a run of destination first wrote at place, the zero time when
// none has.
func (s *stateDB) PlaceWritten(ctx context.Context, destination, place string) (time.Time, error) {
	var at string
	err := s.db.QueryRowContext(ctx, `SELECT written_at FROM places WHERE destination = ? AND place = ?`, destination, place).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read place of %s: %w", destination, err)
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, fmt.Errorf("read place of %s: %w", destination, err)
	}
	return t, nil
}

// ForgetPlaces drops the places destination wrote at: a removed destination's id may be
// given to a new one, which has written nowhere yet.
func (s *stateDB) ForgetPlaces(ctx context.Context, destination string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM places WHERE destination = ?`, destination)
		return err
	})
}

// Fact reads the fact stored under key into v; ok is false, and v untouched, when there is
// none.
func (s *stateDB) Fact(ctx context.Context, key string, v any) (ok bool, err error) {
	var text string
	err = s.db.QueryRowContext(ctx, `SELECT value FROM facts WHERE key = ?`, key).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(text), v)
	}
	if err != nil {
		return false, fmt.Errorf("read fact %s: %w", key, err)
	}
	return true, nil
}

// SetFact stores v (as JSON) under key, replacing what was there.
func (s *stateDB) SetFact(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store fact %s: %w", key, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO facts (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, string(b))
		return err
	})
	if err != nil {
		return fmt.Errorf("store fact %s: %w", key, err)
	}
	return nil
}
