package portable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/portable/brc38"
	"walletsync/portable/brc39"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/compare"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// cheapKey and cheapSealer encrypt with a fixed key under a 1-pass, 8 KiB header: the file
// handling is exactly ExportBRC39's, without Argon2's two seconds per test.
var cheapKey = brc39.Key{1, 2, 3, 4, 5, 6, 7, 8}

func cheapSealer(w io.Writer) (io.WriteCloser, time.Duration, error) {
	h := brc39.NewHeader(cheapKDF, bytes.Repeat([]byte{1}, brc39.SaltSize), bytes.Repeat([]byte{0x40}, brc39.NonceSize))
	e, err := brc39.NewEncrypter(w, h, cheapKey)
	return e, 0, err
}

// exportWith runs the export path with sealer on a fresh view of the file at path.
func exportWith(t testing.TB, ctx context.Context, path, identity, dst string, seal sealer, wrap func(wallet.View) wallet.View) (ExportResult, error) {
	t.Helper()
	return backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		if wrap != nil {
			v = wrap(v)
		}
		// Overwrite: the tests that find a file at dst find a backup, which a failed export
		// must leave as it was.
		return export(ctx, v, settings, identity, dst, ExportOptions{ExportedAt: backuptest.ExportedAt, Overwrite: true}, seal)
	})
}

// checkExportFile checks the file against the result and the folder for leftovers.
func checkExportFile(t testing.TB, res ExportResult) []byte {
	t.Helper()
	b, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(res.Path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}
	if int64(len(b)) != res.Size || sha256.Sum256(b) != res.SHA256 {
		t.Errorf("result says %d bytes %x, the file has %d bytes %x", res.Size, res.SHA256, len(b), sha256.Sum256(b))
	}
	requireOnlyFiles(t, filepath.Dir(res.Path), filepath.Base(res.Path))
	return b
}

func requireOnlyFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("folder holds %v, want exactly %v", got, names)
	}
}

// TestExportBRC39_ToolboxRestoresIt exports at full strength (the one Argon2id run of these
// tests) and restores the file with the toolbox's importBRC39: the restored wallet equals
// the source, and the result reports the file and the rows. The source carries the tricky
// values but for a -0 inside a JSON-text column, which JSON.stringify writes as 0: BRC-38
// changes that text by design.
func TestExportBRC39_ToolboxRestoresIt(t *testing.T) {
	t.Parallel()
	src, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	for _, q := range backuptest.TrickyValues {
		backuptest.Mutate(t, src, strings.ReplaceAll(q, `"z":-0,`, `"z":0,`))
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "wallet.brc39")
	const password = "Cafe\u0301 correct horse" // NFD: both sides derive from its NFC form
	res, err := backuptest.WithView(t, src, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		return ExportBRC39(context.Background(), v, settings, id, password, brc39.DefaultKDFParams, dst, ExportOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	file := checkExportFile(t, res)
	if h, err := brc39.ParseHeader(bytes.NewReader(file)); err != nil || h.KDF != brc39.DefaultKDFParams {
		t.Fatalf("header %+v: %v", h, err)
	}
	if res.KDFTime <= 0 || res.Elapsed < res.KDFTime || res.Stats.Rows[wallet.TableTxLabels] != 4 || res.Stats.Rows[wallet.TableUsers] != 1 {
		t.Fatalf("result: KDF %v of %v, rows %v", res.KDFTime, res.Elapsed, res.Stats.Rows)
	}

	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored.sqlite")
	toolboxpeer.Run(t, nil, "create", "--db", restored, "--chain", "test", "--sik", "restored", "--name", "restored")
	var imp struct {
		Mode    string `json:"mode"`
		Inserts int64  `json:"inserts"`
	}
	toolboxpeer.Run(t, &imp, "import39", "--db", restored, "--in", dst, "--password-file", pw, "--mode", "restore")
	var total int64
	for _, n := range res.Stats.Rows {
		total += n
	}
	if imp.Mode != "restore" || imp.Inserts != total {
		t.Fatalf("toolbox import: %+v, want %d inserts", imp, total)
	}
	opts := compare.Options{Tables: wallet.AllTables}
	want, err := compare.Read(context.Background(), backuptest.Open(t, src), id, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := compare.Read(context.Background(), backuptest.Open(t, restored), id, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := compare.Diff(want, got); diff != "" {
		t.Fatalf("the toolbox's restore differs from the source:\n%s", diff)
	}
}

func TestExport_FileHoldsTheEncodersBytes(t *testing.T) {
	path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	want, stats := encodeFile(t, path, id, false)
	dir := t.TempDir()

	t.Run("BRC39", func(t *testing.T) {
		res, err := exportWith(t, context.Background(), path, id, filepath.Join(dir, "wallet.brc39"), cheapSealer, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := checkExportFile(t, res)
		var plain bytes.Buffer
		if _, err := brc39.DecryptWith(context.Background(), bytes.NewReader(file), &plain, func(brc39.Header) (brc39.Key, error) { return cheapKey, nil }); err != nil {
			t.Fatal(err)
		}
		backuptest.RequireSameBytes(t, plain.Bytes(), want)
		if res.Stats.Bytes != int64(len(want)) || res.Size != int64(len(want)+brc39.HeaderFixedSize+brc39.SaltSize+brc39.NonceSize+brc39.TagSize) {
			t.Fatalf("document %d bytes, file %d bytes; encoder wrote %d", res.Stats.Bytes, res.Size, len(want))
		}
		for name, n := range stats.Rows {
			if res.Stats.Rows[name] != n {
				t.Errorf("%s: %d rows reported, encoder wrote %d", name, res.Stats.Rows[name], n)
			}
		}
		os.Remove(res.Path)
	})
	t.Run("BRC38", func(t *testing.T) {
		res, err := backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
			return ExportBRC38(context.Background(), v, settings, id, filepath.Join(dir, "wallet.brc38.json"), ExportOptions{ExportedAt: backuptest.ExportedAt})
		})
		if err != nil {
			t.Fatal(err)
		}
		backuptest.RequireSameBytes(t, checkExportFile(t, res), want)
		if res.KDFTime != 0 {
			t.Errorf("plaintext export reports KDF time %v", res.KDFTime)
		}
	})
}

// failAfter passes n bytes through, then fails every write.
type failAfter struct {
	w   io.Writer
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, f.err
	}
	f.n -= len(p)
	return f.w.Write(p)
}

type failClose struct {
	io.WriteCloser
	err error
}

func (f failClose) Close() error { return f.err }

// cancelAfterReads cancels the export's context as its nth page read starts.
type cancelAfterReads struct {
	wallet.View
	n      int
	cancel context.CancelFunc
}

func (v *cancelAfterReads) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	if v.n--; v.n == 0 {
		v.cancel()
	}
	return v.View.ReadPage(ctx, req)
}

// TestExport_FailureLeavesNoFile injects a failure at each stage of an export over an
// existing backup: the error comes back, the old file is untouched, no temporary file is
// left.
func TestExport_FailureLeavesNoFile(t *testing.T) {
	path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	boom := errors.New("injected write failure")
	for _, tc := range []struct {
		name     string
		identity string
		seal     sealer
		cancelAt int // cancel the context at this page read; 0: never
		want     error
	}{
		{name: "WriteFailsMidway", seal: func(w io.Writer) (io.WriteCloser, time.Duration, error) {
			return cheapSealer(&failAfter{w: w, n: 3000, err: boom})
		}, want: boom},
		{name: "TagWriteFails", seal: func(w io.Writer) (io.WriteCloser, time.Duration, error) {
			e, d, err := cheapSealer(w)
			return failClose{e, boom}, d, err
		}, want: boom},
		{name: "EnvelopeFails", seal: func(io.Writer) (io.WriteCloser, time.Duration, error) { return nil, 0, boom }, want: boom},
		{name: "ContextCancelledMidway", seal: cheapSealer, cancelAt: 6, want: context.Canceled},
		{name: "UnknownIdentity", identity: localstore.FixtureIdentity(404), seal: cheapSealer, want: wallet.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "wallet.brc39")
			if err := os.WriteFile(dst, []byte(brc39.Magic+"previous backup"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wrap func(wallet.View) wallet.View
			if tc.cancelAt > 0 {
				wrap = func(v wallet.View) wallet.View { return &cancelAfterReads{View: v, n: tc.cancelAt, cancel: cancel} }
			}
			identity := id
			if tc.identity != "" {
				identity = tc.identity
			}
			_, err := exportWith(t, ctx, path, identity, dst, tc.seal, wrap)
			if !errors.Is(err, tc.want) {
				t.Fatalf("export: %v, want %v", err, tc.want)
			}
			if b, _ := os.ReadFile(dst); string(b) != brc39.Magic+"previous backup" {
				t.Fatalf("the existing backup was changed to %q", b)
			}
			requireOnlyFiles(t, dir, "wallet.brc39")
		})
	}
}

func TestExportBRC39_RefusesWeakParametersBeforeAnyFile(t *testing.T) {
	path, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	dir := t.TempDir()
	_, err := backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		return ExportBRC39(context.Background(), v, settings, id, "pw", brc39.KDFParams{Iterations: 6, MemoryKiB: brc39.DefaultMemoryKiB, Parallelism: 1}, filepath.Join(dir, "w.brc39"), ExportOptions{})
	})
	if !errors.Is(err, brc39.ErrKDFTooWeak) {
		t.Fatalf("ExportBRC39 with t=6: %v, want ErrKDFTooWeak", err)
	}
	requireOnlyFiles(t, dir)
}

// TestExport_RefusesCrossUserLinksTheToolboxDrops documents a deliberate difference. A
// store where one user's output tag is mapped to another user's output is inconsistent (the
// toolbox never writes such a row). The toolbox's export silently leaves the map row out;
// walletsync's keyset scope (the tag's user) includes it, the export's verification finds
// that it references an output outside the document, and the export fails naming the row,
// instead of writing a backup that no importer accepts.
func TestExport_RefusesCrossUserLinksTheToolboxDrops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two-users.sqlite")
	s, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids [2]string
	for i := range ids {
		res, err := localstore.Seed(ctx, s, localstore.FixtureSmall, localstore.SeedOptions{Seed: uint64(20 + i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.IdentityKey
	}
	s.Close()
	backuptest.Mutate(t, path, `UPDATE output_tags_map SET outputId = (SELECT max(outputId) FROM outputs WHERE userId = 2)
		WHERE rowid = (SELECT min(m.rowid) FROM output_tags_map m JOIN output_tags g ON g.outputTagId = m.outputTagId WHERE g.userId = 1)`)
	dir := t.TempDir()
	_, err = backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		return ExportBRC38(ctx, v, settings, ids[0], filepath.Join(dir, "w.json"), ExportOptions{})
	})
	var de *brc38.DocumentError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Path, "tables.outputTagMaps[") || !strings.HasSuffix(de.Path, "].outputId") {
		t.Fatalf("export of the inconsistent store: %v, want a *DocumentError at an outputTagMaps row's outputId", err)
	}
	requireOnlyFiles(t, dir)
	backuptest.ToolboxExport38(t, path, ids[0]) // the toolbox exports it, without the row
}
