package syncer_test

import (
	"context"
	"path/filepath"
	"testing"

	"walletsync/internal/toolboxpeer"
	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// toolboxWallet makes a wallet file the way a toolbox wallet app does (StorageKnex's
// migrate, then its insert methods) and opens it in walletsync as the agent does. It returns
// the store, its path and the user's identity key.
func toolboxWallet(t *testing.T) (*localstore.Store, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.sqlite")
	id := localstore.FixtureIdentity(21)
	toolboxpeer.Run(t, nil, "create", "--db", path, "--chain", "test", "--sik", localstore.FixtureIdentity(22), "--name", "app")
	toolboxpeer.Run(t, nil, "fill", "--db", path, "--identity", id)
	s, err := localstore.Open(context.Background(), path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path, id
}

// TestPush_AppTransactionCommits: a real toolbox transaction (StorageKnex on better-sqlite3,
// in its own process) has read and not yet written while walletsync syncs the wallet to a
// backup file, full, unchanged and incremental: when it then writes, it commits. Its
// control shows what the test would catch: a commit into the wallet file by another
// connection in the same moment fails the app's transaction (SQLITE_BUSY_SNAPSHOT), as the
// journal acknowledgement a sync used to write did.
func TestPush_AppTransactionCommits(t *testing.T) {
	ctx := context.Background()
	src, path, id := toolboxWallet(t)
	dst, err := localstore.Create(ctx, filepath.Join(t.TempDir(), "backup.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()

	app := toolboxpeer.StartAppTxn(t, path, id, "during the first sync")
	if res := push(t, src, dst, id, syncer.Options{MaxRows: 3}); res.Kind != syncer.KindFull || res.Pages < 3 {
		t.Fatalf("first sync: %+v, want a full sync of several pages", res)
	}
	if res := push(t, src, dst, id, syncer.Options{}); res.Kind != syncer.KindUnchanged {
		t.Fatalf("second sync: %s, want unchanged", res.Kind)
	}
	if res := app.Finish(); !res.Committed {
		t.Fatalf("the app's transaction failed beside the syncs: %+v", res)
	}

	app = toolboxpeer.StartAppTxn(t, path, id, "during an incremental sync")
	if res := push(t, src, dst, id, syncer.Options{}); res.Kind != syncer.KindIncremental || res.Rows == 0 {
		t.Fatalf("sync after the app's label: %+v, want an incremental sync carrying it", res)
	}
	if res := app.Finish(); !res.Committed {
		t.Fatalf("the app's transaction failed beside the incremental sync: %+v", res)
	}
	push(t, src, dst, id, syncer.Options{})
	mustEqual(t, src, dst, id)

	t.Run("ControlAWriteFailsIt", func(t *testing.T) {
		app := toolboxpeer.StartAppTxn(t, path, id, "beside a write")
		if err := src.AddLabel(ctx, id, 1, "walletsync writes"); err != nil {
			t.Fatal(err)
		}
		if res := app.Finish(); res.Committed || res.Code != "SQLITE_BUSY_SNAPSHOT" {
			t.Fatalf("the app's transaction beside a commit of another connection: %+v, want SQLITE_BUSY_SNAPSHOT", res)
		}
	})
}
