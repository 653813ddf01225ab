package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomic_ReplacesWholeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteAtomic(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("folder holds %v; want only the file", entries)
	}
}

func TestWriteAtomic_FailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteAtomic(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder in the way of the rename: the write fails, the temp file goes.
	blocked := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(blocked, []byte("new"), 0o600); err == nil {
		t.Fatal("rename over a non-empty folder succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("the old file says %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("folder holds %v; want the file and the folder, no temp file", entries)
	}
}

func TestRenameNew_MovesTheFile(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a")
	if err := os.WriteFile(from, []byte("whole"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RenameNew(from, to); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(to); err != nil || string(got) != "whole" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := os.Stat(from); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source is still there: %v", err)
	}
	if err := RenameNew(from, to); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("renaming a missing file: %v; want ErrNotExist", err)
	}
}

func TestRenameNew_NeverReplaces(t *testing.T) {
	for name, move := range map[string]func(from, to string) error{"RenameNew": RenameNew, "linkNoReplace": linkNoReplace} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			from, to := filepath.Join(dir, "new"), filepath.Join(dir, "wallet")
			if err := os.WriteFile(from, []byte("new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, []byte("held by another process"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := move(from, to); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("move over an existing file: %v; want fs.ErrExist", err)
			}
			if got, _ := os.ReadFile(to); string(got) != "held by another process" {
				t.Fatalf("the existing file now says %q", got)
			}
			if got, _ := os.ReadFile(from); string(got) != "new" {
				t.Fatalf("the source now says %q", got)
			}
		})
	}
}

func TestTryLock_SecondOpenRefusedUntilUnlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	first, second := open(), open()
	if err := TryLock(first); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(second); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v; want ErrLocked", err)
	}
	if err := Unlock(first); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(second); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
}

func TestCopyNew_CopiesAndRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	want := bytes.Repeat([]byte("wallet page "), 100_000) // larger than io.Copy's buffer
	if err := os.WriteFile(from, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopyNew(from, to); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(to)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("copy holds %d bytes (%v), want %d", len(got), err, len(want))
	}
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if err := CopyNew(from, to); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("copy over an existing file: %v, want fs.ErrExist", err)
	}
	if err := CopyNew(filepath.Join(dir, "missing"), filepath.Join(dir, "other")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("copy of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestSameFile_OneFileUnderManyNames(t *testing.T) {
	dir := t.TempDir()
	wallet := filepath.Join(dir, "wallet.sqlite")
	if err := os.WriteFile(wallet, []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.sqlite")
	if err := os.WriteFile(other, []byte("w"), 0o600); err != nil {
		t.Fatal(err)
	}
	link, hard := filepath.Join(dir, "link.sqlite"), filepath.Join(dir, "hard.sqlite")
	if err := os.Symlink(wallet, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(wallet, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    string
		want bool
	}{
		{"itself", wallet, true},
		{"a longer spelling", filepath.Join(sub, "..", "wallet.sqlite"), true},
		{"a symbolic link", link, true},
		{"a hard link", hard, true},
		{"another file", other, false},
		{"a file that does not exist", filepath.Join(dir, "new.sqlite"), false},
	} {
		if got := SameFile(wallet, tc.b); got != tc.want {
			t.Errorf("%s: SameFile = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Through a linked folder, before the file exists.
	linkedDir := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(dir, linkedDir); err != nil {
		t.Fatal(err)
	}
	if !SameFile(filepath.Join(dir, "new.sqlite"), filepath.Join(linkedDir, "new.sqlite")) {
		t.Error("a new file through a linked folder is not the same file")
	}
}
