package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/portable"
	"walletsync/wallet"
)

// sqliteMagic begins every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// CheckPath checks a path where the person types it, before anything runs: it is
// absolute, it exists (or its folder does, for what is created), it is a folder or a file
// as needed, walletsync can write where it writes, and it is neither a configured wallet
// nor inside the agent's data folder. A wrong path is an answer, not an error; an unknown
// purpose is wallet.ErrInvalidArgument.
func (a *Agent) CheckPath(_ context.Context, req api.PathCheckRequest) (api.PathCheck, error) {
	c, err := a.checkPath(req)
	if c.OK {
		c.Path = filepath.Clean(strings.TrimSpace(req.Path))
	}
	return c, err
}

func (a *Agent) checkPath(req api.PathCheckRequest) (api.PathCheck, error) {
	p := strings.TrimSpace(req.Path)
	bad := func(path, message, hint string) (api.PathCheck, error) {
		return api.PathCheck{Path: path, Message: message, Hint: hint}, nil
	}
	switch req.Purpose {
	case api.PathBackupFolder, api.PathBackupWallet, api.PathBackupFile, api.PathNewFile:
	default:
		return api.PathCheck{}, fmt.Errorf("check path: purpose %q: %w", req.Purpose, wallet.ErrInvalidArgument)
	}
	if p == "" {
		return bad(p, "Give a path.", "The full path, such as /home/you/Backups/wallet.sqlite.")
	}
	if !filepath.IsAbs(p) {
		return bad(p, fmt.Sprintf("%s is not a full path: it does not say where it starts.", p),
			"Give the full path, from the top of the disk (it starts with / or a drive letter).")
	}
	p = filepath.Clean(p)
	if data := string(a.opts.Dir); data != "" && (safefile.SameFile(p, data) || within(p, data) || within(resolvePath(p), resolvePath(data))) {
		return bad(p, fmt.Sprintf("%s is inside walletsync's own data folder (%s).", p, data),
			"Choose a place of your own: walletsync keeps its token, secrets and scratch files there.")
	}
	if req.Purpose != api.PathBackupFile {
		for _, w := range a.config().Wallets {
			if safefile.SameFile(p, w.Path) {
				return bad(p, fmt.Sprintf("%s is the wallet itself.", p), "A backup must be somewhere else: another file, another folder, ideally another disk.")
			}
		}
	}
	info, err := os.Stat(p)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		ex := api.Explain(api.AtPath(p, err))
		return bad(p, ex.Message, ex.Hint)
	}
	switch req.Purpose {
	case api.PathBackupFolder:
		if missing {
			return a.checkParent(p, "The folder will be created by the first backup.")
		}
		if !info.IsDir() {
			return bad(p, fmt.Sprintf("%s is a file, not a folder.", p), "Give a folder: backup files are written into it.")
		}
		return checkWritable(p, "")
	case api.PathBackupFile:
		if missing {
			return bad(p, fmt.Sprintf("%s does not exist.", p), "Check the name and the folder, and that the disk it is on is connected.")
		}
		if info.IsDir() {
			return bad(p, fmt.Sprintf("%s is a folder, not a backup file.", p), "Give the path of a backup file (its name ends in .brc39).")
		}
		switch kind, err := portable.FileKind(p); {
		case err != nil:
			ex := api.Explain(api.AtPath(p, err))
			return bad(p, ex.Message, ex.Hint)
		case kind == "a wallet (SQLite database)":
			return bad(p, fmt.Sprintf("%s is a wallet (SQLite database), not a backup file.", p),
				"A backup file is encrypted (its name ends in .brc39). To restore from a copy of a wallet, add it as a backup wallet file destination and restore from it.")
		case kind != "a backup file":
			return bad(p, fmt.Sprintf("%s is not a backup file: it does not begin as a BRC-39 file does.", p),
				"Give the path of a backup file that walletsync or your wallet exported (its name ends in .brc39).")
		}
		return api.PathCheck{OK: true, Path: p}, nil
	}
	// A file that walletsync writes.
	if !missing && info.IsDir() {
		return bad(p, fmt.Sprintf("%s is a folder, not a file.", p), "Add a file name to the path, such as "+filepath.Join(p, "backup-wallet.sqlite")+".")
	}
	if missing {
		return a.checkParent(p, "")
	}
	if req.Purpose == api.PathBackupWallet {
		if !isSQLite(p) {
			return bad(p, fmt.Sprintf("%s is not a wallet file: walletsync would have to replace it, and never does.", p),
				"Choose a new file name; the first sync creates the backup wallet there.")
		}
		return checkWritable(filepath.Dir(p), "An existing backup wallet: the next sync brings it up to date.")
	}
	// An existing file is replaced only when it is an older backup file and the person
	// asked (portable.CheckExportPath): say which file it is when it is anything else.
	for _, d := range a.config().Destinations {
		if d.Kind == api.DestinationSQLite && safefile.SameFile(p, d.Path) {
			return bad(p, fmt.Sprintf("%s is the backup wallet file of the destination %q: walletsync never writes another file in its place.", p, d.Name),
				"Choose a new file name, so that the backup wallet stays as it is.")
		}
	}
	switch kind, err := portable.FileKind(p); {
	case err != nil:
		ex := api.Explain(api.AtPath(p, err))
		return bad(p, ex.Message, ex.Hint)
	case kind == "a wallet (SQLite database)":
		return bad(p, fmt.Sprintf("%s is a wallet (SQLite database): walletsync never writes another file in its place.", p),
			"Choose a new file name, so that the wallet stays as it is.")
	case !req.Overwrite:
		return bad(p, fmt.Sprintf("%s already exists.", p), "Choose a new file name, so that nothing is replaced.")
	case kind != "a backup file":
		return bad(p, fmt.Sprintf("%s is not a backup file: walletsync replaces only an older backup file.", p),
			"Choose a new file name, so that the file stays as it is.")
	}
	return checkWritable(filepath.Dir(p), "")
}

// checkParent checks that a path to be created has a folder walletsync can write in.
func (a *Agent) checkParent(p, note string) (api.PathCheck, error) {
	dir := filepath.Dir(p)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return api.PathCheck{Path: dir, Message: fmt.Sprintf("The folder %s does not exist.", dir),
			Hint: "Create it first, or check that the disk it is on is connected."}, nil
	case err != nil:
		ex := api.Explain(api.AtPath(dir, err))
		return api.PathCheck{Path: dir, Message: ex.Message, Hint: ex.Hint}, nil
	case !info.IsDir():
		return api.PathCheck{Path: dir, Message: fmt.Sprintf("%s is a file, not a folder.", dir), Hint: "Choose a path inside a folder."}, nil
	}
	return checkWritable(dir, note)
}

// checkWritable checks that walletsync can create a file in dir, by creating (and removing)
// an empty private one: permissions alone do not tell about a read-only disk.
func checkWritable(dir, note string) (api.PathCheck, error) {
	f, err := os.CreateTemp(dir, ".walletsync-check-*")
	if err != nil {
		return api.PathCheck{Path: dir, Message: fmt.Sprintf("walletsync cannot write in %s.", dir),
			Hint: "Give your user account write access to it, or check that the disk is not read-only."}, nil
	}
	f.Close()
	os.Remove(f.Name())
	return api.PathCheck{OK: true, Path: dir, Note: note}, nil
}

// isSQLite reports whether the file at p begins as a SQLite database does (an empty file
// counts: SQLite makes a database of it).
func isSQLite(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	return n == 0 && errors.Is(err, io.EOF) || err == nil && bytes.Equal(head, sqliteMagic)
}

// within reports whether p lies inside dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "."
}
