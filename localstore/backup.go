package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"modernc.org/sqlite"

	"walletsync/wallet"
)

// DefaultBackupStep is how many database pages one step of Store.Backup copies: 256 pages of
// 4 KiB, 1 MiB, a few milliseconds of copying, so that a foreground request waiting on the
// step's grant waits about as long as for one short background page commit.
const DefaultBackupStep = 256

// BackupOptions tune Store.Backup. The zero value copies DefaultBackupStep pages a step with
// no gate.
type BackupOptions struct {
	// PagesPerStep is how many pages one step copies (DefaultBackupStep when 0).
	PagesPerStep int
	// Gate, when set, is called before each step and the release it returns right after the
	// step: callers pass the access queue's background read grant here, so that foreground
	// work runs between steps.
	Gate func(ctx context.Context) (release func(), err error)
	// Scratch marks a copy that the caller reads once and removes (a bundle compresses it):
	// it is written without a rollback journal and without fsyncs. Those would only make
	// the disk flush megabytes of a file that never needs to be durable, and a wallet's own
	// commit (an fsync of its WAL, on the same disk) waits behind such a flush. After a crash
	// the caller must not trust the file.
	Scratch bool
}

// backuper is what modernc.org/sqlite's driver connection offers for the online backup API.
type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// Backup writes a consistent copy of the whole store (every table, every identity, the
// walletsync tables) into a new file at dst with SQLite's online backup API, while the store
// stays in use. The copy is the store as of one moment: a read transaction on a dedicated
// connection is pinned for the whole copy, so the steps all read the same snapshot and
// commits meanwhile (from this process or another) neither restart nor tear it; in WAL mode
// that read holds no lock a writer waits on. The copy is a self-contained file in rollback
// journal mode (no -wal beside it), created 0600 and fsynced. Backup refuses an existing dst
// (fs.ErrExist) and removes a partial dst when it fails or ctx ends between steps.
func (s *Store) Backup(ctx context.Context, dst string, opts BackupOptions) (err error) {
	if opts.PagesPerStep == 0 {
		opts.PagesPerStep = DefaultBackupStep
	}
	if opts.PagesPerStep < 0 {
		return fmt.Errorf("back up store: pages per step %d: %w", opts.PagesPerStep, wallet.ErrInvalidArgument)
	}
	gate := opts.Gate
	if gate == nil {
		gate = func(context.Context) (func(), error) { return func() {}, nil }
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("back up store: %w", classify(err))
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(dst)
			os.Remove(dst + "-journal")
		}
	}()

	conn, err := s.readDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("back up store: %w", classify(err))
	}
	defer conn.Close()
	release, err := gate(ctx)
	if err != nil {
		return fmt.Errorf("back up store: %w", err)
	}
	// Pin the snapshot: a deferred transaction starts reading at its first statement.
	var n int
	_, err = conn.ExecContext(ctx, "BEGIN")
	if err == nil {
		err = conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
	}
	release()
	if err != nil {
		return fmt.Errorf("back up store: pin a read: %w", classify(err))
	}
	defer s.resetConn(context.Background(), conn, "ROLLBACK")

	err = conn.Raw(func(dc any) error {
		var pragmas []string
		if opts.Scratch {
			pragmas = []string{"_pragma=journal_mode(OFF)", "_pragma=synchronous(OFF)"}
		}
		b, err := dc.(backuper).NewBackup(dsn(dst, s.opts.BusyTimeout, pragmas...))
		if err != nil {
			return classify(err)
		}
		for more := true; more; {
			if err = ctx.Err(); err != nil {
				break
			}
			var release func()
			if release, err = gate(ctx); err != nil {
				break
			}
			more, err = b.Step(int32(opts.PagesPerStep))
			release()
			if err != nil {
				err = classify(err)
				break
			}
		}
		// Finish runs whatever happened, to free the backup and close dst's connection. After a
		// failed step it reports that step's error again (sqlite3_backup_finish returns the
		// last step's I/O or memory error), so it is the result only when no step failed.
		ferr := b.Finish()
		if err != nil {
			return err
		}
		return classify(ferr)
	})
	if err != nil {
		return fmt.Errorf("back up store: %w", err)
	}
	if err := selfContained(ctx, dst, s.opts.BusyTimeout, !opts.Scratch); err != nil {
		return fmt.Errorf("back up store: %w", err)
	}
	return nil
}

// selfContained makes a database file one file that can be compressed, moved or renamed on
// its own: it checkpoints the WAL into the main file and switches to rollback-journal mode
// (journal_mode DELETE; a backup copies the source's WAL flag into the header), removes the
// emptied -wal and -shm, and, when durable, fsyncs the file. It needs the file to itself:
// another program's open connection makes it fail with wallet.ErrBusy, and the file is left
// as it was.
func selfContained(ctx context.Context, path string, busy time.Duration, durable bool) error {
	sync := "_pragma=synchronous(FULL)"
	if !durable {
		sync = "_pragma=synchronous(OFF)"
	}
	db, err := sql.Open("sqlite", dsn(path, busy, "_pragma=journal_mode(DELETE)", sync))
	if err != nil {
		return err
	}
	err = db.PingContext(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return classify(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return fmt.Errorf("%s-wal still holds %d bytes: %w", path, fi.Size(), wallet.ErrBusy)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return classify(err)
		}
	}
	if !durable {
		return nil
	}
	return classify(syncFile(path))
}
