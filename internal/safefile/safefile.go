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
	"strconv"
	"strings"
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

// RenameNew moves a finished file into place at a path that must not exist: fsync the file,
// move it without ever replacing what is at to (see renameNoReplace), fsync the folder, so
// that after a crash to holds either nothing new or the whole file. An existing to, even one
// that appeared a moment ago in another process, is left as it is and the answer satisfies
// errors.Is(err, fs.ErrExist); from then stays where it was.
//
// A plain rename would replace to, and a check before it would race with another process
// creating to: two writers creating one wallet would then each hold a different file under
// one name, and one of them would lose everything it wrote.
func RenameNew(from, to string) error {
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
	if err := RenameNoReplace(from, to); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(to))
}

// RenameNoReplace renames from to to, a file or a folder, in one step that refuses
// (errors.Is(err, fs.ErrExist)) where to exists, even when another process creates to a
// moment before: renameat2(RENAME_NOREPLACE) on Linux, MoveFileEx without replace on
// Windows, a hard link elsewhere. (os.Rename would replace a file or an empty folder.) It
// syncs nothing: the caller makes from durable first and syncs the folder after.
func RenameNoReplace(from, to string) error { return renameNoReplace(from, to) }

// linkNoReplace is the portable form of a rename that never replaces: a hard link fails
// with EEXIST where to exists, and the source name is removed only once the link stands.
// Folders cannot be linked; for one, the check comes just before the rename, so a folder
// created in between by another process could still be replaced where the system has no
// atomic form.
func linkNoReplace(from, to string) error {
	if st, err := os.Lstat(from); err == nil && st.IsDir() {
		if _, err := os.Lstat(to); err == nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
		}
		return os.Rename(from, to)
	}
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}

// WriterLockPath returns the lock file of the wallet file at path: the writer lock a
// walletsync process holds while it writes that wallet, taken before the file exists when
// it creates one (localstore). The file holds the holder's pid.
func WriterLockPath(path string) string { return path + ".walletsync-lock" }

// LockHolder reports whether the lock file at lockPath is locked by another open file, and
// the pid it names (0 when it names none). There is no portable way to ask without trying,
// so it takes the lock for a moment when it is free: it is for a refusal's check, never for
// polling.
func LockHolder(lockPath string) (pid int, held bool) {
	f, err := os.Open(lockPath)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := TryLock(f); err == nil {
		_ = Unlock(f) // the deferred Close drops the lock as well
		return 0, false
	} else if !errors.Is(err, ErrLocked) {
		return 0, false
	}
	return ReadPID(lockPath), true
}

// ReadPID returns the pid written in the lock file at lockPath, or 0.
func ReadPID(lockPath string) int {
	b, err := os.ReadFile(lockPath)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// SameFile reports whether the paths a and b name one file: the same absolute path once
// symbolic links are resolved, or, where both exist, one file under two names (a hard link,
// a bind mount). A path that does not exist yet is resolved through its folder.
func SameFile(a, b string) bool {
	if resolve(a) == resolve(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// resolve makes path absolute and resolves its symbolic links, or its folder's where path
// does not exist; it returns what it could resolve.
func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
