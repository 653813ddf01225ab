package portable

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/portable/brc39"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/testfs"
	"walletsync/wallet"
)

// exportTo runs the export path with the cheap sealer on a fresh view of the wallet at path.
func exportTo(t *testing.T, path, identity, dst string, opts ExportOptions) (ExportResult, error) {
	t.Helper()
	opts.ExportedAt = backuptest.ExportedAt
	return backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		return export(context.Background(), v, settings, identity, dst, opts, cheapSealer)
	})
}

// TestExport_ReplacesOnlyABackupWhenAsked: an export writes a new file, replaces an existing
// file only when asked and only when it is a backup file, and never writes into
// walletsync's data folder or over a wallet that a walletsync process is creating. Every
// refusal leaves the existing file as it was and no temporary file behind.
func TestExport_ReplacesOnlyABackupWhenAsked(t *testing.T) {
	src, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	oldBackup := append([]byte(brc39.Magic), "\x01 an older backup"...)
	oldDocument := []byte(`{"brc":38,"exportedAt":"2020-01-01T00:00:00.000Z"}`)
	for _, tc := range []struct {
		name      string
		existing  []byte // the file at the destination; nil for none
		overwrite bool
		protect   bool                           // the destination's folder is the data folder
		setup     func(t *testing.T, dst string) // more state at the destination
		want      error                          // nil: the export writes the file
	}{
		{name: "a new file", want: nil},
		{name: "a backup file, not asked", existing: oldBackup, want: wallet.ErrFileExists},
		{name: "a backup file, asked", existing: oldBackup, overwrite: true, want: nil},
		{name: "a BRC-38 document, asked", existing: oldDocument, overwrite: true, want: nil},
		{name: "a wallet, asked", overwrite: true, want: wallet.ErrProtectedFile,
			setup: func(t *testing.T, dst string) {
				s, err := localstore.Create(context.Background(), dst, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}},
		{name: "a token file, asked", existing: []byte("s3cret-token\n"), overwrite: true, want: wallet.ErrProtectedFile},
		{name: "an empty file, asked", existing: []byte{}, overwrite: true, want: wallet.ErrProtectedFile},
		{name: "a new file in the data folder", protect: true, want: wallet.ErrProtectedFile},
		{name: "a backup in the data folder, asked", existing: oldBackup, overwrite: true, protect: true, want: wallet.ErrProtectedFile},
		{name: "a symbolic link to a backup, asked", overwrite: true, want: wallet.ErrProtectedFile,
			setup: func(t *testing.T, dst string) {
				target := filepath.Join(t.TempDir(), "elsewhere.brc39")
				if err := os.WriteFile(target, oldBackup, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, dst); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a wallet another process is creating", want: wallet.ErrProtectedFile,
			setup: func(t *testing.T, dst string) { holdLock(t, safefile.WriterLockPath(dst)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "wallet.brc39")
			if tc.existing != nil {
				if err := os.WriteFile(dst, tc.existing, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, dst)
			}
			before := listDir(t, dir)
			var protected []string
			if tc.protect {
				protected = []string{dir}
			}
			res, err := exportTo(t, src, id, dst, ExportOptions{Overwrite: tc.overwrite, Protected: protected})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(dst); !bytes.HasPrefix(b, []byte(brc39.Magic)) || int64(len(b)) != res.Size {
					t.Fatal("the destination does not hold the new file")
				}
				return
			}
			var re *wallet.ReplaceError
			if !errors.Is(err, tc.want) || !errors.As(err, &re) {
				t.Fatalf("export: %v; want a *wallet.ReplaceError matching %v", err, tc.want)
			}
			if after := listDir(t, dir); after != before {
				t.Fatalf("the folder changed: %s, was %s", after, before)
			}
		})
	}
}

// listDir describes a folder: each entry's name, size and first bytes.
func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out = append(out, e.Name()...)
		out = append(out, ':')
		out = append(out, b[:min(len(b), 32)]...)
		out = append(out, ';')
	}
	return string(out)
}

// holdLock locks the lock file at path, as a walletsync process creating a wallet does,
// until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := safefile.TryLock(f); err != nil {
		t.Fatal(err)
	}
}

// TestExport_DiskFullIsTyped exports onto a disk that cannot hold the file: the export fails
// with wallet.ErrDiskFull, and leaves no temporary file behind.
func TestExport_DiskFullIsTyped(t *testing.T) {
	src, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	dir := testfs.Tmpfs(t, "16k")
	_, err := exportTo(t, src, id, filepath.Join(dir, "wallet.brc39"), ExportOptions{})
	if !errors.Is(err, wallet.ErrDiskFull) {
		t.Fatalf("export onto a full disk: %v; want wallet.ErrDiskFull", err)
	}
	requireOnlyFiles(t, dir)
}
