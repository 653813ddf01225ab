package localstore

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// writerLock is the advisory lock that lets one walletsync process at a time write to a
// wallet file. It is an OS file lock on "<wallet>.walletsync-lock", so the kernel releases it
// when the holder dies; the file holds the holder's pid so that a refused process can say
// who holds it. Other programs (the toolbox itself) ignore it: they are serialized by
// SQLite's own locks, which this lock does not replace.
type writerLock struct {
	f *os.File
}

func lockPath(dbPath string) string { return safefile.WriterLockPath(dbPath) }

// acquireWriterLock takes the lock without waiting. A lock held elsewhere yields a
// *wallet.LockedError naming the holder's pid.
func acquireWriterLock(dbPath string) (*writerLock, error) {
	path := lockPath(dbPath)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", classify(err))
	}
	if err := safefile.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, safefile.ErrLocked) {
			return nil, &wallet.LockedError{Path: dbPath, PID: waitHolder(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		// Fail loudly: a lock whose file names no holder leaves a refused process unable to
		// say who holds the wallet, and the same full disk fails the open a moment later.
		l := &writerLock{f: f}
		return nil, l.releaseJoin(fmt.Errorf("write pid to %s: %w", path, classify(err)))
	}
	return &writerLock{f: f}, nil
}

// release drops the lock. The lock file stays: removing it would race with a process that
// has just opened it and is about to lock it.
func (l *writerLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := safefile.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// releaseJoin releases l and returns err with release's failure joined to it, for the
// callers that release as they return: err itself comes back unchanged when release
// succeeds, so a caller's errors.Is and == on it still hold. The kernel drops the lock with
// the handle even when unlock or close fails, so a failed release says the lock file's
// handle ended badly, not that the wallet stays locked.
func (l *writerLock) releaseJoin(err error) error {
	if rerr := l.release(); rerr != nil {
		return errors.Join(err, fmt.Errorf("release writer lock: %w", rerr))
	}
	return err
}

// waitHolder reads the holder's pid, waiting a little for it: a holder writes its pid just
// after it takes the lock, so a process refused in that moment would otherwise read an empty
// file and could not say who holds the wallet.
func waitHolder(path string) int {
	for range 50 {
		if pid := safefile.ReadPID(path); pid != 0 {
			return pid
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}
