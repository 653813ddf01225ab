// Package localstore is the wallet's SQLite store in the exact @bsv/wallet-toolbox 2.1.26
// schema: it creates and opens wallet files, keeps walletsync's own tables (migration
// ledger, change journal) beside the toolbox's without altering them, hands out snapshot
// views that page any table by its unique key, and runs the foreground operations a wallet
// front end performs.
//
// A Store holds two connection pools on one file: a single writer (BEGIN IMMEDIATE, so a
// write transaction takes SQLite's write lock up front instead of failing half-way) and up
// to MaxReaders query-only readers. The file runs in WAL mode with synchronous=FULL, so
// readers never block the writer and a committed transaction survives power loss.
package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// MaxReaders is how many read connections a store keeps: the number of concurrent reads
// a SQLite WAL store can safely serve, which the scheduler's access queue honours.
const MaxReaders = 8

// DefaultBusyTimeout bounds how long a statement waits for another connection's lock
// before it fails with wallet.ErrBusy.
const DefaultBusyTimeout = 5 * time.Second

// Options tune Open. The zero value is a read-write store with the defaults.
type Options struct {
	// ReadOnly opens the file for reading only: no writer lock, no migrations, no writes.
	// Snapshot views and foreground reads work; everything that writes fails with
	// wallet.ErrReadOnly.
	ReadOnly bool
	// BusyTimeout overrides DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives the store's rare notices (migrations, reinstalled triggers).
	Logger *slog.Logger
	// CommitHook, when set, is called at the durable boundaries of every page commit
	// (HookRowsWritten, HookCommitted). It exists for fault injection: crash tests kill the
	// process there. Production code leaves it nil.
	CommitHook func(point string)

	afterMigration func(version int) error // test seam: fail a migration before its commit
}

// Store is an open wallet file. It is safe for concurrent use. Close releases it.
type Store struct {
	path    string
	opts    Options
	log     *slog.Logger
	readDB  *sql.DB
	writeDB *sql.DB // nil when ReadOnly
	lock    *writerLock
	walCP   *walCheckpointer // nil when ReadOnly
	// viewSlot admits one snapshot view at a time: a pinned read transaction holds back
	// WAL checkpoints, so more than one would only multiply that cost.
	viewSlot chan struct{}
}

// CreateOptions name a new store.
type CreateOptions struct {
	Chain wallet.Chain
	// StorageIdentityKey identifies the store; a fresh key is generated when empty.
	StorageIdentityKey string
	// StorageName is the human-readable name; "walletsync" when empty.
	StorageName string
}

// Create makes a new wallet file at path with exactly the toolbox's schema and Knex ledger
// (so the toolbox opens it with nothing to migrate) plus walletsync's own tables, and opens
// it. It refuses a path that exists. The file is built under a temporary name and renamed
// into place, so a crash never leaves a half-made wallet at path.
func Create(ctx context.Context, path string, co CreateOptions, opts Options) (*Store, error) {
	if _, err := wallet.ParseChain(string(co.Chain)); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	if co.StorageIdentityKey == "" {
		key, err := NewIdentityKey()
		if err != nil {
			return nil, fmt.Errorf("create store: %w", err)
		}
		co.StorageIdentityKey = key
	}
	if co.StorageName == "" {
		co.StorageName = "walletsync"
	}
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("create store %s: %w", path, os.ErrExist)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return nil, fmt.Errorf("create store: %w", classify(err))
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // a no-op after the rename

	if err := buildToolboxFile(ctx, tmpPath, co); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	if err := renameDurably(tmpPath, path); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	return Open(ctx, path, opts)
}

func buildToolboxFile(ctx context.Context, path string, co CreateOptions) error {
	// A rollback journal while building: the finished file is a single self-contained file
	// that can be renamed; Open switches it to WAL.
	db, err := sql.Open("sqlite", dsn(path, DefaultBusyTimeout, "_pragma=journal_mode(DELETE)", "_pragma=synchronous(FULL)", "_txlock=immediate"))
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	settings := wallet.Settings{StorageIdentityKey: co.StorageIdentityKey, StorageName: co.StorageName, Chain: co.Chain}
	if err := createToolboxSchema(ctx, tx, settings); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return classify(err)
	}
	return classify(db.Close())
}

// Open opens an existing wallet file. It first finishes or rolls back a whole-file restore
// (Replace) that a crash interrupted at path, then inspects the schema read-only and refuses,
// leaving the file untouched, a file that is not a toolbox 2.1.26 store, one whose
// walletsync schema is newer than this binary, or one with unknown objects in walletsync's
// namespace (*wallet.SchemaError). A read-write open then takes the writer lock (a second
// walletsync writer gets a *wallet.LockedError naming the holder), switches the file to WAL,
// applies walletsync's pending migrations, and reinstalls missing journal triggers.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := recoverOnOpen(ctx, path, opts.BusyTimeout, opts.Logger); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("open store %s: %w", path, wallet.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("open store: %w", classify(err))
	case fi.IsDir():
		// SQLite reports a folder as a disk I/O error, which sends a person looking at the disk.
		return nil, fmt.Errorf("open store %s: a folder, not a wallet file: %w", path, wallet.ErrInvalidArgument)
	}
	st, err := inspectFile(ctx, path, opts.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &Store{path: path, opts: opts, log: opts.Logger, viewSlot: make(chan struct{}, 1)}
	if opts.ReadOnly {
		s.readDB, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, "mode=ro", "_pragma=query_only(1)"))
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.readDB.SetMaxOpenConns(MaxReaders + 1) // +1: a snapshot view's dedicated connection
		return s, nil
	}

	if s.lock, err = acquireWriterLock(path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	// temp_store(MEMORY): a multi-row INSERT or an UPDATE inside a larger transaction keeps a
	// statement journal (the pages it changes, to undo that one statement should it fail).
	// SQLite spills it to a temporary file past 64 KiB, which cost a full copy one pwrite per
	// page changed, about half of all its writes; in memory it is bounded by one statement
	// (insertBatchBytes of rows), and it is gone when the statement ends.
	s.writeDB, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, "_pragma=journal_mode(WAL)", "_pragma=synchronous(FULL)", "_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=wal_autocheckpoint(%d)", autoCheckpointPages), "_pragma=temp_store(MEMORY)", "_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.writeDB.SetMaxOpenConns(1)
	s.writeDB.SetConnMaxIdleTime(0)
	// Opening the first connection runs the pragmas: the switch to WAL happens here.
	if err := s.writeDB.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open store: %w", classify(err))
	}
	s.readDB, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, "_pragma=query_only(1)", "_pragma=foreign_keys(1)"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.readDB.SetMaxOpenConns(MaxReaders + 1)
	if err := s.migrate(ctx, st.walletsyncVersion); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if _, err := s.repairJournal(ctx); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.walCP, err = startWALCheckpointer(path, opts.BusyTimeout); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	ok = true
	return s, nil
}

// OpenOrCreate opens the wallet at path, or creates it with co when the file does not exist
// (a backup destination's first run).
func OpenOrCreate(ctx context.Context, path string, co CreateOptions, opts Options) (*Store, error) {
	s, err := Open(ctx, path, opts)
	if errors.Is(err, wallet.ErrNotFound) {
		return Create(ctx, path, co, opts)
	}
	return s, err
}

// inspectFile opens a private read-only connection for the schema inspection, so that a
// refused file is never written: no journal mode change, no migration, no lock file.
func inspectFile(ctx context.Context, path string, busy time.Duration) (schemaState, error) {
	db, err := sql.Open("sqlite", dsn(path, busy, "mode=ro"))
	if err != nil {
		return schemaState{}, err
	}
	defer db.Close()
	return inspect(ctx, db, path)
}

func dsn(path string, busy time.Duration, params ...string) string {
	q := "_pragma=busy_timeout(" + fmt.Sprint(busy.Milliseconds()) + ")"
	for _, p := range params {
		q += "&" + p
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q
}

// Path returns the wallet file's path.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether the store was opened without write access.
func (s *Store) ReadOnly() bool { return s.writeDB == nil }

// Close closes both pools and releases the writer lock. An open snapshot view must be
// closed first; its connection is otherwise closed under it.
func (s *Store) Close() error {
	var errs []error
	errs = append(errs, s.walCP.stop())
	if s.readDB != nil {
		errs = append(errs, s.readDB.Close())
	}
	if s.writeDB != nil {
		errs = append(errs, s.writeDB.Close())
	}
	errs = append(errs, s.lock.release())
	return errors.Join(errs...)
}

// writeTx runs fn in one write transaction on the single writer connection and commits it,
// or rolls it back when fn fails. A store opened read-only refuses with wallet.ErrReadOnly.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.writeDB == nil {
		return fmt.Errorf("write %s: %w", s.path, wallet.ErrReadOnly)
	}
	return inTx(ctx, s.writeDB, fn)
}

// writeConn runs fn with the writer connection to itself, for the rare write that must set
// a connection's pragma around its transaction.
func (s *Store) writeConn(ctx context.Context, fn func(conn *sql.Conn) error) error {
	if s.writeDB == nil {
		return fmt.Errorf("write %s: %w", s.path, wallet.ErrReadOnly)
	}
	conn, err := s.writeDB.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	return fn(conn)
}

// inTx runs fn in a transaction of db (a pool or one connection), committed when fn returns
// nil and rolled back otherwise.
func inTx(ctx context.Context, db interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return classify(tx.Commit())
}

// Settings returns the store's settings row.
func (s *Store) Settings(ctx context.Context) (wallet.Settings, error) {
	var st wallet.Settings
	var chain string
	var created, updated any
	err := s.readDB.QueryRowContext(ctx, `SELECT storageIdentityKey, storageName, chain, dbtype, maxOutputScript, created_at, updated_at FROM settings LIMIT 1`).
		Scan(&st.StorageIdentityKey, &st.StorageName, &chain, &st.DBType, &st.MaxOutputScript, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("read settings: %w", wallet.ErrNotFound)
	}
	if err != nil {
		return st, fmt.Errorf("read settings: %w", classify(err))
	}
	st.Chain = wallet.Chain(chain)
	if st.CreatedAt, err = scanTime(created); err == nil {
		st.UpdatedAt, err = scanTime(updated)
	}
	if err != nil {
		return st, fmt.Errorf("read settings: %w", err)
	}
	return st, nil
}

// renameDurably moves a finished file into place durably (safefile.RenameDurably), with
// disk full, read-only and the rest told apart.
func renameDurably(from, to string) error {
	if err := safefile.RenameDurably(from, to); err != nil {
		return classify(err)
	}
	return nil
}
