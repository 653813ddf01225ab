//go:build unix

package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// SyncDir fsyncs a folder, which makes a rename or a new file in it durable. A file
// system that cannot sync a folder (os.ErrInvalid) makes the rename as durable as it can,
// and that is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// TryLock takes an exclusive advisory lock (flock) on f without blocking, or returns
// ErrLocked. flock locks belong to the open file description, so a second open of the same
// file, even in this process, is refused too. The lock ends with Unlock or when f closes.
func TryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// Unlock releases TryLock's lock on f.
func Unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
