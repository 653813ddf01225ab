//go:build linux

package safefile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// RenameNoReplace renames from to to, a file or a folder, and refuses (fs.ErrExist) when
// to exists, atomically: renameat2 with RENAME_NOREPLACE, so that no other process can create
// to in between. (os.Rename would replace an empty folder.) A file system without the flag
// falls back to a check before the rename.
func RenameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return renameChecked(from, to)
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}
