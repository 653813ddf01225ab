package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/localstore"
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

// walletPlaces are where wallet apps keep toolbox wallets, under the home folder: BSV
// Desktop's current per-identity files and its two older names. The same folder holds
// private-key backups (privatekey<time>.txt): only these patterns are ever listed, so those
// are neither listed nor read. A function, so that no mutable state is global.
func walletPlaces() []struct{ app, dir, pattern string } {
	return []struct{ app, dir, pattern string }{
		{"BSV Desktop", ".bsv-desktop", "wallet-*-*.sqlite"},
		{"BSV Desktop", ".bsv-desktop", "wallet.db"},
		{"BSV Desktop", ".bsv-desktop", "wallet-test.db"},
	}
}

// findWallets lists the toolbox wallets in the places wallet apps keep them, each with its
// identities, network, size and last change, for the first run to offer. A file that does
// not open as a wallet is listed with the reason, so the person sees why it is not offered.
func (a *Agent) findWallets(ctx context.Context) ([]api.FoundWallet, error) {
	home := a.opts.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("find wallets: %w", err)
		}
		home = h
	}
	found := []api.FoundWallet{}
	for _, p := range walletPlaces() {
		paths, err := filepath.Glob(filepath.Join(home, p.dir, p.pattern))
		if err != nil {
			return nil, fmt.Errorf("find wallets: %w", err)
		}
		for _, path := range paths {
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			fw := api.FoundWallet{Path: path, App: p.app, SizeBytes: fi.Size(), Modified: fi.ModTime().UTC()}
			if err := describeWallet(ctx, &fw); err != nil {
				fw.Error = api.Explain(err).Message
			}
			found = append(found, fw)
		}
	}
	return found, nil
}

// describeWallet fills fw's network and identities from the file, opened read-only.
func describeWallet(ctx context.Context, fw *api.FoundWallet) error {
	if err := checkWalletFile(fw.Path); err != nil {
		return err
	}
	s, err := localstore.Open(ctx, fw.Path, localstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	fw.Chain = string(info.Settings.Chain)
	fw.SizeBytes = info.SizeBytes
	for _, id := range info.Identities {
		fw.Identities = append(fw.Identities, id.IdentityKey)
	}
	return nil
}
