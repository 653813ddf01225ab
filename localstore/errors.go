package localstore

import (
	"errors"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// classify wraps err so that errors.Is finds the wallet sentinel matching its SQLite result
// code or errno (disk full, corrupt, busy, read-only, constraint), keeping the original error
// in the chain. Errors that match no class are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if class := classOf(err); class != nil && !errors.Is(err, class) {
		return &wallet.ClassError{Class: class, Err: err}
	}
	return err
}

func classOf(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code; extended codes share it
		case sqlite3.SQLITE_FULL:
			return wallet.ErrDiskFull
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return wallet.ErrCorrupt
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return wallet.ErrBusy
		case sqlite3.SQLITE_READONLY:
			return wallet.ErrReadOnly
		case sqlite3.SQLITE_CONSTRAINT:
			return wallet.ErrConstraint
		case sqlite3.SQLITE_IOERR:
			// SQLite reports ENOSPC during a write as an I/O error; the errno tells.
			return safefile.Class(err)
		}
	}
	if class := safefile.Class(err); class != nil {
		return class
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return wallet.ErrReadOnly
	}
	return nil
}
