package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace is renameat2(RENAME_NOREPLACE): one atomic step that fails with EEXIST
// where to exists. A file system without it (EINVAL) gets the link form, which is as
// exclusive and leaves both names for a moment.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return linkNoReplace(from, to)
	default:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
}
