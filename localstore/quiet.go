package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"walletsync/wallet"
)

// Quiet wallets. walletsync shares the wallet file with the wallet app, which writes it from
// its own process in transactions that read first and write after (BEGIN DEFERRED, as knex
// and better-sqlite3 do). In WAL mode such a transaction fails at its first write, at once
// and whatever its busy timeout, when another connection committed after its first read
// (SQLITE_BUSY_SNAPSHOT) or holds the write lock at that moment (SQLITE_BUSY). The only
// write walletsync makes on its own initiative, journal maintenance, therefore runs only
// when the wallet is quiet: nobody committed for a while (WriteVersion, watched by the
// caller), and no other process is inside a transaction right now (OtherTransactions). The
// writes of a first open and of an import wait for the same (walswitch.go); a push writes
// nothing at all.

// WriteIntoWalletNotice is what a person is told before walletsync writes rows into an
// existing wallet file (an import: a merge or a restore), which the wallet app may have open.
const WriteIntoWalletNotice = "close the wallet app that uses this wallet until the import has finished: walletsync commits the backup's rows into the file page by page, and a transaction the app has under way when a page lands can fail (each page first waits for the app's transactions to end, which makes that rare, not impossible)"

// ErrNotQuiet: journal maintenance stopped because the wallet was written, or another
// process was inside a transaction on it; nothing was written after that moment.
var ErrNotQuiet = errors.New("the wallet is in use")

// WriteVersion returns a number that changes whenever any connection other than its own, in
// this process or another, commits a change to the wallet file: PRAGMA data_version on a
// connection the store keeps for this alone. Only equality means something. A store opened
// read-only has none and fails with wallet.ErrReadOnly.
func (s *Store) WriteVersion(ctx context.Context) (int64, error) {
	if s.versionDB == nil {
		return 0, fmt.Errorf("write version of %s: %w", s.path, wallet.ErrReadOnly)
	}
	var v int64
	if err := s.versionDB.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read write version: %w", classify(err))
	}
	return v, nil
}

// openVersionDB opens the one connection WriteVersion reads. data_version is a property of
// a connection, so the pool keeps exactly one, forever; should database/sql replace it after
// an error, the new connection's value differs, which reads as a write: the safe side.
func openVersionDB(path string, busy time.Duration) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, busy, "_pragma=query_only(1)"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// OtherTransactions reports whether another process is inside a transaction on the wallet
// file at this moment: it holds a lock that SQLite takes only for a transaction (in WAL
// mode a read mark or the write lock in the -shm index; in a rollback journal the shared,
// reserved or pending lock of the file). known is false where the platform offers no way
// to look without taking or disturbing a lock (everywhere but Linux, which lists every
// lock in /proc/locks); a caller must then rely on WriteVersion alone.
//
// It is a look, not a lock: a transaction may begin right after it answers false.
func (s *Store) OtherTransactions(ctx context.Context) (open, known bool, err error) {
	var mode string
	if err := s.readDB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return false, false, fmt.Errorf("read journal mode: %w", classify(err))
	}
	return otherTransactions(s.path, strings.EqualFold(mode, "wal"))
}

// Journal maintenance limits: see MaintainJournal.
const (
	// DefaultPruneBatch is how many journal entries one maintenance transaction deletes.
	// Deleting 500 entries of a few dozen bytes each changes a handful of pages: the write
	// lock is held for about a millisecond plus the commit's fsync.
	DefaultPruneBatch = 500
	// DefaultPruneBatches bounds one maintenance run; what is left waits for the next quiet
	// spell.
	DefaultPruneBatches = 20
)

// JournalMaintenance bounds one MaintainJournal run. Zero values take the defaults.
type JournalMaintenance struct {
	// Through: entries at or below it may go (every destination holds them).
	Through int64
	// Batch is the entries per transaction (DefaultPruneBatch), Batches the transactions per
	// run (DefaultPruneBatches).
	Batch, Batches int
	// Version is the WriteVersion the caller saw when it judged the wallet quiet; the run
	// writes nothing if the wallet was written since.
	Version int64
}

// MaintenanceResult is what one MaintainJournal run did.
type MaintenanceResult struct {
	Deleted int64 `json:"deleted"`
	Batches int   `json:"batches"`
	// More is true when entries at or below Through remain (the run hit its bound, or
	// stopped because the wallet was in use).
	More bool `json:"more"`
}

// MaintainJournal prunes the change journal through m.Through in short transactions of at
// most m.Batch entries, at most m.Batches of them, and only while the wallet stays quiet:
// before each transaction it checks that no connection but its own committed since
// m.Version (or since its own last commit) and, where the platform can tell, that no other
// process is inside a transaction. When either check fails it stops with ErrNotQuiet and the
// result so far; nothing is written after the check that failed. Each transaction takes the
// write lock with the store's busy timeout, so a wallet app that holds it makes maintenance
// wait, never the reverse.
//
// What remains of the risk: an app transaction that begins its first read in the moment
// between a check and the commit that follows (about a millisecond and an fsync) and writes
// after that commit fails with SQLITE_BUSY_SNAPSHOT. The caller makes that rare by running
// maintenance seldom and only after the wallet has been quiet for minutes.
func (s *Store) MaintainJournal(ctx context.Context, m JournalMaintenance) (MaintenanceResult, error) {
	var res MaintenanceResult
	if m.Batch == 0 {
		m.Batch = DefaultPruneBatch
	}
	if m.Batches == 0 {
		m.Batches = DefaultPruneBatches
	}
	if m.Batch < 0 || m.Batches < 0 {
		return res, fmt.Errorf("maintain journal: %d batches of %d: %w", m.Batches, m.Batch, wallet.ErrInvalidArgument)
	}
	version := m.Version
	for res.Batches < m.Batches {
		if err := s.checkQuiet(ctx, version); err != nil {
			res.More = true
			return res, fmt.Errorf("maintain journal: %w", err)
		}
		deleted, more, err := s.PruneJournal(ctx, m.Through, m.Batch)
		if err != nil {
			return res, fmt.Errorf("maintain journal: %w", err)
		}
		res.More = more
		if deleted == 0 {
			return res, nil
		}
		res.Deleted += deleted
		res.Batches++
		if !more {
			return res, nil
		}
		// The store's own commit moved the version; the next check compares with it.
		if version, err = s.WriteVersion(ctx); err != nil {
			return res, fmt.Errorf("maintain journal: %w", err)
		}
	}
	return res, nil
}

// checkQuiet fails with ErrNotQuiet when the wallet was written since version or another
// process is inside a transaction now.
func (s *Store) checkQuiet(ctx context.Context, version int64) error {
	v, err := s.WriteVersion(ctx)
	if err != nil {
		return err
	}
	if v != version {
		return fmt.Errorf("written since it was judged quiet: %w", ErrNotQuiet)
	}
	open, _, err := s.OtherTransactions(ctx)
	if err != nil {
		return err
	}
	if open {
		return fmt.Errorf("another program is inside a transaction: %w", ErrNotQuiet)
	}
	return nil
}
