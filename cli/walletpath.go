package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// checkWalletArg refuses, before anything opens or creates it, a wallet file flag (--from,
// --to of `sync`) that cannot be one, and says what the path is and what to do instead:
// SQLite's "file is not a database" about a healthy backup file, or a lock file's name for a
// missing folder, would send a person looking for the wrong problem. With create, a missing
// file is fine (the sync creates it) as long as its folder exists. The errors match
// wallet.ErrInvalidArgument or wallet.ErrNotFound and carry a hint.
func checkWalletArg(flagName, path string, create bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && create:
		dir := filepath.Dir(path)
		if di, derr := os.Stat(dir); derr != nil || !di.IsDir() {
			return api.WithHint(said(wallet.ErrNotFound, "--%s %s: the folder %s does not exist", flagName, path, dir),
				fmt.Sprintf("create the folder first (mkdir -p %s), or choose a file in a folder that exists", dir))
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		return api.WithHint(said(wallet.ErrNotFound, "--%s %s: no such file", flagName, path),
			"check the path: --"+flagName+" names the wallet's SQLite file")
	case err != nil:
		return fmt.Errorf("--%s %s: %w", flagName, path, err)
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(path, bundle.ManifestName)); err == nil {
			return api.WithHint(said(wallet.ErrInvalidArgument, "--%s %s is a walletsync bundle folder, not a wallet file", flagName, path),
				"restore it into a wallet file first: walletsync bundle restore")
		}
		return api.WithHint(said(wallet.ErrInvalidArgument, "--%s %s is a folder, not a wallet file", flagName, path),
			"name a file, such as "+filepath.Join(path, "backup.sqlite"))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--%s %s: %w", flagName, path, err)
	}
	defer f.Close()
	head := make([]byte, len(brc39.Magic))
	n, _ := io.ReadFull(f, head)
	if bytes.Equal(head[:n], []byte(brc39.Magic)) {
		return api.WithHint(said(wallet.ErrInvalidArgument, "--%s %s is an encrypted BRC-39 backup file, not a wallet: sync copies between wallet files", flagName, path),
			fmt.Sprintf("to bring the backup into a wallet, import it: walletsync import --in %s --db WALLET.sqlite (a new --db file restores it whole)", path))
	}
	return nil
}

// saidError is an error whose text is said in full by its message: it matches class (a
// wallet sentinel, for errors.Is) without appending the sentinel's own words.
type saidError struct {
	msg   string
	class error
}

func (e *saidError) Error() string { return e.msg }

// Unwrap returns the class.
func (e *saidError) Unwrap() error { return e.class }

// said returns a *saidError of class with the message format makes of args.
func said(class error, format string, args ...any) error {
	return &saidError{msg: fmt.Sprintf(format, args...), class: class}
}
