package syncer

import (
	"fmt"
	"time"
)

// Retry is a session about to wait before it asks a store that was unavailable again
// (ChunkOptions.OnRetry).
type Retry struct {
	// Attempt counts the store's unavailable answers in a row, this one included: the
	// attempt after the wait is Attempt+1.
	Attempt int
	// Wait is how long the session waits before that next attempt.
	Wait time.Duration
	// Failing is how long the store has been unavailable: since its first failure in a row.
	Failing time.Duration
	// Err is the last failure, matching wallet.ErrUnavailable.
	Err error
}

// UnreachableError is a session that gave up on a store that stayed unavailable: Attempts
// failures in a row, over After (ChunkOptions.GiveUp when that bound ended it). Err is the
// last failure; errors.Is sees wallet.ErrUnavailable through it.
type UnreachableError struct {
	Attempts int
	After    time.Duration
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%v (unavailable %d times in a row, gave up after %s)", e.Err, e.Attempts, e.After.Round(time.Millisecond))
}

// Unwrap returns the last failure.
func (e *UnreachableError) Unwrap() error { return e.Err }
