package syncer_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// fileWatch sees every commit into a wallet file, by anyone: PRAGMA data_version on a
// connection of its own changes exactly when another connection commits, and a commit in
// WAL mode appends frames to the -wal file, which nothing else changes (a checkpoint copies
// frames into the main file and leaves the -wal alone).
type fileWatch struct {
	tb   testing.TB
	path string
	conn *sql.Conn
}

func watchFile(tb testing.TB, path string) *fileWatch {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &fileWatch{tb: tb, path: path, conn: conn}
}

// fileState is what a write into the wallet file would change.
type fileState struct {
	dataVersion int64
	wal         [32]byte // the -wal file's bytes (zero: no -wal)
	main        [32]byte // the main file's bytes
}

func (w *fileWatch) state() fileState {
	w.tb.Helper()
	var st fileState
	if err := w.conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&st.dataVersion); err != nil {
		w.tb.Fatal(err)
	}
	if b, err := os.ReadFile(w.path + "-wal"); err == nil {
		st.wal = sha256.Sum256(b)
	}
	b, err := os.ReadFile(w.path)
	if err != nil {
		w.tb.Fatal(err)
	}
	st.main = sha256.Sum256(b)
	return st
}

// TestPush_WritesNothingIntoTheSource: every kind of push (a sync to another wallet file,
// full, incremental and unchanged; a BRC-39 backup; a bundle) leaves the source wallet file
// exactly as it was: no commit, no WAL frame, not a byte of the main file. A wallet app
// transaction that read before a push and writes after it must not find the file changed.
func TestPush_WritesNothingIntoTheSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "wallet.sqlite")
	src, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := localstore.Seed(ctx, src, localstore.FixtureSmall, localstore.SeedOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := seed.IdentityKey
	// Closing the last connection checkpoints the WAL into the file and removes it: the
	// reopened store starts with nothing for its background checkpointer to copy, so the
	// main file's bytes must stay the same too.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if src, err = localstore.Open(ctx, path, localstore.Options{}); err != nil { // read-write, as the agent opens it
		t.Fatal(err)
	}
	defer src.Close()
	watch := watchFile(t, path)
	settings, err := src.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := localstore.Create(ctx, filepath.Join(dir, "backup.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()

	pushes := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"FullSync", func(t *testing.T) {
			if res := push(t, src, dst, id, syncer.Options{}); res.Kind != syncer.KindFull {
				t.Fatalf("kind %s, want full", res.Kind)
			}
		}},
		{"UnchangedSync", func(t *testing.T) {
			if res := push(t, src, dst, id, syncer.Options{}); res.Kind != syncer.KindUnchanged {
				t.Fatalf("kind %s, want unchanged", res.Kind)
			}
		}},
		{"BRC39Backup", func(t *testing.T) {
			v, err := src.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if _, err := portable.ExportBRC39(ctx, v, settings, id, "pw", brc39.DefaultKDFParams,
				filepath.Join(dir, "w.brc39"), portable.ExportOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Bundle", func(t *testing.T) {
			if _, err := bundle.Create(ctx, src, filepath.Join(dir, "bundle"), bundle.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, p := range pushes {
		t.Run(p.name, func(t *testing.T) {
			before := watch.state()
			p.run(t)
			if after := watch.state(); after != before {
				t.Fatalf("the push changed the source file: data_version %d -> %d, -wal changed %v, main file changed %v",
					before.dataVersion, after.dataVersion, after.wal != before.wal, after.main != before.main)
			}
		})
	}

	// An incremental push after the wallet app wrote: the app's write changes the file, the
	// push after it does not. (The main file is left out here: the store's checkpointer
	// copies the app's frames into it in the background, which changes no row.)
	t.Run("IncrementalSync", func(t *testing.T) {
		if err := src.AddLabel(ctx, id, 1, "written by the app"); err != nil {
			t.Fatal(err)
		}
		before := watch.state()
		if res := push(t, src, dst, id, syncer.Options{}); res.Kind != syncer.KindIncremental {
			t.Fatalf("kind %s, want incremental", res.Kind)
		}
		if after := watch.state(); after.dataVersion != before.dataVersion || after.wal != before.wal {
			t.Fatalf("the incremental push changed the source file: data_version %d -> %d, -wal changed %v",
				before.dataVersion, after.dataVersion, after.wal != before.wal)
		}
		mustEqual(t, src, dst, id)
	})
}

// TestChunkPush_WritesIntoTheWalletOnlyForANewServer holds docs/sync.md's table to account
// for the one push that writes into the wallet: the first push over the toolbox's wire to a
// store that never took part in a sync settles the active store as the toolbox's setActive
// does, which records one sync state (for the server) and stamps the user's updated_at,
// and changes nothing else; a second push writes nothing at all.
func TestChunkPush_WritesIntoTheWalletOnlyForANewServer(t *testing.T) {
	ctx := context.Background()
	src, id := seeded(t, localstore.FixtureSmall, 4)
	dst := newStore(t, wallet.ChainTest)
	rows := func() (compare.Wallet, int64, string) {
		t.Helper()
		w, err := compare.Read(ctx, src, id, compare.Options{Ignore: []string{"users.updated_at"}})
		if err != nil {
			t.Fatal(err)
		}
		db, err := openRaw(src.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var states int64
		var updated string
		if err := db.QueryRow(`SELECT (SELECT count(*) FROM sync_states), (SELECT updated_at FROM users WHERE identityKey = ?)`, id).Scan(&states, &updated); err != nil {
			t.Fatal(err)
		}
		return w, states, updated
	}
	opts := syncer.ChunkOptions{Active: wallet.KeepSourceActive, Settle: -1}
	before, states, updated := rows()
	if _, err := syncer.RunChunks(ctx, src, dst, id, opts); err != nil {
		t.Fatal(err)
	}
	after, statesAfter, updatedAfter := rows()
	if d := compare.Diff(before, after); d != "" || statesAfter != states+1 || updatedAfter == updated {
		t.Fatalf("the first push to a new server: sync states %d -> %d, users.updated_at %s -> %s, other changes:\n%s; want one sync state, a new updated_at and nothing else",
			states, statesAfter, updated, updatedAfter, d)
	}
	watch := watchFile(t, src.Path())
	was := watch.state()
	if _, err := syncer.RunChunks(ctx, src, dst, id, opts); err != nil {
		t.Fatal(err)
	}
	if now := watch.state(); now.dataVersion != was.dataVersion || now.wal != was.wal {
		t.Fatalf("a second push to the same server changed the wallet file: data_version %d -> %d, -wal changed %v", was.dataVersion, now.dataVersion, now.wal != was.wal)
	}
}
