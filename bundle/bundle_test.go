package bundle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// The template wallets, built once by TestMain and only read afterwards: tp holds the toolbox
// fixture (10,000 labels, 64 proven transactions of 32 KiB) and the small one; small holds
// two small fixtures, for the tests that make many bundles and restores.
var tp, small template

func TestMain(m *testing.M) {
	if k, task, ok := crash.Child(); ok {
		crashChild(k, task)
	}
	dir, err := os.MkdirTemp("", "walletsync-bundle-test-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if tp, err = buildTemplate(dir, "toolbox.sqlite", localstore.FixtureToolbox); err == nil {
		small, err = buildTemplate(dir, "small.sqlite", localstore.FixtureSmall)
	}
	if err != nil {
		fmt.Println("build the template wallets:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCreate_RestoreEqualsSource bundles the toolbox fixture (two identities, sync states,
// walletsync's tables) while the wallet is open and written to through the access queue, and
// restores it into a new path and over another wallet: each restored file holds exactly the
// source's rows in every table, and the toolbox opens it with nothing to migrate.
func TestCreate_RestoreEqualsSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := openStore(t, tp.copyTo(t, dir, "wallet.sqlite"))
	caps, err := src.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := scheduler.New(caps, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	actions, err := src.ListActions(ctx, tp.identities[0], wallet.ActionQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Foreground writes through the same queue while the bundle is made: each step's read
	// grant lets them in, and the bundle is still the wallet of one moment (Verify checks
	// its counts against the copy).
	stop := make(chan struct{})
	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		fg := q.NewSession(tp.identities[0], "local")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g, err := fg.Acquire(ctx, scheduler.Foreground, scheduler.Write)
			if err != nil {
				t.Error(err)
				return
			}
			err = src.AddLabel(ctx, tp.identities[0], actions[i%len(actions)].TransactionID, fmt.Sprintf("during-bundle-%d", i))
			fg.Release(g)
			if err != nil {
				t.Error(err)
				return
			}
			written.Store(int64(i + 1))
			time.Sleep(time.Millisecond) // a front end's pace, not a flood
		}
	})
	busy := filepath.Join(dir, "busy-bundle")
	_, err = Create(ctx, src, busy, CreateOptions{Grants: q.NewSession("bundle", "bundle"), PagesPerStep: 64})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if bg := q.Metrics().Background; bg.Grants < 2 {
		t.Fatalf("the bundle took %d background grants; want one per step", bg.Grants)
	}
	// The copy is of one moment: the labels written one commit at a time are there up to
	// some point and none after it (Verify has checked its counts and integrity).
	if _, err := Verify(ctx, busy); err != nil {
		t.Fatal(err)
	}
	busyCopy := filepath.Join(dir, "busy.sqlite")
	if _, err := Restore(ctx, busy, busyCopy, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+busyCopy+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	labels := compare.Strings(t, db, "SELECT label FROM tx_labels WHERE label LIKE 'during-bundle-%'")
	db.Close()
	seen := map[string]bool{}
	for _, l := range labels {
		seen[l] = true
	}
	for i := range len(labels) {
		if !seen[fmt.Sprintf("during-bundle-%d", i)] {
			t.Fatalf("the bundle holds %d of the labels written meanwhile but not label %d: not one moment", len(labels), i)
		}
	}
	t.Logf("%d labels written while the bundle was made, %d of them before its moment", written.Load(), len(labels))

	// Quiet now: a second bundle, restored, equals the source table for table.
	out := filepath.Join(dir, "bundle")
	m, err := Create(ctx, src, out, CreateOptions{Grants: q.NewSession("bundle", "bundle")})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	want := compare.Digests(t, src.Path())

	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if !slices.Equal(names, []string{ManifestName, WalletName}) {
		t.Fatalf("bundle holds %v", names)
	}
	if len(m.Identities) != 2 || m.Tables["sync_states"] == 0 || m.Tables["tx_labels"] < 10_000 || m.Schema.ToolboxMigrations != len(localstore.ToolboxMigrations()) || m.Schema.Walletsync != localstore.SchemaVersion() {
		t.Fatalf("manifest: %d identities, tables %v, schema %+v", len(m.Identities), m.Tables, m.Schema)
	}
	if m.Files[0].SizeBytes >= m.Files[0].RawSizeBytes {
		t.Errorf("compressed %d bytes, raw %d", m.Files[0].SizeBytes, m.Files[0].RawSizeBytes)
	}
	if _, err := Verify(ctx, out); err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(dir, "fresh.sqlite")
	other := tp.copyTo(t, dir, "other.sqlite")
	o := openStore(t, other)
	if _, err := localstore.Seed(ctx, o, localstore.FixtureSmall, localstore.SeedOptions{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	o.Close()
	for _, target := range []string{fresh, other} {
		if _, err := Restore(ctx, out, target, RestoreOptions{}); err != nil {
			t.Fatalf("restore into %s: %v", filepath.Base(target), err)
		}
		compare.Same(t, filepath.Base(target), compare.Digests(t, target), want)
		if l := leftovers(target); len(l) > 0 {
			t.Errorf("restore left %v", l)
		}
		if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("restored file: %v, %v", fi, err)
		}
		// walletsync opens it, and its integrity is clean.
		s := openStore(t, target)
		if rep, err := s.CheckIntegrity(ctx); err != nil || !rep.OK {
			t.Fatalf("integrity of the restored wallet: %+v, %v", rep, err)
		}
		s.Close()
	}

	// The toolbox opens the restored file with nothing to migrate and reads each identity's
	// rows through its own finders.
	var opened struct {
		MigrationsBefore int `json:"migrationsBefore"`
		MigrationsAfter  int `json:"migrationsAfter"`
	}
	toolboxpeer.Run(t, &opened, "open", "--db", fresh)
	if opened.MigrationsBefore != len(localstore.ToolboxMigrations()) || opened.MigrationsAfter != opened.MigrationsBefore {
		t.Fatalf("toolbox migrate() on the restored wallet: %d migrations before, %d after", opened.MigrationsBefore, opened.MigrationsAfter)
	}
	for _, id := range m.Identities {
		var dump toolboxpeer.Dump
		toolboxpeer.Run(t, &dump, "dump", "--db", fresh, "--identity", id.IdentityKey)
		for _, tbl := range []wallet.TableName{wallet.TableTransactions, wallet.TableOutputs, wallet.TableCertificates} {
			if int64(len(dump[string(tbl)])) != id.Rows[tbl] {
				t.Errorf("toolbox reads %d %s of %s, the manifest says %d", len(dump[string(tbl)]), tbl, id.IdentityKey[:8], id.Rows[tbl])
			}
		}
	}
}

func TestCreate_RefusesExistingOut(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, small.copyTo(t, dir, "wallet.sqlite"))
	out := filepath.Join(dir, "bundle")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(context.Background(), s, out, CreateOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over an empty folder: %v, want fs.ErrExist", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".bundle.tmp-") {
			t.Fatalf("a refused create left %s", e.Name())
		}
	}
}

// TestRestore_RefusesWhileHeld: a wallet that a walletsync process holds is never replaced.
func TestRestore_RefusesWhileHeld(t *testing.T) {
	dir := t.TempDir()
	out := mustCreate(t, small.copyTo(t, dir, "wallet.sqlite"), dir, "bundle")
	target := small.copyTo(t, dir, "target.sqlite")
	held := openStore(t, target)
	_, err := Restore(context.Background(), out, target, RestoreOptions{})
	var le *wallet.LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("restore into a held wallet: %v, want a LockedError naming this process", err)
	}
	held.Close()
	if l := leftovers(target); len(l) > 0 {
		t.Errorf("a refused restore left %v", l)
	}
}

// TestVerify_RefusesDamage damages a bundle in each way a disk or a person can, and checks
// that Verify and Restore both refuse it with a typed error and that the live wallet a
// restore would have replaced is unchanged.
func TestVerify_RefusesDamage(t *testing.T) {
	dir := t.TempDir()
	good := mustCreate(t, small.copyTo(t, dir, "wallet.sqlite"), dir, "good")
	gm, err := ReadManifest(good)
	if err != nil {
		t.Fatal(err)
	}
	data := func(b string) string { return filepath.Join(b, WalletName) }
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, b string)
		want   error
	}{
		{"flipped byte", func(t *testing.T, b string) {
			f, err := os.OpenFile(data(b), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			one := make([]byte, 1)
			off := gm.Files[0].SizeBytes / 2
			if _, err := f.ReadAt(one, off); err != nil {
				t.Fatal(err)
			}
			one[0] ^= 0x10
			if _, err := f.WriteAt(one, off); err != nil {
				t.Fatal(err)
			}
		}, wallet.ErrBundleInvalid},
		{"truncated", func(t *testing.T, b string) {
			if err := os.Truncate(data(b), gm.Files[0].SizeBytes-100); err != nil {
				t.Fatal(err)
			}
		}, wallet.ErrBundleInvalid},
		{"truncated, manifest updated", func(t *testing.T, b string) {
			if err := os.Truncate(data(b), gm.Files[0].SizeBytes-100); err != nil {
				t.Fatal(err)
			}
			m := gm
			m.Files = []File{gm.Files[0]}
			m.Files[0].SizeBytes -= 100
			writeManifest(t, b, m)
		}, wallet.ErrBundleInvalid},
		{"missing data file", func(t *testing.T, b string) { os.Remove(data(b)) }, fs.ErrNotExist},
		{"missing manifest", func(t *testing.T, b string) { os.Remove(filepath.Join(b, ManifestName)) }, fs.ErrNotExist},
		{"manifest lies about counts", func(t *testing.T, b string) {
			m := gm
			m.Tables = map[string]int64{}
			for k, v := range gm.Tables {
				m.Tables[k] = v
			}
			m.Tables["tx_labels"]++
			writeManifest(t, b, m)
		}, wallet.ErrBundleInvalid},
		{"manifest lies about an identity", func(t *testing.T, b string) {
			m := gm
			m.Identities = slices.Clone(gm.Identities)
			m.Identities[1].IdentityKey = localstore.FixtureIdentity(77)
			writeManifest(t, b, m)
		}, wallet.ErrBundleInvalid},
		{"manifest lies about the digest", func(t *testing.T, b string) {
			m := gm
			m.Files = []File{gm.Files[0]}
			m.Files[0].RawSHA256 = gm.Files[0].SHA256
			writeManifest(t, b, m)
		}, wallet.ErrBundleInvalid},
		{"manifest is not JSON", func(t *testing.T, b string) {
			if err := os.WriteFile(filepath.Join(b, ManifestName), []byte("{\"format\": "), 0o600); err != nil {
				t.Fatal(err)
			}
		}, wallet.ErrBundleInvalid},
		{"broken foreign key inside", func(t *testing.T, b string) {
			repack(t, b, func(db *sql.DB) error {
				_, err := db.Exec("PRAGMA foreign_keys = OFF; UPDATE outputs SET transactionId = 999999 WHERE outputId = 1")
				return err
			})
		}, wallet.ErrCorrupt},
		{"newer walletsync schema", func(t *testing.T, b string) {
			repack(t, b, func(db *sql.DB) error {
				_, err := db.Exec("INSERT INTO walletsync_migrations (version, name, applied_at) VALUES (99, 'from the future', '2030-01-01T00:00:00.000Z')")
				return err
			})
		}, wallet.ErrSchemaTooNew},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := filepath.Join(t.TempDir(), "bundle")
			if err := os.CopyFS(b, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			c.damage(t, b)
			if _, err := Verify(context.Background(), b); !errors.Is(err, c.want) {
				t.Fatalf("verify: %v, want %v", err, c.want)
			}
			live := small.copyTo(t, t.TempDir(), "live.sqlite")
			s := openStore(t, live)
			if err := s.AddLabel(context.Background(), small.identities[1], 1, "live"); err != nil && !errors.Is(err, wallet.ErrNotFound) {
				t.Fatal(err)
			}
			s.Close()
			before := compare.Digests(t, live)
			if _, err := Restore(context.Background(), b, live, RestoreOptions{}); !errors.Is(err, c.want) {
				t.Fatalf("restore: %v, want %v", err, c.want)
			}
			compare.Same(t, "live wallet after a refused restore", compare.Digests(t, live), before)
			if l := leftovers(live); len(l) > 0 {
				t.Errorf("a refused restore left %v", l)
			}
		})
	}
}

// FuzzDecodeManifest feeds the manifest decoder arbitrary bytes: it never panics, and what it
// accepts names exactly one zstd data file with hex digests.
func FuzzDecodeManifest(f *testing.F) {
	b, err := EncodeManifest(Manifest{Format: FormatName, FormatVersion: FormatVersion, Chain: wallet.ChainTest,
		Tables: map[string]int64{"users": 2}, Identities: []Identity{{IdentityKey: "02ab", Rows: map[wallet.TableName]int64{"users": 1}}},
		Files: []File{{Name: WalletName, Compression: "zstd", SizeBytes: 10, SHA256: "00000000000000000000000000000000000000000000000000000000000000aa",
			RawSizeBytes: 20, RawSHA256: "bb00000000000000000000000000000000000000000000000000000000000000"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format":"walletsync-bundle","formatVersion":2}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, wallet.ErrBundleInvalid) {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		if len(m.Files) != 1 || m.Files[0].Name != WalletName || !isSHA256(m.Files[0].SHA256) || m.Files[0].RawSizeBytes <= 0 {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// The pause between snapshot steps ends with the context: a cancelled bundle stops at the
// next step instead of sleeping out the pause first.
func TestPacedGate_StopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	gate := pacedGate(nil)
	release, err := gate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(36 * time.Millisecond) // a step: the next gate pauses as long
	release()
	cancel()
	if _, err := gate(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("gate after cancel: %v", err)
	}
}
