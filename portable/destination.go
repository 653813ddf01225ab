package portable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"walletsync/internal/safefile"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// What an export may replace. An export writes a new file; it replaces an existing one only
// when asked (ExportOptions.Overwrite: --force on the command line, "overwrite": true in the
// API), and even then only a file that is itself a backup file, recognised by its first
// bytes (a BRC-39 header, or a BRC-38 document's opening). Never, whatever is asked:
//
//   - a wallet (a SQLite database): `export --db w.sqlite --out w.sqlite` once destroyed the
//     wallet it was exporting;
//   - a wallet a walletsync process is creating at that path right now (its writer lock is
//     held before the file exists);
//   - anything in walletsync's data folder (ExportOptions.Protected): the agent's token,
//     secrets, configuration and staging files;
//   - anything else that is not a backup file (a document, a key file): an export cannot
//     know what it would destroy.
//
// The refusals are *wallet.ReplaceError values, made before any work, so a person is told
// before typing a password or waiting for Argon2id. The final move never replaces a file it
// was not allowed to (safefile.RenameNew), so a file that appears while the export runs is
// kept too.

// backupOpenings are the first bytes of the files an export may replace.
var backupOpenings = [][]byte{[]byte(brc39.Magic), []byte(`{"brc":38,`)}

// sqliteOpening is the first 16 bytes of every SQLite database.
var sqliteOpening = []byte("SQLite format 3\x00")

// CheckExportPath tells whether an export with opts may write path: nil, with replace set
// when path holds a backup file the export will replace, or a *wallet.ReplaceError
// (ErrFileExists or ErrProtectedFile), or the error met looking. It reads at most the first
// 16 bytes of an existing file.
func CheckExportPath(path string, opts ExportOptions) (replace bool, err error) {
	abs, err := resolvePath(path)
	if err != nil {
		return false, fmt.Errorf("check %s: %w", path, safefile.Classify(err))
	}
	refuse := func(reason string, class error) (bool, error) {
		return false, &wallet.ReplaceError{Path: path, Reason: reason, Err: class}
	}
	for _, dir := range opts.Protected {
		if inside(abs, dir) {
			return refuse("inside walletsync's data folder "+dir, wallet.ErrProtectedFile)
		}
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A walletsync process may be creating a wallet here: it holds the lock first.
		if pid, held := safefile.LockHolder(safefile.WriterLockPath(abs)); held {
			return refuse(fmt.Sprintf("a wallet walletsync process %d is creating", pid), wallet.ErrProtectedFile)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("check %s: %w", path, safefile.Classify(err))
	case !fi.Mode().IsRegular():
		return refuse("not a regular file", wallet.ErrProtectedFile)
	}
	kind, err := fileKind(abs)
	switch {
	case err != nil:
		return false, fmt.Errorf("check %s: %w", path, safefile.Classify(err))
	case kind != "a backup file":
		return refuse(kind, wallet.ErrProtectedFile)
	case !opts.Overwrite:
		return refuse(kind, wallet.ErrFileExists)
	}
	return true, nil
}

// FileKind names what the file at path is, by its first bytes: "a backup file" (BRC-39,
// or BRC-38 JSON), "a wallet (SQLite database)", or "not a backup file"; or the error met
// reading it. It reads at most the first 16 bytes.
func FileKind(path string) (string, error) { return fileKind(path) }

// fileKind names what the file at path is, by its first bytes: "a backup file", "a wallet
// (SQLite database)", or "not a backup file".
func fileKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, len(sqliteOpening))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	if bytes.Equal(head, sqliteOpening) {
		return "a wallet (SQLite database)", nil
	}
	for _, o := range backupOpenings {
		if bytes.HasPrefix(head, o) {
			return "a backup file", nil
		}
	}
	return "not a backup file", nil
}

// resolvePath returns path made absolute with its folder's symbolic links resolved, so that
// two spellings of one place compare equal. The last element is kept: a symbolic link there
// is what a rename would replace.
func resolvePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// inside reports whether path (resolved) lies in the folder dir or is dir.
func inside(path, dir string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	} else if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// moveIntoPlace moves the finished temporary file tmp to dstPath: replacing it when
// CheckExportPath allowed that (replace), and otherwise never, so that a file that appeared
// at dstPath while the export ran is kept and the export fails with ErrFileExists.
func moveIntoPlace(tmp, dstPath string, replace bool) error {
	if replace {
		return safefile.Classify(os.Rename(tmp, dstPath))
	}
	err := safefile.RenameNew(tmp, dstPath)
	if errors.Is(err, fs.ErrExist) {
		return &wallet.ReplaceError{Path: dstPath, Reason: "it appeared while the export ran", Err: wallet.ErrFileExists}
	}
	return safefile.Classify(err)
}

// diskWriter classifies the errors of writes to the export's file (a full disk becomes
// wallet.ErrDiskFull), which the encoder and the encrypter pass up as they are, and counts
// the bytes written: the result's Size.
type diskWriter struct {
	f *os.File
	n int64
}

func (w *diskWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, safefile.Classify(err)
}
