package portable

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"walletsync/wallet"
)

// The staging folder. Decrypted plaintext and staging databases hold a wallet's keys in the
// clear, so they live only in walletsync's private folder (0700, files 0600), and only as long
// as they must:
//
//   - The plaintext of a BRC-39 file goes into a file that is unlinked the moment it is
//     created. It has no name while it holds data, so no crash, not even SIGKILL, leaves it
//     behind, and no other process can open it. (Where the system cannot unlink an open file,
//     on Windows, it is removed when closed.) A file whose tag fails is never kept in a
//     quarantine: decrypted with the right password, a file with a tampered tag is real key
//     material in the clear.
//   - A staging database (import-<digest>-<target>.sqlite) is made only once the tag and the
//     whole document have verified. It stays while the import it serves is unfinished, so
//     that a rerun resumes from it, and is removed when the import is done or refused, and
//     after a preview that no unfinished import needs.

// ensureStagingDir creates the staging folder, private to the user, or makes an existing one
// private.
func ensureStagingDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("no staging folder given: %w", wallet.ErrInvalidArgument)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create staging folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make staging folder private: %w", err)
	}
	return nil
}

// plaintextFile is a private staging file without a name.
type plaintextFile struct {
	*os.File
	name string // set only where the file could not be unlinked while open
}

func newPlaintextFile(dir string) (*plaintextFile, error) {
	f, err := os.CreateTemp(dir, "plaintext-*.json") // 0600
	if err != nil {
		return nil, fmt.Errorf("create plaintext staging file: %w", err)
	}
	p := &plaintextFile{File: f}
	if err := os.Remove(f.Name()); err != nil {
		p.name = f.Name()
	}
	return p, nil
}

// Close closes the file, which frees its data.
func (p *plaintextFile) Close() error {
	err := p.File.Close()
	if p.name != "" {
		if rerr := os.Remove(p.name); err == nil {
			err = rerr
		}
	}
	return err
}

// stagingPath returns the staging database of the import of the document digest into the
// wallet file target: one per document and wallet, so that imports of one document into two
// wallets never share it.
func stagingPath(dir, digest, target string) string {
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	t := sha256.Sum256([]byte(target))
	return filepath.Join(dir, fmt.Sprintf("import-%s-%x.sqlite", digest[:16], t[:8]))
}

// removeStaging removes a staging database and its companion files: WAL, shared memory,
// writer lock, and a file its creation left half-made (localstore builds it as "."+base+".new").
func removeStaging(path string) error {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove staging database: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, base) || strings.HasPrefix(name, "."+base+".new") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove staging database: %w", err)
	}
	return nil
}
