package syncer_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/toolboxpeer"
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

// TestPull_WaitsForTheAppTransaction: a pull writes into the wallet, so each of its page
// commits waits until no program is inside a transaction on the file. A real toolbox
// transaction that has read when a pull's commit comes makes the commit wait, commits
// itself, and the pull then lands.
func TestPull_WaitsForTheAppTransaction(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux lets walletsync see another process's transaction without disturbing it (see the README)")
	}
	ctx := context.Background()
	app, path, id := toolboxWallet(t)
	backup := newStore(t, wallet.ChainTest)
	push(t, app, backup, id, syncer.Options{})
	if err := backup.AddLabel(ctx, id, 1, "only in the backup"); err != nil {
		t.Fatal(err)
	}

	txn := toolboxpeer.StartAppTxn(t, path, id, "beside a pull")
	committing := make(chan struct{})
	var once sync.Once
	pulled := make(chan error, 1)
	go func() {
		_, err := syncer.Run(ctx, backup, app, id, syncer.Options{Active: wallet.KeepDestinationActive, Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitting {
				once.Do(func() { close(committing) })
			}
			return nil
		}})
		pulled <- err
	}()
	<-committing
	if r := txn.Finish(); !r.Committed {
		t.Fatalf("the app's transaction failed beside a pull: %+v", r)
	}
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	// The backup's label is in the wallet, and the app's own goes back to the backup.
	push(t, app, backup, id, syncer.Options{})
	mustEqual(t, backup, app, id)
}
