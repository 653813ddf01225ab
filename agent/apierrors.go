package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// isAPIFallthrough reports a request under /api/ that only a catch-all pattern (the
// dashboard's "GET /") matched: an unknown API path, which must answer a JSON error like
// every other route instead of the dashboard's page.
func isAPIFallthrough(path, pattern string) bool {
	return strings.HasPrefix(path, "/api/") && !strings.Contains(pattern, "/api/")
}

// invalidBody classifies a request body the JSON decoder refused as wallet.ErrInvalidArgument,
// once: a field's own decoder (a Duration, a Secret) may have classified it already, and
// "invalid argument: invalid argument" tells a person nothing twice.
func invalidBody(err error) error {
	if errors.Is(err, wallet.ErrInvalidArgument) {
		return fmt.Errorf("decode request body: %w", err)
	}
	return fmt.Errorf("decode request body: %v: %w", err, wallet.ErrInvalidArgument)
}

// Explanation is an error as a person reads it: what happened, in plain words that name
// the path involved, and the next step. The technical text stays in Detail, for the
// dashboard's "details" disclosure and the task log. API error bodies and failed tasks
// carry one (see explain).
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

// atPath marks err as concerning path; a nil err stays nil.
func atPath(path string, err error) error {
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

// explain puts err in plain words (see Explanation). Failures it does not know keep their
// own text, with their class's hint; WithHint's hint wins over any.
func explain(err error) Explanation {
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
