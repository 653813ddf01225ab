package wallet

import (
	"errors"
	"fmt"
	"time"
)

// Typed errors. Every package wraps these with %w and a lowercase action, so callers tell
// failures apart with errors.Is; errors that carry details (a pid, a charge, a table) are
// struct types that unwrap to one of these sentinels.
var (
	// ErrDiskFull: the disk or the database is full (SQLITE_FULL, ENOSPC). The write did not
	// happen; it never poses as success.
	ErrDiskFull = errors.New("disk full")
	// ErrCorrupt: the file is not a database or its pages are damaged.
	ErrCorrupt = errors.New("database corrupt")
	// ErrBusy: another connection holds a lock longer than the bounded busy timeout.
	ErrBusy = errors.New("database busy")
	// ErrReadOnly: the file, its folder or the store handle does not allow writing.
	ErrReadOnly = errors.New("database read-only")
	// ErrSchemaTooNew: the file carries a walletsync or toolbox schema newer than this
	// binary knows. The file is left untouched.
	ErrSchemaTooNew = errors.New("schema newer than this walletsync")
	// ErrUnknownSchema: the file holds objects in walletsync's namespace that this binary
	// does not recognise, or is not a wallet-toolbox store at all.
	ErrUnknownSchema = errors.New("unrecognised schema")
	// ErrWrongChain: a chain is missing, unknown, or differs between two stores.
	ErrWrongChain = errors.New("wrong chain")
	// ErrWriterLocked: another process holds the wallet file's writer lock.
	ErrWriterLocked = errors.New("wallet locked by another walletsync process")
	// ErrNotFound: the identity, row or file asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: a caller passed an option or value outside its documented range.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotJSValue: a Go value has no exact JavaScript JSON form (invalid UTF-8, a
	// surrogate code point, NaN, an infinity, an integer beyond 2^53), so neither a BRC-40
	// message nor a BRC-38 document can carry it (see JSValueError).
	ErrNotJSValue = errors.New("value has no exact JavaScript JSON form")
	// ErrConstraint: a row breaks a constraint of the wallet schema (a unique index, a
	// foreign key, a NOT NULL column). Nothing of the statement's transaction was kept.
	ErrConstraint = errors.New("row breaks a constraint of the wallet schema")
	// ErrBundleInvalid: a whole-store bundle is damaged, incomplete or not what its manifest
	// says (see BundleError). Nothing was restored from it.
	ErrBundleInvalid = errors.New("bundle damaged or incomplete")
	// ErrNotEmpty: a restore found rows in a wallet that must be empty (see NotEmptyError).
	ErrNotEmpty = errors.New("wallet is not empty")
	// ErrFileExists: the file a command would write exists, and the caller did not ask to
	// replace it (see ReplaceError). Nothing was written.
	ErrFileExists = errors.New("file exists")
	// ErrProtectedFile: the file is one walletsync never replaces, even when asked: a wallet,
	// a file held by walletsync, anything in walletsync's data folder, anything that is not
	// a backup file (see ReplaceError). Nothing was written.
	ErrProtectedFile = errors.New("file is protected")
	// ErrUnauthorized: a storage server refused the request because the authenticated
	// identity may not touch the data asked for (toolbox WERR_UNAUTHORIZED): a key that is
	// not the wallet's identity, or another identity's rows. Nothing was written.
	ErrUnauthorized = errors.New("not authorized for this identity")
	// ErrNotImplemented: the peer does not implement the method or feature asked for
	// (toolbox WERR_NOT_IMPLEMENTED, JSON-RPC -32601).
	ErrNotImplemented = errors.New("not implemented by the peer")
	// ErrRemote: a storage server answered the request with an error of its own (see
	// toolbox.WalletError for the name and message it sent). Errors that carry it may also
	// match a more precise sentinel above.
	ErrRemote = errors.New("storage server refused the request")
	// ErrUnavailable: a storage server could not be reached, or its answer was lost (a
	// connection refused or reset, a timeout, a 5xx from a proxy or a restarting server).
	// The outcome of the request is unknown: a read may be sent again; a write is settled
	// by reading the server's state, never by sending it blindly again.
	ErrUnavailable = errors.New("storage server unavailable")
	// ErrChunkTooLarge: a BRC-40 chunk does not fit what its consumer accepts in one request
	// (a toolbox StorageServer's 30 MB body limit). Nothing was sent; a smaller chunk may fit.
	ErrChunkTooLarge = errors.New("chunk larger than the consumer accepts")
	// ErrNotActive: two stores of a wallet name different active stores (toolbox
	// WERR_NOT_ACTIVE); a sync does not choose between them, the person does.
	ErrNotActive = errors.New("stores disagree about the wallet's active store")
	// ErrBadSyncMessage: a BRC-40 request, chunk, result or sync map is malformed. Errors
	// that carry it are *SyncMessageError values, which also match ErrInvalidArgument.
	ErrBadSyncMessage = errors.New("malformed BRC-40 message")
	// ErrIDMapConflict: a producer id that a consumer already maps to one local id arrived
	// for another local id; the two stores disagree about identity (*IDMapConflictError).
	ErrIDMapConflict = errors.New("producer id already mapped to another local id")
	// ErrAmbiguousSyncState: the consumer holds more than one sync_states row for the user
	// and producer (the toolbox refuses the same: "Result must exist and be unique").
	ErrAmbiguousSyncState = errors.New("more than one sync state for one producer")

	// ErrSnapshotClosed: the snapshot view was closed or its context cancelled.
	ErrSnapshotClosed = errors.New("snapshot closed")
	// ErrSnapshotExpired: the snapshot view outlived its lifetime on the monotonic or the
	// wall clock; its late results are discarded.
	ErrSnapshotExpired = errors.New("snapshot expired")
	// ErrSnapshotBusy: another snapshot view is open on the same store.
	ErrSnapshotBusy = errors.New("another snapshot view is open")
	// ErrConcurrentRead: a read was started on a view while another read was in flight.
	ErrConcurrentRead = errors.New("concurrent read on one snapshot view")
	// ErrCursorMismatch: a cursor was given to a view or table other than the one that
	// issued it.
	ErrCursorMismatch = errors.New("cursor belongs to another view or table")
	// ErrRowTooLarge: the first row of a page does not fit the page's byte budget.
	ErrRowTooLarge = errors.New("row larger than the page budget")
	// ErrServerBusy: a remote provider refused the request for now (its open views or its
	// memory budget are full); the same request may succeed later (see BusyError).
	ErrServerBusy = errors.New("server busy")
)

// LockedError reports the holder of a wallet file's writer lock.
type LockedError struct {
	Path string // the wallet file
	PID  int    // the holder's process id, 0 when the lock file names none
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s: held by another process", e.Path)
	}
	return fmt.Sprintf("%s: held by walletsync process %d", e.Path, e.PID)
}

// Unwrap makes errors.Is(err, ErrWriterLocked) true.
func (e *LockedError) Unwrap() error { return ErrWriterLocked }

// ClassError carries an error from below (SQLite, the operating system) with the sentinel it
// belongs to (ErrDiskFull, ErrReadOnly, ErrBusy...), so that errors.Is finds the sentinel and
// errors.As still finds the original.
type ClassError struct {
	Class error // the sentinel
	Err   error // the original error
}

func (e *ClassError) Error() string { return fmt.Sprintf("%v: %v", e.Class, e.Err) }

// Unwrap returns both the sentinel and the original error.
func (e *ClassError) Unwrap() []error { return []error{e.Class, e.Err} }

// ReplaceError says why a command would not write a file at Path: Err is ErrFileExists (the
// caller may ask to replace it: the file is a backup file) or ErrProtectedFile (it may not).
type ReplaceError struct {
	Path   string
	Reason string // what the file is, in words: "a wallet (SQLite database)"
	Err    error  // ErrFileExists or ErrProtectedFile
}

func (e *ReplaceError) Error() string {
	if errors.Is(e.Err, ErrFileExists) {
		return fmt.Sprintf("%s exists (%s); nothing was written: choose another name, or ask to replace it", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s is %s: walletsync never replaces it; nothing was written", e.Path, e.Reason)
}

// Unwrap returns the sentinel that classifies the refusal.
func (e *ReplaceError) Unwrap() error { return e.Err }

// RowTooLargeError names the first row of a page that does not fit the page's byte budget.
// The row was not skipped: the caller reads it alone, in a one-row page with a byte limit of
// at least Charge (up to MaxFrameBytes), or gives up with this error.
type RowTooLargeError struct {
	Table  TableName
	Key    []any // the row's paging key
	Charge int64 // the row's byte charge (see Table.Charge)
	Limit  int64 // the byte limit it was refused under
}

func (e *RowTooLargeError) Error() string {
	return fmt.Sprintf("%s row %v: charge %d bytes exceeds the page limit of %d", e.Table, e.Key, e.Charge, e.Limit)
}

// Unwrap makes errors.Is(err, ErrRowTooLarge) true.
func (e *RowTooLargeError) Unwrap() error { return ErrRowTooLarge }

// BusyError is a remote provider's "busy, retry after" answer: it applied nothing, and the
// same request may be sent again after RetryAfter.
type BusyError struct {
	Reason     string        // what is full, in words ("open views of this identity")
	RetryAfter time.Duration // the server's hint; 0 when it gave none
}

func (e *BusyError) Error() string {
	if e.RetryAfter <= 0 {
		return fmt.Sprintf("server busy: %s", e.Reason)
	}
	return fmt.Sprintf("server busy: %s; retry after %v", e.Reason, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrServerBusy) true.
func (e *BusyError) Unwrap() error { return ErrServerBusy }

// SchemaError reports why a store's schema was refused.
type SchemaError struct {
	Path   string
	Reason string
	Err    error // ErrSchemaTooNew or ErrUnknownSchema
}

func (e *SchemaError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Path, e.Reason, e.Err) }

// Unwrap returns the sentinel that classifies the refusal.
func (e *SchemaError) Unwrap() error { return e.Err }

// NotEmptyError names the first table that keeps a wallet from being empty: a restore, which
// keeps the document's ids, goes only into a wallet with no rows but its settings.
type NotEmptyError struct {
	Path  string // the wallet file
	Table string // a wallet-toolbox table, monitor_events included
	Rows  int64
}

func (e *NotEmptyError) Error() string {
	rows := "rows"
	if e.Rows == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%s is not empty (%s holds %d %s): a restore needs an empty wallet; merge into this one instead", e.Path, e.Table, e.Rows, rows)
}

// Unwrap makes errors.Is(err, ErrNotEmpty) true.
func (e *NotEmptyError) Unwrap() error { return ErrNotEmpty }

// JSValueError reports why a Go value has no exact JavaScript JSON form; AppendJSString,
// AppendJSNumber and AppendJSInt return it. It never carries the value itself: strings in a
// wallet include key material.
type JSValueError struct {
	Kind   string // "string" or "number"
	Offset int    // byte offset of the offending sequence in a string; 0 for numbers
	Reason string
}

func (e *JSValueError) Error() string {
	if e.Kind == "string" {
		return fmt.Sprintf("JSON %s: byte %d: %s", e.Kind, e.Offset, e.Reason)
	}
	return fmt.Sprintf("JSON %s: %s", e.Kind, e.Reason)
}

// Unwrap makes errors.Is(err, ErrNotJSValue) true.
func (e *JSValueError) Unwrap() error { return ErrNotJSValue }

// BundleError says why a whole-store bundle was refused: a file missing, truncated or with
// another digest, a manifest that cannot be read or that the database contradicts, a copy
// that fails SQLite's checks. It unwraps to ErrBundleInvalid and to the cause, when there is
// one (fs.ErrNotExist, ErrCorrupt, ...).
type BundleError struct {
	Dir    string // the bundle folder
	File   string // the file at fault, relative to Dir; "" for the bundle as a whole
	Reason string
	Err    error // the cause, or nil
}

func (e *BundleError) Error() string {
	where := e.Dir
	if e.File != "" {
		where += ": " + e.File
	}
	if e.Err != nil {
		return fmt.Sprintf("bundle %s: %s: %v", where, e.Reason, e.Err)
	}
	return fmt.Sprintf("bundle %s: %s", where, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBundleInvalid) true, and exposes the cause.
func (e *BundleError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBundleInvalid}
	}
	return []error{ErrBundleInvalid, e.Err}
}

// UnstorableError names a value a store cannot hold exactly. The store refuses the whole
// page or chunk rather than lose or alter the value, and writes nothing of it: PostgreSQL's
// text holds neither a NUL byte nor invalid UTF-8, both of which SQLite's text holds. It
// never carries the value itself (text in a wallet includes key material).
type UnstorableError struct {
	Table  TableName
	Column string
	Key    []any // the row's key as the source sent it (Table.KeyOf)
	Reason string
}

func (e *UnstorableError) Error() string {
	return fmt.Sprintf("%s.%s of row %v: %s", e.Table, e.Column, e.Key, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidArgument) true.
func (e *UnstorableError) Unwrap() error { return ErrInvalidArgument }

// DanglingReferenceError reports a row whose foreign key names a row the destination never
// received: Table.Column holds ID, a source id that no id map maps. It matches
// ErrDanglingReference; a server answers it as an invalid parameter naming Param().
type DanglingReferenceError struct {
	Table  TableName
	Column string
	ID     int64
}

func (e *DanglingReferenceError) Error() string {
	return fmt.Sprintf("%s.%s = %d refers to a row never delivered", e.Table, e.Column, e.ID)
}

// Param names the value at fault as "table.column", the parameter a toolbox
// WERR_INVALID_PARAMETER carries.
func (e *DanglingReferenceError) Param() string { return string(e.Table) + "." + e.Column }

// Unwrap makes errors.Is(err, ErrDanglingReference) true.
func (e *DanglingReferenceError) Unwrap() error { return ErrDanglingReference }

// SyncMessageError says where a BRC-40 message is malformed.
type SyncMessageError struct {
	// Path locates the problem: "$" for the whole message, "offsets[3].name",
	// "transactions[2].rawTx", "provenTx.idMap.17".
	Path   string
	Reason string
}

func (e *SyncMessageError) Error() string {
	return fmt.Sprintf("BRC-40 message at %s: %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is true for ErrBadSyncMessage and ErrInvalidArgument.
func (e *SyncMessageError) Unwrap() []error { return []error{ErrBadSyncMessage, ErrInvalidArgument} }

// IDMapConflictError reports a producer id that would map to a second local id.
type IDMapConflictError struct {
	Entity   string // BRC-40 entity name, e.g. "transaction"
	SourceID int64  // the producer's id
	Mapped   int64  // the local id it is mapped to
	New      int64  // the other local id it arrived for
}

func (e *IDMapConflictError) Error() string {
	return fmt.Sprintf("%s id %d is mapped to local id %d, now to %d", e.Entity, e.SourceID, e.Mapped, e.New)
}

// Unwrap makes errors.Is(err, ErrIDMapConflict) true.
func (e *IDMapConflictError) Unwrap() error { return ErrIDMapConflict }
