package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"walletsync/wallet"
)

// The switch to WAL. A wallet the toolbox made runs in a rollback journal; walletsync needs
// WAL, where its long snapshot reads never block the app's commits (in a rollback journal a
// reader holds off every writer). Changing the journal mode rewrites the file's header in a
// write transaction that needs the file to itself, and while it waits for that it holds
// SQLite's reserved lock: a wallet app transaction that has read and then tries to write in
// that moment fails at once with SQLITE_BUSY, whatever its busy timeout (SQLite refuses to
// wait there, since two such waiters would deadlock). So the switch never waits on a lock:
// it runs only when no other process is inside a transaction (where the platform can tell,
// see OtherTransactions), with a busy timeout of zero, so that it either has the file at
// once or lets go at once, and it tries again until the store's busy timeout has passed.
// The switch happens once per wallet: the file keeps its mode, and the app's connections
// follow it at their next transaction.

// walRetry is the pause between two attempts of a quiet-only write.
const walRetry = 20 * time.Millisecond

// switchToWAL switches the file at path to WAL unless it runs in WAL already. It fails with
// wallet.ErrBusy when another program stayed inside a transaction for the whole of busy.
// A file system where WAL cannot work keeps the old mode; Capabilities reports it.
func switchToWAL(ctx context.Context, path string, busy time.Duration, log *slog.Logger) error {
	db, err := sql.Open("sqlite", dsn(path, busy))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Reading the mode waits for a shared lock, past a commit of the app under way; waiting
	// for it holds nothing the app needs.
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", classify(err))
	}
	if strings.EqualFold(mode, "wal") {
		return nil
	}
	if _, err := db.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return fmt.Errorf("switch %s to WAL: %w", path, classify(err))
	}
	probe := func() (bool, error) {
		open, _, err := otherTransactions(path, false)
		return open, err
	}
	err = whenQuiet(ctx, probe, busy, func() error {
		return db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
	})
	if err != nil {
		return fmt.Errorf("switch %s to WAL: %w", path, err)
	}
	log.Info("switched the wallet to WAL (once per wallet; the wallet app follows on its own)", "path", path, "mode", mode)
	return nil
}

// whenQuiet runs write when busyNow reports no other process inside a transaction, trying
// again every walRetry while the file is busy or write fails with wallet.ErrBusy, for at
// most busy. write must never hold a lock while it waits for one
// (the switch's busy timeout is zero; in WAL mode, waiting for the write lock holds
// nothing), so that the wallet app never waits on it. It fails with wallet.ErrBusy and a
// hint when the time is up.
func whenQuiet(ctx context.Context, busyNow func() (bool, error), busy time.Duration, write func() error) error {
	deadline := time.Now().Add(busy)
	for {
		open, err := busyNow()
		if err != nil {
			return err
		}
		if !open {
			if err = classify(write()); !errors.Is(err, wallet.ErrBusy) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the wallet app stayed inside a transaction for %v; walletsync makes this one-time change only while no program is in one (try again, or close the wallet app for a moment): %w", busy, wallet.ErrBusy)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(walRetry):
		}
	}
}

// quietWriteTx is writeTx for the one-time writes of a first open (migrations, journal
// triggers): it commits only while no other process is inside a transaction on the file.
func (s *Store) quietWriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	probe := func() (bool, error) {
		open, _, err := s.OtherTransactions(ctx)
		return open, err
	}
	return whenQuiet(ctx, probe, s.opts.BusyTimeout, func() error { return s.writeTx(ctx, fn) })
}

// awaitQuiet waits until no other process is inside a transaction on the file, for at most
// the busy timeout, and then returns anyway: a page commit is not optional work, and what
// holds a transaction open that long is rarely a wallet app about to write (another
// walletsync's snapshot view of a backup file is the usual one), whereas failing would stop
// every sync into a file that a long reader watches.
func (s *Store) awaitQuiet(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.BusyTimeout)
	for {
		open, _, err := s.OtherTransactions(ctx)
		if err != nil || !open || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(walRetry):
		}
	}
}
