// Package safefile holds the few file-system operations that walletsync's durability
// rests on, in one place: replacing a file atomically, making a rename durable, copying
// into a new file, and taking an advisory lock that another process (or another open of
// the same file in this process) cannot take at the same time.
package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrLocked is TryLock's answer when another open file holds the lock.
var ErrLocked = errors.New("file is locked by another holder")

// WriteAtomic replaces path with data so that a reader sees the old file or the new one,
// never a part, even across a power cut: a private temp file in the same folder, written,
// fsynced, given perm, renamed over path, then the folder fsynced so that the rename itself
// is durable. On failure the temp file is removed and path is untouched.
func WriteAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// CopyNew copies the file at from into a new file at to (mode 0600), streaming, so that the
// file's size never sets the memory it takes. It refuses to overwrite: an existing to is
// an error satisfying errors.Is(err, fs.ErrExist). A failed copy may leave a partial file
// at to, which the caller removes. It does not fsync: it serves copies that a crash may
// lose, such as a test's or a benchmark's working wallet.
func CopyNew(from, to string) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}

// RenameDurably moves a finished file into place: fsync the file, rename, fsync the
// folder, so that after a crash the path holds either nothing new or the whole file.
func RenameDurably(from, to string) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(to))
}

// renameChecked refuses an existing to, then renames.
func renameChecked(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}
