package safefile

import (
	"errors"
	"syscall"

	"walletsync/wallet"
)

// Class returns the wallet sentinel an operating-system error belongs to: wallet.ErrDiskFull
// for a full disk or an exhausted quota (ENOSPC, EDQUOT), wallet.ErrReadOnly for read-only
// media (EROFS), or nil.
func Class(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return wallet.ErrDiskFull
	case errors.Is(err, syscall.EROFS):
		return wallet.ErrReadOnly
	}
	return nil
}

// Classify wraps err in a *wallet.ClassError when it has a Class, so that a person reads
// "disk full" and a caller's errors.Is finds it; other errors, and nil, are returned as they
// are.
func Classify(err error) error {
	if class := Class(err); class != nil && !errors.Is(err, class) {
		return &wallet.ClassError{Class: class, Err: err}
	}
	return err
}
