package wallet

import (
	"context"
	"fmt"
)

// Page limits of the snapshot reader. A page holds at most Rows rows whose byte charge
// (Table.Charge) sums to at most Bytes; the one exception is a single row read alone, which
// may be charged up to MaxFrameBytes.
const (
	DefaultPageRows  = 128
	MaxPageRows      = 1000
	DefaultPageBytes = 262_144
	MaxPageBytes     = 16 << 20
	// MaxFrameBytes is the ceiling for anything that travels as one unit: a one-row page,
	// a wire frame. A row above it cannot be synced and is refused, never skipped.
	MaxFrameBytes = 64 << 20
)

// Limits bounds one page. The zero value means the defaults.
type Limits struct {
	Rows  int
	Bytes int64
}

// WithDefaults fills zero fields with DefaultPageRows and DefaultPageBytes.
func (l Limits) WithDefaults() Limits {
	if l.Rows == 0 {
		l.Rows = DefaultPageRows
	}
	if l.Bytes == 0 {
		l.Bytes = DefaultPageBytes
	}
	return l
}

// Validate accepts Rows in 1..MaxPageRows and Bytes in 1..MaxPageBytes, or a one-row page
// with Bytes up to MaxFrameBytes; anything else is an error wrapping ErrInvalidArgument.
func (l Limits) Validate() error {
	if l.Rows < 1 || l.Rows > MaxPageRows {
		return fmt.Errorf("page rows %d outside 1..%d: %w", l.Rows, MaxPageRows, ErrInvalidArgument)
	}
	maxBytes := int64(MaxPageBytes)
	if l.Rows == 1 {
		maxBytes = MaxFrameBytes
	}
	if l.Bytes < 1 || l.Bytes > maxBytes {
		return fmt.Errorf("page bytes %d outside 1..%d: %w", l.Bytes, maxBytes, ErrInvalidArgument)
	}
	return nil
}

// Cursor is an opaque position in one table of one snapshot view. The empty Cursor is the
// start of a table. A cursor is only valid for the view and table that issued it; any other
// view refuses it with ErrCursorMismatch. Cursors are plain strings so that they travel over
// the wire and into checkpoints unchanged.
type Cursor string

// Page is one bounded, ordered slice of a table, read from a snapshot view.
type Page struct {
	Table TableName
	Rows  []Row
	// Next resumes reading after the last row of this page.
	Next Cursor
	// Done is true when the view holds no rows after this page in this table.
	Done bool
	// Bytes is the summed byte charge of Rows.
	Bytes int64
}

// PageRequest asks a snapshot view for the next page of one table, scoped to one user as
// BRC-40 scopes it (see Scope).
type PageRequest struct {
	Table       TableName
	IdentityKey string
	After       Cursor
	Limits      Limits
	// Incremental restricts the page to rows the view's change journal records as changed
	// above journal sequence Since.
	Incremental bool
	Since       int64
}

// PageReader is a consistent, read-only view of a store that hands out bounded pages.
// ReadPage returns the rows of req.Table after req.After, in key order, that fit
// req.Limits; it refuses a first row that does not fit with a *RowTooLargeError and never
// skips a row. Only one ReadPage runs at a time; a concurrent call fails with
// ErrConcurrentRead.
type PageReader interface {
	ReadPage(ctx context.Context, req PageRequest) (Page, error)
}

// RowCounter counts the rows a decoder reads from outside bytes, one call of Next before
// each row, so that the row past Limit is refused before a byte of it is read: a 64 MiB
// body of 33.5 M tiny rows decoded whole before its count was checked took 3.2 GB. The paged
// wire's JSON frames (limit MaxPageRows) and BRC-40 chunks (brc40.MaxChunkRows) count
// with it. The zero value refuses every row.
type RowCounter struct {
	Limit int
	n     int
}

// Next counts one more row about to be read, or returns a *RowLimitError when Limit rows
// were read already.
func (c *RowCounter) Next() error {
	if c.n >= c.Limit {
		return &RowLimitError{Limit: c.Limit}
	}
	c.n++
	return nil
}

// RowLimitError refuses a message carrying more rows than its limit; nothing past the limit
// was read.
type RowLimitError struct{ Limit int }

func (e *RowLimitError) Error() string { return fmt.Sprintf("more than %d rows", e.Limit) }

// Unwrap makes errors.Is(err, ErrInvalidArgument) true.
func (e *RowLimitError) Unwrap() error { return ErrInvalidArgument }
