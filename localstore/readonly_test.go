package localstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/internal/safefile"
	"walletsync/testkit/testfs"
	"walletsync/wallet"
)

// TestOpen_ReadOnlyMedia puts a wallet on a file system mounted read-only (a write-protected
// card, a read-only share), where SQLite can make neither a WAL index nor a lock file. A
// read-only open works: settings, and a snapshot view that pages a table, which is all that
// `wallet info` and an export read. A writable open fails with wallet.ErrReadOnly, not
// SQLite's "unable to open database file (14)".
func TestOpen_ReadOnlyMedia(t *testing.T) {
	ctx := context.Background()
	src := mustCreate(t, Options{})
	identity := mustSeed(t, src, FixtureSmall, 1)
	src.Close()
	dir := testfs.Tmpfs(t, "4m")
	path := filepath.Join(dir, "wallet.sqlite")
	if err := safefile.CopyNew(src.Path(), path); err != nil {
		t.Fatal(err)
	}
	testfs.ReadOnly(t, dir)

	s, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open on read-only media: %v", err)
	}
	defer s.Close()
	if _, err := s.Settings(ctx); err != nil {
		t.Fatalf("settings: %v", err)
	}
	v, err := s.OpenSnapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	rows := readAll(t, v, wallet.TableTransactions, identity, wallet.Limits{Rows: 100, Bytes: 1 << 20})
	v.Close()
	if len(rows) == 0 {
		t.Fatal("the snapshot read no transactions")
	}
	_, err = Open(ctx, path, Options{})
	if !errors.Is(err, wallet.ErrReadOnly) || strings.Contains(err.Error(), "(14)") {
		t.Fatalf("writable open on read-only media: %v; want wallet.ErrReadOnly", err)
	}
}

// TestOpen_ReadOnlyMediaWithAWAL: a wallet copied with a WAL file that holds committed
// transactions (copied while it was open) cannot be read on read-only media without showing
// an older wallet; the read-only open refuses it with wallet.ErrReadOnly.
func TestOpen_ReadOnlyMediaWithAWAL(t *testing.T) {
	ctx := context.Background()
	src := mustCreate(t, Options{})
	mustSeed(t, src, FixtureSmall, 1)
	dir := testfs.Tmpfs(t, "4m")
	path := filepath.Join(dir, "wallet.sqlite")
	for _, suffix := range []string{"", "-wal"} {
		if err := safefile.CopyNew(src.Path()+suffix, path+suffix); err != nil {
			t.Fatal(err)
		}
	}
	testfs.ReadOnly(t, dir)
	if _, err := Open(ctx, path, Options{ReadOnly: true}); !errors.Is(err, wallet.ErrReadOnly) {
		t.Fatalf("read-only open of a wallet with a WAL on read-only media: %v; want wallet.ErrReadOnly", err)
	}
}
