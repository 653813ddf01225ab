package agent

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

// checkWalletFile refuses, before anything opens it, a path that cannot be a wallet, and
// says in words what it is instead: a person choosing the wallet to protect may well pick a
// backup file or a bundle folder, and SQLite's "file is not a database" would send them
// looking for damage. A SQLite file passes; localstore.Open then decides whether it holds the
// toolbox's schema (wallet.ErrUnknownSchema when not). The error wraps
// wallet.ErrInvalidArgument (or wallet.ErrNotFound for a missing path) and carries a hint.
func checkWalletFile(path string) error {
	const next = "choose the wallet app's own SQLite file (for BSV Desktop, ~/.bsv-desktop/wallet-<identity>-<chain>.sqlite)"
	if !filepath.IsAbs(path) {
		return api.WithHint(fmt.Errorf("check wallet %q: not a full path: %w", path, wallet.ErrInvalidArgument),
			"type the wallet's full path, starting at the root of the disk")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return api.WithHint(fmt.Errorf("check wallet %s: nothing is there: %w", path, wallet.ErrNotFound), next)
	case err != nil:
		return fmt.Errorf("check wallet %s: %w", path, err)
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(path, bundle.ManifestName)); err == nil {
			return api.WithHint(fmt.Errorf("check wallet %s: a walletsync bundle folder, not a wallet: %w", path, wallet.ErrInvalidArgument),
				"restore the bundle into a wallet file first (walletsync bundle restore, or the Restore page), then choose that file")
		}
		return api.WithHint(fmt.Errorf("check wallet %s: a folder, not a file: %w", path, wallet.ErrInvalidArgument), next)
	case !fi.Mode().IsRegular():
		return api.WithHint(fmt.Errorf("check wallet %s: not a regular file: %w", path, wallet.ErrInvalidArgument), next)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check wallet %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("check wallet %s: %w", path, err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte(brc39.Magic)):
		return api.WithHint(fmt.Errorf("check wallet %s: an encrypted BRC-39 backup file, not a wallet: %w", path, wallet.ErrInvalidArgument),
			"restore it into a new wallet file first (walletsync import, or the Restore page), then choose that file")
	case n == 0:
		return api.WithHint(fmt.Errorf("check wallet %s: an empty file, not a wallet: %w", path, wallet.ErrInvalidArgument), next)
	case !bytes.Equal(head, sqliteMagic):
		return api.WithHint(fmt.Errorf("check wallet %s: not a SQLite database, so not a toolbox wallet: %w", path, wallet.ErrInvalidArgument), next)
	}
	return nil
}
