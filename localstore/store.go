// Package localstore is the wallet's SQLite store in the exact @bsv/wallet-toolbox 2.1.26
// schema: it creates and opens wallet files, keeps walletsync's own tables (migration
// ledger, change journal) beside the toolbox's without altering them, hands out snapshot
// views that page any table by its unique key, and runs the foreground operations a wallet
// front end performs.
//
// A Store holds two connection pools on one file: a single writer (BEGIN IMMEDIATE, so a
// write transaction takes SQLite's write lock up front instead of failing half-way) and up
// to MaxReaders query-only readers, and one more reader of its own for the snapshot view. The file runs in WAL mode with synchronous=FULL, so
// readers never block the writer and a committed transaction survives power loss.
package localstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

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
	// MaxViews is how many snapshot views may be open at once (default 1), each a read
	// transaction on a connection of its own. A desktop agent keeps the default: every pinned
	// view holds back WAL checkpoints, so a second one would only multiply that cost. A
	// multi-tenant server (walletsync serve) sets its view quota here, so that one tenant's
	// view never makes another wait.
	MaxViews int
	// Logger receives the store's rare notices (migrations, reinstalled triggers).
	Logger *slog.Logger
	// CommitHook, when set, is called at the durable boundaries of every page commit and
	// every BRC-40 chunk ProcessSyncChunk commits (HookRowsWritten, HookCommitted). It exists for fault injection: crash tests kill the
	// process there. Production code leaves it nil.
	CommitHook func(point string)

	afterMigration func(version int) error // test seam: fail a migration before its commit
}

// Store is an open wallet file. It is safe for concurrent use. Close releases it.
type Store struct {
	path   string
	opts   Options
	log    *slog.Logger
	readDB *sql.DB
	// viewDB is the snapshot view's own connection, outside readDB: a view pins its
	// connection for its whole traversal, and taking it from the foreground's readers left
	// them one short and, once the view ended, one connection to open again (and its schema
	// to parse) on a foreground read. Kept open between views for the same reason.
	viewDB  *sql.DB
	writeDB *sql.DB // nil when ReadOnly
	lock    *writerLock
	walCP   *walCheckpointer // nil when ReadOnly
	// versionDB is the one connection WriteVersion reads; nil when ReadOnly.
	versionDB *sql.DB
	// viewSlot admits Options.MaxViews snapshot views at a time (one by default): a pinned
	// read transaction holds back WAL checkpoints, so more than one only pays on a server
	// whose tenants must not wait for each other.
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
// it. It refuses a path that exists (fs.ErrExist).
//
// Creation is exclusive from the first step: the writer lock of path is taken before
// anything is written, so a second walletsync creating the same path at the same moment
// fails with a *wallet.LockedError naming this process, and the lock is kept through the
// open that follows. The file is built under a temporary name and moved into place with a
// move that never replaces (safefile.RenameNew), so a crash never leaves a half-made wallet
// at path, and a file another program put there meanwhile is never replaced.
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
	lock, tmp, err := reserveNew(path)
	if err != nil {
		return nil, fmt.Errorf("create store %s: %w", path, err)
	}
	defer os.Remove(tmp) // a no-op after the move
	// Assigned, not declared: a shadowed err here let a failed build or move fall through
	// to open, which then reported the real failure (a full disk, a cancel) as not found.
	if err = buildToolboxFile(ctx, tmp, co); err == nil {
		err = renameNew(tmp, path)
	}
	if err != nil {
		return nil, lock.releaseJoin(fmt.Errorf("create store %s: %w", path, err))
	}
	return open(ctx, path, opts, lock)
}

// reserveNew takes the writer lock of a wallet file that does not exist yet, and makes its
// temporary file: empty, private, "."+base+".new" in path's folder. The name is fixed, not
// random: only the lock holder uses it, and a copy a crash cut short is then replaced by the
// next try instead of lying beside the wallet for ever. The caller releases the lock when it
// fails, and otherwise keeps it or releases it once the file is in place.
func reserveNew(path string) (*writerLock, string, error) {
	// Checked before the lock too, so that a path that exists gets no lock file beside it.
	if _, err := os.Lstat(path); err == nil {
		return nil, "", os.ErrExist
	}
	lock, err := acquireWriterLock(path)
	if err != nil {
		return nil, "", err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	if _, err = os.Lstat(path); err == nil {
		err = os.ErrExist // made and released by another process between the two checks
	} else {
		err = freshFile(tmp)
	}
	if err != nil {
		return nil, "", lock.releaseJoin(err)
	}
	return lock, tmp, nil
}

// freshFile makes path an empty private file, removing what a crashed run left there and
// beside it (a rollback journal that SQLite would otherwise play into the new file).
func freshFile(path string) error {
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return classify(err)
		}
	}
	return classify(os.WriteFile(path, nil, 0o600))
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
	return open(ctx, path, opts, nil)
}

// open is Open with the writer lock already held (lock, from Create), or nil to take it.
// The lock is released when open fails, and by a read-only open, which holds none.
func open(ctx context.Context, path string, opts Options, lock *writerLock) (_ *Store, err error) {
	ok := false
	defer func() {
		if !ok {
			err = lock.releaseJoin(err)
		}
	}()
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
	st, roParams, err := inspectFile(ctx, path, opts.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &Store{path: path, opts: opts, log: opts.Logger, viewSlot: make(chan struct{}, max(opts.MaxViews, 1))}
	if opts.ReadOnly {
		if err := s.openReaders(dsn(path, opts.BusyTimeout, append(roParams, "_pragma=query_only(1)")...)); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return s, nil
	}

	if lock == nil {
		if lock, err = acquireWriterLock(path); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	s.lock = lock
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
	if err := switchToWAL(ctx, path, opts.BusyTimeout, s.log); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.writeDB, err = sql.Open("sqlite", dsn(path, opts.BusyTimeout, "_pragma=synchronous(FULL)", "_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=wal_autocheckpoint(%d)", autoCheckpointPages), "_pragma=temp_store(MEMORY)", "_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.writeDB.SetMaxOpenConns(1)
	s.writeDB.SetConnMaxIdleTime(0)
	// Opening the first connection runs the pragmas.
	if err := s.writeDB.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open store: %w", classify(err))
	}
	if err := s.openReaders(dsn(path, opts.BusyTimeout, "_pragma=query_only(1)", "_pragma=foreign_keys(1)")); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.migrate(ctx, st.walletsyncVersion); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if _, err := s.repairJournal(ctx); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.walCP, err = startWALCheckpointer(path, opts.BusyTimeout); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.versionDB, err = openVersionDB(path, opts.BusyTimeout); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	ok = true
	return s, nil
}

// openReaders opens the reader pool and the snapshot view's connection on the data source
// name readers. The pool has a connection for each of the MaxReaders reads the access queue
// grants at once, plus the one Backup pins between its granted steps, and keeps them once
// opened (database/sql keeps 2 by default): a connection opened again parses the schema
// again, on somebody's foreground read.
func (s *Store) openReaders(readers string) error {
	var err error
	if s.readDB, err = sql.Open("sqlite", readers); err != nil {
		return err
	}
	s.readDB.SetMaxOpenConns(MaxReaders + 1)
	s.readDB.SetMaxIdleConns(MaxReaders + 1)
	if s.viewDB, err = sql.Open("sqlite", readers); err != nil {
		return err
	}
	s.viewDB.SetMaxOpenConns(cap(s.viewSlot))
	s.viewDB.SetMaxIdleConns(cap(s.viewSlot))
	return nil
}

// OpenOrCreate opens the wallet at path, or creates it with co when the file does not exist
// (a backup destination's first run). Two processes that call it at once for a new path get
// one wallet: one creates it, the other fails with the *wallet.LockedError of the creator,
// or, when the creator has finished and let go, opens the wallet it made.
func OpenOrCreate(ctx context.Context, path string, co CreateOptions, opts Options) (*Store, error) {
	s, err := Open(ctx, path, opts)
	if !errors.Is(err, wallet.ErrNotFound) {
		return s, err
	}
	s, err = Create(ctx, path, co, opts)
	if errors.Is(err, os.ErrExist) {
		return Open(ctx, path, opts) // made and released by another process meanwhile
	}
	return s, err
}

// inspectFile opens a private read-only connection for the schema inspection, so that a
// refused file is never written: no journal mode change, no migration, no lock file. It
// returns the parameters of the read-only connections that worked (see readOnlyParams).
func inspectFile(ctx context.Context, path string, busy time.Duration) (schemaState, []string, error) {
	params := []string{"mode=ro"}
	for {
		db, err := sql.Open("sqlite", dsn(path, busy, params...))
		if err != nil {
			return schemaState{}, nil, err
		}
		st, err := inspect(ctx, db, path)
		db.Close()
		if err == nil || len(params) > 1 || !cannotOpen(err) {
			return st, params, err
		}
		if params, err = readOnlyParams(path); err != nil {
			return st, nil, err
		}
	}
}

// readOnlyParams are the parameters that open a wallet on read-only media (a write-protected
// card, a read-only share, a folder the user may not write). A WAL-mode file needs its
// "-shm" index beside it, which SQLite cannot make there, so it answers "unable to open
// database file (14)". Where no WAL file holds data, the database file alone is the whole
// wallet and nobody can change it: immutable=1 opens it without the index and without
// locks. Where a WAL file holds committed transactions that only its index could make
// visible, opening the file alone would show an older wallet, so that is refused with
// wallet.ErrReadOnly: copy the wallet's files to a writable folder first.
func readOnlyParams(path string) ([]string, error) {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("open %s: its folder is read-only and its WAL file holds transactions SQLite cannot read there; copy the wallet and its -wal file to a writable folder: %w", path, wallet.ErrReadOnly)
	}
	return []string{"mode=ro", "immutable=1"}, nil
}

// cannotOpen reports SQLITE_CANTOPEN, SQLite's answer for a file or companion file it could
// not open or create.
func cannotOpen(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN
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
	if s.versionDB != nil {
		errs = append(errs, s.versionDB.Close())
	}
	for _, db := range []*sql.DB{s.viewDB, s.readDB} {
		if db != nil {
			errs = append(errs, db.Close())
		}
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

// walletWriteTx is writeTx for a write to the toolbox's tables outside a merge (foreground
// edits, a BRC-40 consumer): while an import's merge is unfinished it is refused with a
// *wallet.ImportInProgressError, because abandoning the merge replays an undo log that
// would overwrite or orphan what such a write did.
func (s *Store) walletWriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := importInProgress(ctx, tx, s.path, ""); err != nil {
			return err
		}
		return fn(tx)
	})
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

// resetConn runs query to put conn back in the state the pool hands connections out in
// (foreign keys on, nothing attached, no transaction open) before conn goes back to it. When
// query fails, conn is discarded instead: a pooled connection left with foreign keys off, a
// file attached or a read pinning the WAL would spoil whatever runs on it next. The failure
// is logged, not returned: what the caller did on conn stands (committed, or failed with its
// own error), and once conn is gone nothing is left in the wrong state.
func (s *Store) resetConn(ctx context.Context, conn *sql.Conn, query string) {
	if _, err := conn.ExecContext(ctx, query); err != nil {
		// ErrBadConn from Raw's function is database/sql's signal to close the connection
		// rather than pool it; Raw hands that same ErrBadConn back, so there is nothing to check.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		s.log.Warn("discarded a database connection that could not be reset", "query", query, "err", classify(err))
	}
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

// renameNew moves a finished file into place without ever replacing one
// (safefile.RenameNew), with disk full, read-only and the rest told apart.
func renameNew(from, to string) error {
	if err := safefile.RenameNew(from, to); err != nil {
		return classify(err)
	}
	return nil
}
