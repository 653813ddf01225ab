package api

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// APIError is the error body of every failed API request:
// {"error": {"code": "...", "message": "...", "hint": "..."}}.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Path is the path the error concerns; Detail the technical text behind a Message in
	// plain words (see Explanation).
	Path   string `json:"path,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func (e *APIError) Error() string {
	if e.Hint == "" {
		return e.Message
	}
	return e.Message + " (" + e.Hint + ")"
}

type errorBody struct {
	Error *APIError `json:"error"`
}

// Explanation is an error as a person reads it: what happened, in plain words that name
// the path involved, and the next step. The technical text stays in Detail, for the
// dashboard's "details" disclosure and the task log. API error bodies and failed tasks
// carry one (see Explain).
type Explanation struct {
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Path    string `json:"path,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// PathError says which path of the person's an error concerns (a backup wallet file, a
// backup folder, a file to import), so that the explanation names it rather than a temp
// file or the agent's own folders.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *PathError) Unwrap() error { return e.Err }

// AtPath marks err as concerning path; a nil err stays nil.
func AtPath(path string, err error) error {
	if err == nil {
		return nil
	}
	return &PathError{Path: path, Err: err}
}

// tempName matches the private temp files walletsync writes before a rename
// (".<name>.tmp-123", ".<name>.new-123"): an explanation names the file they become.
var tempName = regexp.MustCompile(`^\.(.+)\.(?:tmp|new)(?:-[^/\\]*)?$`)

// pathIn returns the path err concerns: a PathError's, else the path of the file system
// error inside it with temp names turned into the names they stand for; "" when none.
func pathIn(err error) string {
	if pe, ok := errors.AsType[*PathError](err); ok {
		return pe.Path
	}
	if fe, ok := errors.AsType[*fs.PathError](err); ok {
		dir, base := filepath.Split(fe.Path)
		if m := tempName.FindStringSubmatch(base); m != nil {
			return dir + m[1]
		}
		return fe.Path
	}
	return ""
}

// explanations say, for each kind of failure a person meets, what happened (%s is the path,
// or "the file" without one) and what to do. The first match wins.
var explanations = []struct {
	err           error
	message, hint string
}{
	{ErrNoServiceManager, "This computer has no service manager that walletsync can install a per-user service with.",
		"walletsync keeps backing up while `walletsync agent` runs: add that command to your session's autostart instead."},
	{brc39.ErrAuthFailed, "That password does not open %s, or the file was changed after it was written. Nothing was changed.",
		"Check the password: it is case-sensitive and is the one chosen when the backup was made."},
	{brc39.ErrBadHeader, "%s is not an encrypted walletsync backup (a BRC-39 file).",
		"Choose a backup file: its name ends in .brc39, and it was written by walletsync or a BSV wallet's export."},
	{brc39.ErrTruncated, "%s is cut short: it ends before the backup does, so it cannot be restored.",
		"Copy the file again from where it came from, or choose an older backup."},
	{ErrWalletOpenElsewhere, "%s is open in another program (the wallet app, or another walletsync), so it was not replaced: your wallet is unchanged.",
		"Close the wallet app, and any other program that has the wallet open, then restore again."},
	{wallet.ErrNotEmpty, "%s already holds a wallet: a restore only goes into an empty wallet or a new file.",
		"Restore into a new file (the name suggested beside your wallet), or choose Merge to add the backup to this wallet."},
	{wallet.ErrCorrupt, "%s is not a wallet file, or it is damaged: SQLite cannot read it as a database.",
		"If it is meant to be a backup wallet file, choose a new file name and the next sync writes a fresh copy there. If it is your wallet, restore it from a backup."},
	{wallet.ErrUnknownSchema, "%s is a database, but not a wallet-toolbox wallet.",
		"Choose the SQLite file of a @bsv/wallet-toolbox wallet, or a new file name for a backup wallet."},
	{wallet.ErrSchemaTooNew, "%s was written by a newer walletsync.", "Update walletsync to use it."},
	{wallet.ErrDiskFull, "The disk that holds %s is full.", "Free space on that disk, then run it again: nothing was half-written."},
	{wallet.ErrReadOnly, "%s cannot be written: the file, its folder or the disk is read-only.",
		"Check the file's permissions, and that the disk is not mounted read-only."},
	{wallet.ErrProtectedFile, "walletsync will not write over %s: it never replaces a wallet, its own files, or a file that is not a backup.",
		"Choose another file name."},
	{wallet.ErrFileExists, "%s already exists.", "Choose another file name, or ask to replace it (only a backup file can be replaced)."},
	{wallet.ErrWrongChain, "The two sides are on different networks (main and test): %s is on the other one.",
		"Choose a wallet or backup of the same network."},
	{fs.ErrNotExist, "%s does not exist.", "Check the path, connect the disk it is on, or create the folder."},
	{fs.ErrPermission, "walletsync is not allowed to use %s.", "Give your user account access to it, or choose a folder of your own."},
	{syscall.ENOTDIR, "%s is in the way: part of that path is a file, not a folder.", "Choose a path whose folders are folders."},
	{syscall.EISDIR, "%s is a folder, not a file.", "Give the path of a file: a folder and a file name in it."},
}

// Explain puts err in plain words (see Explanation). Failures it does not know keep their
// own text, with their class's hint; WithHint's hint wins over any.
func Explain(err error) Explanation {
	if sc, ok := errors.AsType[*ServerCheckError](err); ok {
		return Explanation{Message: sc.Message, Hint: sc.Hint, Path: pathIn(err), Detail: err.Error()}
	}
	_, hint := classify(err)
	path := pathIn(err)
	e := Explanation{Message: err.Error(), Hint: hint, Path: path}
	for _, x := range explanations {
		if !errors.Is(err, x.err) {
			continue
		}
		e.Message, e.Detail = strings.Replace(x.message, "%s", path, 1), err.Error()
		if path == "" {
			e.Message = capitalize(strings.Replace(x.message, "%s", "the file", 1))
		}
		if _, ok := errors.AsType[*hintError](err); !ok {
			e.Hint = x.hint
		}
		break
	}
	return e
}

// capitalize makes a sentence's first letter upper case ("the file is…" -> "The file is…").
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Typed errors of a whole-wallet restore from a bundle.
var (
	// ErrWalletInUse: a bundle restore was refused because a task uses the wallet (or waits
	// for it), or a job was refused the wallet because a bundle restore is replacing it
	// (the daemon says which task, in an error that matches it).
	ErrWalletInUse = errors.New("the wallet is in use")
	// ErrWalletOpenElsewhere: a bundle restore was refused because another process has the
	// wallet open (the wallet app, another walletsync); the wallet is unchanged.
	ErrWalletOpenElsewhere = errors.New("another program has the wallet open")
)

// Typed errors of the agent, which the API reports under their own codes (see
// errorClasses). The wallet package's sentinels cover the stores; these cover the daemon.
// Callers tell them apart with errors.Is.
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
	// per-user service with.
	ErrNoServiceManager = errors.New("no supported service manager")
	// ErrServerCheck: a storage server (or its signer) did not pass the agent's check
	// (*ServerCheckError says why, in words).
	ErrServerCheck = errors.New("storage server check failed")
)

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

// HintFor returns the hint a person sees for err: WithHint's, else the hint of err's class
// (what an API error body and a failed task carry), "" when neither has one.
func HintFor(err error) string {
	_, hint := classify(err)
	return hint
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

// ServerProblem says, in a stable word, why a storage server did not pass the agent's check.
// The strings are a wire format (API error details, the dashboard's tests).
type ServerProblem string

// Server problems, in the order the check meets them.
const (
	ServerUnreachable  ServerProblem = "unreachable"   // nothing answers at the URL
	ServerNotToolbox   ServerProblem = "not-toolbox"   // something answers, not a toolbox StorageServer
	ServerBadKey       ServerProblem = "bad-key"       // the key file is not a key walletsync can sign with
	ServerSignerFailed ServerProblem = "signer"        // the BRC-100 wallet did not sign
	ServerRefused      ServerProblem = "refused"       // the server refused the authenticated makeAvailable
	ServerWrongChain   ServerProblem = "wrong-chain"   // the server keeps the other network's wallets
	ServerUnauthorized ServerProblem = "unauthorized"  // the signer is not one of the wallet's identities
	ServerOtherWallet  ServerProblem = "other-wallet"  // a restore of another identity into a wallet that has its own
	ServerNothingThere ServerProblem = "nothing-there" // the server holds no rows of the identity
)

// ServerCheckError is a storage server (or its signer) that did not pass the agent's check,
// said in words a person reads (Message, Hint); Err is the technical cause. It matches
// ErrServerCheck and its cause (wallet.ErrUnavailable, wallet.ErrWrongChain,
// wallet.ErrUnauthorized...).
type ServerCheckError struct {
	URL     string
	Problem ServerProblem
	Message string
	Hint    string
	Err     error
}

func (e *ServerCheckError) Error() string {
	return fmt.Sprintf("check storage server %s: %s: %v", e.URL, e.Problem, e.Err)
}

// Unwrap makes errors.Is true for ErrServerCheck and for the cause.
func (e *ServerCheckError) Unwrap() []error { return []error{ErrServerCheck, e.Err} }
