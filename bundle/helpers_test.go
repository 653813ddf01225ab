package bundle

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/wallet"
)

// template is a wallet that tests copy, with two identities and their sync states, built
// once per test binary.
type template struct {
	path       string
	identities []string
}

// buildTemplate makes a template wallet at dir/name: the first fixture for one identity, the
// small fixture for another.
func buildTemplate(dir, name string, first localstore.Fixture) (template, error) {
	ctx := context.Background()
	tp := template{path: filepath.Join(dir, name)}
	s, err := localstore.Create(ctx, tp.path, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "bundle template"}, localstore.Options{})
	if err != nil {
		return tp, err
	}
	defer s.Close()
	for _, f := range []struct {
		fixture localstore.Fixture
		seed    uint64
	}{{first, 1}, {localstore.FixtureSmall, 2}} {
		res, err := localstore.Seed(ctx, s, f.fixture, localstore.SeedOptions{Seed: f.seed})
		if err != nil {
			return tp, err
		}
		tp.identities = append(tp.identities, res.IdentityKey)
	}
	return tp, s.Close()
}

// copyTo copies the template wallet to dir/name and returns its path.
func (tp template) copyTo(tb testing.TB, dir, name string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := safefile.CopyNew(tp.path, p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// openStore opens a wallet read-write; the test closes it.
func openStore(tb testing.TB, path string) *localstore.Store {
	tb.Helper()
	s, err := localstore.Open(context.Background(), path, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// mustCreate bundles the wallet at path into dir/name (opening and closing it) and returns the
// bundle's folder.
func mustCreate(tb testing.TB, path, dir, name string) string {
	tb.Helper()
	s := openStore(tb, path)
	out := filepath.Join(dir, name)
	if _, err := Create(context.Background(), s, out, CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// leftovers lists the files a replace of target may leave beside it while it runs; after it
// ends (or after recovery), none of them may exist.
func leftovers(target string) []string {
	var out []string
	for _, suffix := range []string{".walletsync-restore", ".walletsync-restore-new", ".walletsync-restore-old", ".walletsync-restore-new-journal"} {
		if _, err := os.Lstat(target + suffix); err == nil {
			out = append(out, filepath.Base(target+suffix))
		}
	}
	return out
}

// repack rewrites the bundle in dir after mutate changed its decompressed wallet, with an
// honest manifest for the new file (as a newer walletsync would write it).
func repack(tb testing.TB, dir string, mutate func(db *sql.DB) error) {
	tb.Helper()
	ctx := context.Background()
	m, err := ReadManifest(dir)
	if err != nil {
		tb.Fatal(err)
	}
	raw := filepath.Join(tb.TempDir(), "wallet.sqlite")
	if err := unpack(ctx, dir, m, raw); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+raw)
	if err != nil {
		tb.Fatal(err)
	}
	if err := mutate(db); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	c, err := counts(ctx, raw)
	if err != nil {
		tb.Fatal(err)
	}
	m.Tables, m.Schema.Walletsync = c.Tables, c.WalletsyncVersion
	data := filepath.Join(dir, WalletName)
	if err := os.Remove(data); err != nil {
		tb.Fatal(err)
	}
	f, err := compress(raw, data)
	if err != nil {
		tb.Fatal(err)
	}
	m.Files = []File{f}
	writeManifest(tb, dir, m)
}

// counts reads a file's census without inspecting its schema (it may be newer).
func counts(ctx context.Context, path string) (localstore.Census, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return localstore.Census{}, err
	}
	defer db.Close()
	c := localstore.Census{Tables: map[string]int64{}}
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return c, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return c, err
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return c, err
	}
	rows.Close()
	for _, n := range names {
		var k int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM "`+n+`"`).Scan(&k); err != nil {
			return c, err
		}
		c.Tables[n] = k
	}
	err = db.QueryRowContext(ctx, "SELECT max(version) FROM walletsync_migrations").Scan(&c.WalletsyncVersion)
	return c, err
}

// writeManifest replaces dir's manifest with m.
func writeManifest(tb testing.TB, dir string, m Manifest) {
	tb.Helper()
	b, err := EncodeManifest(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
