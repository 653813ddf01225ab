//go:build windows

package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// SyncDir does nothing: Windows cannot open a folder for fsync, and NTFS journals a
// rename's metadata itself.
func SyncDir(string) error { return nil }

// TryLock takes an exclusive LockFileEx lock on the first byte of f without blocking, or
// returns ErrLocked. The lock ends with Unlock or when f closes.
func TryLock(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrLocked
	}
	return err
}

// Unlock releases TryLock's lock on f.
func Unlock(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}
