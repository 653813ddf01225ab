// Package syncer runs page sessions: it moves one user's rows from a wallet.Source to a
// wallet.Destination in bounded, resumable, cancellable pages, each committed atomically
// with its checkpoint at the destination.
//
// It knows providers only through the wallet.Source and wallet.Destination interfaces, so
// the same loop pushes a local wallet to a backup file or a remote server and pulls a
// backup into the local wallet.
package syncer

import (
	"fmt"
	"time"

	"walletsync/scheduler"
	"walletsync/wallet"
)

// Session limits and defaults.
const (
	DefaultMaxRows  = 1000
	MaxRows         = 1000
	DefaultMaxBytes = 262_144
	MaxBytes        = 10_000_000
	// DefaultRetries bounds how often a commit whose outcome is unknown is tried again.
	DefaultRetries = 3
	// DefaultBackoff is the first retry's delay; each retry doubles it.
	DefaultBackoff = 100 * time.Millisecond
	// maxViewRestarts bounds how often a session reopens an ended view before giving up.
	maxViewRestarts = 3
	// BulkMaxBytes is the byte limit of a full traversal's pages in bulk mode (Options.Bulk):
	// large enough that the 1,000-row limit decides most pages, and small enough that the one
	// page in memory (about half its charge in payload) keeps a sync well inside its 64 MiB
	// memory goal.
	BulkMaxBytes = 8 << 20
)

// Options tune a session. The zero value is the defaults; anything out of range is refused
// before any work.
type Options struct {
	// MaxRows bounds a page's rows: 1..MaxRows (default DefaultMaxRows).
	MaxRows int
	// MaxBytes bounds a page's rough size (wallet.Table.Charge): 1..MaxBytes (default
	// DefaultMaxBytes). A single row larger than this travels alone in a one-row page, up to
	// wallet.MaxFrameBytes.
	MaxBytes int64
	// SnapshotLifetime is the source view's lifetime (default five minutes).
	SnapshotLifetime time.Duration
	// Active says whose users.activeStorage survives: wallet.KeepSourceActive for a push,
	// wallet.KeepDestinationActive for a pull.
	Active wallet.ActivePolicy
	// Progress, when set, is called at every state change, outside every lock. Returning an
	// error stops the session; what was acknowledged stays. The last call reports the
	// session's end (completed, cancelled or failed), and its error is ignored.
	Progress func(Progress) error
	// Bulk, when set, lets the pages of a full traversal (a first copy, or a copy the change
	// journal cannot cover) carry up to BulkMaxBytes instead of MaxBytes (or MaxBytes when it
	// is larger). A full copy's time goes mostly to the fixed cost of each page commit (an
	// fsync of the destination's WAL, the checkpoint, the statements around them), and at
	// 256 KiB a wallet of large raw transactions needs hundreds of pages; bulk pages copy the
	// same rows in a few dozen. Every page still commits atomically with its checkpoint, and
	// incremental pages keep MaxBytes. Use it for a destination no foreground work waits on
	// (a backup file or server); it is refused together with Grants, since a commit into the
	// local wallet must stay short enough for the foreground to wait it out.
	Bulk bool
	// Mirror, when set, makes the destination an exact copy of the source (wallet.Batch.Mirror):
	// matched rows take every column of the source's, whatever BRC-40's merge rules would
	// keep. Set it for a backup of this wallet (a backup wallet file, walletsync serve's paged
	// wire), never for a live wallet (a pull) or a toolbox server: it is refused with Grants,
	// and with wallet.KeepDestinationActive (a pull keeps the destination's own state).
	Mirror bool
	// Budget, when set, sizes pages adaptively within MaxRows and MaxBytes (BulkMaxBytes for
	// bulk pages).
	Budget *scheduler.Budget
	// Grants, when set, is the access-queue session that every commit takes a background
	// write grant from: set it when the destination is the local wallet.
	Grants *scheduler.Session
	// Retries and Backoff bound the retries of a commit whose acknowledgement was lost.
	Retries int
	Backoff time.Duration

	// hook, in tests, runs at each state change before the progress callback.
	hook func(Progress)
}

// Validate returns the error Run would refuse these options with (wrapping
// wallet.ErrInvalidArgument), or nil, without touching any store: a caller that must open or
// create files first checks here so that a refusal leaves nothing behind. Zero values stand
// for their defaults, as in Run.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	switch {
	case o.MaxRows < 1 || o.MaxRows > MaxRows:
		return o, fmt.Errorf("max rows %d outside 1..%d: %w", o.MaxRows, MaxRows, wallet.ErrInvalidArgument)
	case o.MaxBytes < 1 || o.MaxBytes > MaxBytes:
		return o, fmt.Errorf("max bytes %d outside 1..%d: %w", o.MaxBytes, MaxBytes, wallet.ErrInvalidArgument)
	case o.SnapshotLifetime < 0 || o.SnapshotLifetime > time.Hour:
		return o, fmt.Errorf("snapshot lifetime %v outside 0..1h: %w", o.SnapshotLifetime, wallet.ErrInvalidArgument)
	case o.Retries < 0 || o.Backoff < 0:
		return o, fmt.Errorf("negative retries or backoff: %w", wallet.ErrInvalidArgument)
	case o.Bulk && o.Grants != nil:
		return o, fmt.Errorf("bulk pages into a destination that takes access grants (the local wallet): %w", wallet.ErrInvalidArgument)
	case o.Mirror && (o.Grants != nil || o.Active == wallet.KeepDestinationActive):
		return o, fmt.Errorf("an exact copy into a live wallet (a pull, or a destination that takes access grants): %w", wallet.ErrInvalidArgument)
	}
	switch o.Active {
	case wallet.KeepSourceActive, wallet.KeepDestinationActive:
	default:
		return o, fmt.Errorf("active storage policy %q: %w", o.Active, wallet.ErrInvalidArgument)
	}
	return o, nil
}
