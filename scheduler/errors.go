package scheduler

import "errors"

// Typed errors of the access queue. Every error the package returns wraps one of these,
// wallet.ErrStaleSession for a session whose destination was fenced (replaced, closed or
// switched away from) after the session was made (its queued request was refused and it will
// never be granted again; make a new session), wallet.ErrInvalidArgument for a bad option,
// or the context's error for a cancelled wait; tell them apart with errors.Is.
var (
	// ErrReentrant: the session asked for access while it already holds or waits for a
	// grant. Refused at once so that a nested acquire can never deadlock on itself.
	ErrReentrant = errors.New("session already holds or waits for a grant")
	// ErrReleased: the grant was already released. Releasing twice is a bug in the caller,
	// reported rather than ignored.
	ErrReleased = errors.New("grant already released")
	// ErrNotHolder: the grant was issued to another session (or is nil). Nobody can release
	// a grant they were not given.
	ErrNotHolder = errors.New("grant belongs to another session")
)
