package agent

import (
	"errors"
	"fmt"
	"net/http"

	"walletsync/wallet"
)

// Typed errors of the agent. The wallet package's sentinels cover the stores; these cover
// the daemon itself. Callers tell them apart with errors.Is.
var (
	// ErrNotLoopback: an API bind address is not a loopback address. It also matches
	// wallet.ErrInvalidArgument.
	ErrNotLoopback = errors.New("address is not a loopback address")
	// ErrAgentRunning: another agent holds the data folder's lock (*AgentRunningError).
	ErrAgentRunning = errors.New("another walletsync agent uses this data folder")
	// ErrAgentNotRunning: no agent has published its address in the data folder.
	ErrAgentNotRunning = errors.New("no walletsync agent is running for this data folder")
	// ErrClosed: the bus or the task manager has been shut down.
	ErrClosed = errors.New("agent is shutting down")
	// ErrOpenToOthers: a file that holds a secret (the API token, the secrets file) can be
	// read by other users of the machine; it is refused, not used.
	ErrOpenToOthers = errors.New("file is open to other users")
	// ErrNoServiceManager: the platform has no service manager walletsync can install a
	// per-user service with (*ServiceError).
	ErrNoServiceManager = errors.New("no supported service manager")
	// ErrServerCheck: a storage server (or its signer) did not pass the agent's check
	// (*ServerCheckError says why, in words).
	ErrServerCheck = errors.New("storage server check failed")
)

// AgentRunningError names the process that holds a data folder's lock.
type AgentRunningError struct {
	Dir string // the data folder
	PID int    // the holder's process id, 0 when the lock file names none
}

func (e *AgentRunningError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s: %v", e.Dir, ErrAgentRunning)
	}
	return fmt.Sprintf("%s: %v (pid %d)", e.Dir, ErrAgentRunning, e.PID)
}

// Unwrap makes errors.Is(err, ErrAgentRunning) true.
func (e *AgentRunningError) Unwrap() error { return ErrAgentRunning }

// AddrError reports a refused API bind address.
type AddrError struct {
	Addr   string
	Reason string
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("bind %q: %s: %v", e.Addr, e.Reason, ErrNotLoopback)
}

// Unwrap makes errors.Is true for ErrNotLoopback and wallet.ErrInvalidArgument.
func (e *AddrError) Unwrap() []error { return []error{ErrNotLoopback, wallet.ErrInvalidArgument} }

// WithHint returns err carrying a hint for the person: what to do about it. The hint shows
// in the task's Hint and in API error bodies, in place of the hint of err's class. A nil
// err stays nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// errorClass is how one kind of failure is shown: the HTTP status and stable code of an API
// error, and the hint that a task or an API response carries.
type errorClass struct {
	err    error
	status int
	code   string
	hint   string
}

// errorClasses is read-only; the first match wins, so the more specific sentinels come
// before the general ones they also match.
var errorClasses = []errorClass{
	{ErrServerCheck, http.StatusUnprocessableEntity, "server_check", ""},
	{ErrNotLoopback, http.StatusBadRequest, "not_loopback", "Bind the API to 127.0.0.1, [::1] or localhost."},
	{wallet.ErrNotFound, http.StatusNotFound, "not_found", ""},
	{wallet.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument", ""},
	{ErrOpenToOthers, http.StatusForbidden, "open_to_others", "Run chmod 600 on the file; others may have read what it holds."},
	{ErrWalletOpenElsewhere, http.StatusConflict, "wallet_open", "Close the wallet app, and any other program that has the wallet open, then restore again."},
	{ErrWalletInUse, http.StatusConflict, "wallet_in_use", "Wait for the wallet's task to finish, or cancel it, then try again."},
	{wallet.ErrFileExists, http.StatusConflict, "file_exists", "Choose another file name, or ask to replace it: only a backup file can be replaced."},
	{wallet.ErrProtectedFile, http.StatusConflict, "protected_file", "Choose another file: walletsync never replaces a wallet, its own files, or anything that is not a backup file."},
	{wallet.ErrWriterLocked, http.StatusConflict, "wallet_locked", "Another walletsync process is writing to this wallet; wait for it to finish or stop it."},
	{wallet.ErrSnapshotBusy, http.StatusConflict, "busy", "Another task is reading this wallet; try again when it has finished."},
	{wallet.ErrBusy, http.StatusConflict, "busy", "The wallet is busy with another writer; try again shortly."},
	{ErrAgentRunning, http.StatusConflict, "agent_running", "Stop the other agent, or give this one another data folder."},
	{wallet.ErrReadOnly, http.StatusConflict, "read_only", "Check that the file and its folder are writable and the disk is not mounted read-only."},
	{wallet.ErrDiskFull, http.StatusInsufficientStorage, "disk_full", "Free space on the disk that holds the file, then run it again: nothing was half-written."},
	{wallet.ErrCorrupt, http.StatusUnprocessableEntity, "corrupt", "The file is damaged; restore it from a backup."},
	{wallet.ErrSchemaTooNew, http.StatusUnprocessableEntity, "schema_too_new", "The file was written by a newer walletsync; upgrade walletsync."},
	{wallet.ErrUnknownSchema, http.StatusUnprocessableEntity, "unknown_schema", "The file is not a wallet-toolbox wallet, or holds objects this walletsync does not know."},
	{wallet.ErrWrongChain, http.StatusUnprocessableEntity, "wrong_chain", "The two sides are on different networks (main or test); choose one on the same network."},
	{wallet.ErrWalletChangedSinceImport, http.StatusConflict, "wallet_changed", "The wallet app wrote to the wallet after this import began, so abandoning it could undo those writes: finish the import instead by importing the same file again."},
	{wallet.ErrImportInProgress, http.StatusConflict, "import_in_progress", "An import into this wallet stopped half-way: import the same file again to finish it, or abandon it on the Restore page."},
	{wallet.ErrOtherIdentity, http.StatusConflict, "other_identity", "The file belongs to another identity; tick the box in the preview if the wallet should hold both."},
	{wallet.ErrMergeConflict, http.StatusConflict, "merge_conflict", "The wallet already holds rows with the same unique keys; nothing was written. The preview lists them."},
	{ErrClosed, http.StatusServiceUnavailable, "shutting_down", "The agent is stopping; start it again."},
}

var internalClass = errorClass{status: http.StatusInternalServerError, code: "internal"}

// classify returns err's class and its hint (a WithHint hint wins over the class's).
func classify(err error) (errorClass, string) {
	c := internalClass
	for _, k := range errorClasses {
		if errors.Is(err, k.err) {
			c = k
			break
		}
	}
	if h := HintOf(err); h != "" {
		return c, h
	}
	return c, c.hint
}

// HintOf returns the advice that WithHint attached to err or to an error it wraps, or ""
// when there is none. Front ends (the dashboard through the API, the command line) show it
// under the error, so the person reads what to do next, not only what failed.
func HintOf(err error) string {
	if h, ok := errors.AsType[*hintError](err); ok {
		return h.hint
	}
	return ""
}
