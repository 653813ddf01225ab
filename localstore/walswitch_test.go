package localstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// TestOpen_FirstOpenBesideAnAppTransaction: walletsync first opens a toolbox wallet (rollback
// journal) while a real toolbox transaction has read and not yet written. The switch to WAL
// and the migrations wait for the app instead of failing it: the open gives up with ErrBusy
// when the app stays in its transaction, the app's transaction commits, and the next open
// switches the file.
func TestOpen_FirstOpenBesideAnAppTransaction(t *testing.T) {
	ctx := context.Background()
	path, id := toolboxCreate(t)
	toolboxpeer.Run(t, nil, "fill", "--db", path, "--identity", id)
	if mode := journalModeOf(t, path); mode != "delete" {
		t.Fatalf("the toolbox's file runs in %q, want a rollback journal", mode)
	}

	app := toolboxpeer.StartAppTxn(t, path, id, "beside the first open")
	if s, err := Open(ctx, path, Options{BusyTimeout: 500 * time.Millisecond}); !errors.Is(err, wallet.ErrBusy) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("first open beside an app transaction: %v, want ErrBusy", err)
	}
	if r := app.Finish(); !r.Committed {
		t.Fatalf("the app's transaction failed beside walletsync's first open: %+v", r)
	}
	if mode := journalModeOf(t, path); mode != "delete" {
		t.Fatalf("the refused open left the file in %q", mode)
	}

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if mode := journalModeOf(t, path); mode != "wal" {
		t.Fatalf("after the first open: %q, want wal", mode)
	}
	app = toolboxpeer.StartAppTxn(t, path, id, "after the switch")
	if r := app.Finish(); !r.Committed {
		t.Fatalf("the app's transaction on the switched file: %+v", r)
	}
}

// journalModeOf reads the journal mode from the file's header, without opening it in
// SQLite: bytes 18 and 19 are 2 in WAL mode and 1 in a rollback journal.
func journalModeOf(t *testing.T, path string) string {
	t.Helper()
	b := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	switch {
	case b[18] == 2 && b[19] == 2:
		return "wal"
	case b[18] == 1 && b[19] == 1:
		return "delete"
	}
	return fmt.Sprintf("header %d/%d", b[18], b[19])
}

// toolboxCreate makes a wallet file the way a toolbox wallet app does (StorageKnex's
// migrate), in a rollback journal, and returns it with the identity the tests' app uses.
func toolboxCreate(t *testing.T) (path, identity string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "app.sqlite")
	toolboxpeer.Run(t, nil, "create", "--db", path, "--chain", "test", "--sik", FixtureIdentity(22), "--name", "app")
	return path, FixtureIdentity(21)
}
