package portable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/portable/brc38"
	"walletsync/portable/brc39"
	"walletsync/syncer"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

var _ Store = (*localstore.Store)(nil)

// fixtures are the wallet files the tests copy.
var fixtures *backuptest.Fixtures

func TestMain(m *testing.M) {
	if k, task, ok := crash.Child(); ok {
		importCrashChild(k, task)
	}
	if task := os.Getenv(importRaceEnv); task != "" {
		importRaceChild(task)
	}
	os.Exit(backuptest.Main(m, &fixtures))
}

// cheapKDF costs microseconds. The import accepts it, as the toolbox's import has no
// minimums; Encrypt refuses it, so the tests write it through brc39.NewEncrypter.
var cheapKDF = brc39.KDFParams{Iterations: 1, MemoryKiB: 8, Parallelism: 1}

// cheapFile returns a BRC-39 file of plaintext under password with cheapKDF.
func cheapFile(tb testing.TB, password string, plaintext []byte) []byte {
	tb.Helper()
	h := brc39.NewHeader(cheapKDF, bytes.Repeat([]byte{0x10}, brc39.SaltSize), bytes.Repeat([]byte{0x60}, brc39.NonceSize))
	key, err := brc39.DeriveKey(context.Background(), password, h, brc39.KDFLimits{})
	if err != nil {
		tb.Fatal(err)
	}
	var file bytes.Buffer
	e, err := brc39.NewEncrypter(&file, h, key)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.Write(plaintext); err != nil {
		tb.Fatal(err)
	}
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
	return file.Bytes()
}

// encodeFile is the BRC-38 document of the user's wallet in the file at path, exportedAt
// pinned; with lookup, the view answers RowLookup as the agent's views do.
func encodeFile(tb testing.TB, path, identity string, lookup bool) ([]byte, brc38.Stats) {
	tb.Helper()
	var buf bytes.Buffer
	stats, err := backuptest.WithView(tb, path, lookup, func(v wallet.View, settings wallet.Settings) (brc38.Stats, error) {
		return brc38.Encode(context.Background(), v, settings, identity, backuptest.ExportedAt, &buf)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), stats
}

// importPassword is the password of every cheap test file.
const importPassword = "correct horse battery staple"

// testOpener opens and creates wallet files with localstore, as the command line does.
func testOpener(opts localstore.Options) OpenFunc {
	return Opener(func(ctx context.Context, path string, chain wallet.Chain) (*localstore.Store, error) {
		if chain == "" {
			return localstore.Open(ctx, path, opts)
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, opts)
	})
}

// importOptions are the options of an import test: a fresh private staging folder, and
// five-row pages, so that a small wallet takes several page commits per table.
func importOptions(tb testing.TB) ImportOptions {
	return ImportOptions{StagingDir: filepath.Join(tb.TempDir(), "staging"), Open: testOpener(localstore.Options{}),
		Sync: syncer.Options{MaxRows: 5}}
}

// backupFile writes the user's wallet in the store at path as a cheap BRC-39 file under
// importPassword and returns the file's path and the plaintext.
func backupFile(tb testing.TB, path, identity string) (string, []byte) {
	tb.Helper()
	doc, _ := encodeFile(tb, path, identity, true)
	return writeFile(tb, cheapFile(tb, importPassword, doc)), doc
}

func writeFile(tb testing.TB, b []byte) string {
	tb.Helper()
	f := filepath.Join(tb.TempDir(), "backup.brc39")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return f
}

// readWallet is the user's wallet in the file at path, id-independent, sync states included.
func readWallet(tb testing.TB, path, identity string, ignore ...string) compare.Wallet {
	tb.Helper()
	s := backuptest.Open(tb, path)
	defer s.Close()
	w, err := compare.Read(context.Background(), s, identity, compare.Options{Tables: wallet.AllTables, Ignore: ignore})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func requireSameWallet(tb testing.TB, got, want compare.Wallet) {
	tb.Helper()
	if d := compare.Diff(want, got); d != "" {
		tb.Fatalf("wallets differ:\n%s", d)
	}
}

// stagingFiles lists what the staging folder holds.
func stagingFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fileHashes hashes a closed wallet file and its WAL (absent files hash as absent).
func fileHashes(tb testing.TB, path string) [2][32]byte {
	tb.Helper()
	var out [2][32]byte
	for i, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			tb.Fatal(err)
		}
		out[i] = sha256.Sum256(b)
	}
	return out
}

// partialWallet returns a copy of the small fixture wallet that lacks some of its rows, holds
// others in an older version and one basket in a newer one: a merge of the fixture's backup
// inserts, updates, and skips the basket.
func partialWallet(tb testing.TB) string {
	tb.Helper()
	path, _ := fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
	backuptest.Mutate(tb, path, slices.Concat(partialEdits, []string{"UPDATE output_baskets SET updated_at = '2099-01-01T00:00:00.000Z' WHERE name = 'savings'"})...)
	return path
}

// partialEdits take rows out of a wallet and make others older.
var partialEdits = []string{
	"DELETE FROM tx_labels_map WHERE rowid % 2 = 0",
	"DELETE FROM certificate_fields WHERE rowid % 3 = 0",
	"UPDATE output_tags SET updated_at = '2001-01-01T00:00:00.000Z'",
}

// journalEntry reads the import journal of the wallet at path.
func journalEntry(tb testing.TB, path, digest string) (wallet.ImportRecord, error) {
	tb.Helper()
	s := backuptest.Open(tb, path)
	defer s.Close()
	return s.ImportRecord(context.Background(), digest)
}

// requireSameRows checks that the wallet at path exports exactly the rows of doc, ids
// included: what a restore keeps. (The sourceStorage is the restored wallet's own.)
func requireSameRows(tb testing.TB, path, identity string, doc []byte) {
	tb.Helper()
	got, _ := encodeFile(tb, path, identity, true)
	g, w := backuptest.Generic(tb, got), backuptest.Generic(tb, doc)
	if !reflect.DeepEqual(g["user"], w["user"]) || !reflect.DeepEqual(g["tables"], w["tables"]) {
		tb.Fatal("the restored wallet holds other rows than the document")
	}
}

func TestImport_RestoreIntoNewFile(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, doc := backupFile(t, src, identity)
	opts := importOptions(t)
	dst := filepath.Join(t.TempDir(), "restored.sqlite")
	res, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, n := range res.Counts {
		rows += n
	}
	if res.Mode != wallet.ImportRestore || res.Inserts != rows || res.Updates != 0 || res.Tables[wallet.TableUsers].Inserts != 1 {
		t.Fatalf("result %+v", res)
	}
	requireSameWallet(t, readWallet(t, dst, identity), readWallet(t, src, identity))
	requireSameRows(t, dst, identity, doc)
	rec, err := journalEntry(t, dst, res.Digest)
	if err != nil || rec.State != wallet.ImportDone || rec.Mode != wallet.ImportRestore || rec.Inserts != rows {
		t.Fatalf("journal %+v, %v", rec, err)
	}
	if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
		t.Fatalf("the staging folder keeps %v", names)
	}
	before := fileHashes(t, dst)
	_, err = Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
	var already *AlreadyImportedError
	if !errors.As(err, &already) || !errors.Is(err, ErrAlreadyImported) || fileHashes(t, dst) != before {
		t.Fatalf("second import: %v, want an *AlreadyImportedError and the wallet unchanged", err)
	}
}

func TestImport_RestoreIntoEmptyWallet(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, doc := backupFile(t, src, identity)
	dst := filepath.Join(t.TempDir(), "empty.sqlite")
	s, err := localstore.Create(context.Background(), dst, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Import(context.Background(), file, importPassword, Target{Path: dst}, ImportOptions{Mode: wallet.ImportRestore,
		StagingDir: filepath.Join(t.TempDir(), "staging"), Open: testOpener(localstore.Options{})}, nil); err != nil {
		t.Fatal(err)
	}
	requireSameRows(t, dst, identity, doc)
}

func TestImport_MergePreviewEqualsImport(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	dst := partialWallet(t)
	opts := importOptions(t)
	before := fileHashes(t, dst)
	prev, err := Preview(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fileHashes(t, dst) != before || len(stagingFiles(t, opts.StagingDir)) > 0 {
		t.Fatal("the preview wrote to the wallet or left staging files")
	}
	want := wallet.MergePlan{
		wallet.TableTxLabelsMap:       {Inserts: 6, Unchanged: 6},
		wallet.TableCertificateFields: {Inserts: 4, Unchanged: 8},
		wallet.TableOutputTags:        {Updates: 3},
		wallet.TableOutputBaskets:     {Unchanged: 3, Older: 1},
	}
	for name, c := range want {
		if prev.Plan[name] != c {
			t.Errorf("preview of %s: %+v, want %+v", name, prev.Plan[name], c)
		}
	}
	res, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range wallet.AllTables {
		p, r := prev.Plan[tb.Name], res.Tables[tb.Name]
		if p.Inserts != r.Inserts || p.Updates != r.Updates {
			t.Errorf("%s: the preview said %+v, the import did %+v", tb.Name, p, r)
		}
	}
	// Equal to the source but for what a merge keeps by design: the newer basket, and
	// notified, which every merged proof request with notify ids resets (as in the toolbox).
	ignore := []string{"proven_tx_reqs.notified", "output_baskets.updated_at"}
	got, wantWallet := readWallet(t, dst, identity, ignore...), readWallet(t, src, identity, ignore...)
	delete(got, wallet.TableSyncStates)
	delete(wantWallet, wallet.TableSyncStates)
	requireSameWallet(t, got, wantWallet)
}

// TestImport_UnchangedBackupIsUnchanged: a backup of a wallet, previewed and then imported
// into that very wallet, which has not changed since, inserts and updates nothing, its sync
// states included (the toolbox writes a syncMap's keys in another order than the wallet
// holds them, which once made every sync state "to update").
func TestImport_UnchangedBackupIsUnchanged(t *testing.T) {
	for _, f := range []localstore.Fixture{localstore.FixtureSmall, localstore.FixtureToolbox} {
		t.Run(string(f), func(t *testing.T) {
			src, identity := fixtures.Store(t, f, backuptest.SmallSeed)
			file, _ := backupFile(t, src, identity)
			opts := importOptions(t)
			prev, err := Preview(context.Background(), file, importPassword, Target{Path: src}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Import(context.Background(), file, importPassword, Target{Path: src}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows := int64(0)
			for _, tb := range wallet.AllTables {
				p, r := prev.Plan[tb.Name], res.Tables[tb.Name]
				if p.Inserts+p.Updates+p.Older != 0 || r.Inserts+r.Updates != 0 {
					t.Errorf("%s of an unchanged backup: preview %+v, import %+v; want nothing to insert or update", tb.Name, p, r)
				}
				rows += p.Unchanged
			}
			if rows == 0 || prev.Plan[wallet.TableSyncStates].Unchanged == 0 {
				t.Fatalf("the preview found no unchanged rows (sync states %+v): the backup held nothing to compare", prev.Plan[wallet.TableSyncStates])
			}
		})
	}
}

// setHeader returns a copy of file with the header bytes at offset replaced.
func setHeader(file []byte, offset int, b ...byte) []byte {
	out := bytes.Clone(file)
	copy(out[offset:], b)
	return out
}

// withKDF returns a copy of file whose header asks for kdf.
func withKDF(file []byte, kdf brc39.KDFParams) []byte {
	return setHeader(file, 11, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, kdf.Iterations), kdf.MemoryKiB)...)
}

// TestImport_RefusesBadInput imports broken files, and valid files that must not go in, into
// a wallet, in the mode each case names: each is refused with its typed error, before or
// without any write, so that the wallet file and its WAL stay byte-identical, and no
// plaintext or staging database stays behind.
func TestImport_RefusesBadInput(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	doc, _ := encodeFile(t, src, identity, true)
	good := cheapFile(t, importPassword, doc)
	other, otherIdentity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed+1)
	otherDoc, _ := encodeFile(t, other, otherIdentity, true)
	payload := brc39.HeaderFixedSize + brc39.SaltSize + brc39.NonceSize
	broken := func(edit func(map[string]any)) []byte {
		d := backuptest.BaseDoc()
		edit(d)
		return cheapFile(t, importPassword, backuptest.Canonical(t, d))
	}
	mockWallet := filepath.Join(t.TempDir(), "mock.sqlite")
	s, err := localstore.Create(context.Background(), mockWallet, localstore.CreateOptions{Chain: wallet.ChainMock}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	type bad struct {
		name     string
		file     []byte
		password string
		mode     wallet.ImportMode
		target   string // a wallet file to copy; the small fixture when empty
		want     error
		field    brc39.HeaderField // the field a *HeaderError must name
		region   brc39.Region      // the region a *TruncatedError must name
	}
	cases := []bad{
		{name: "wrong password", file: good, password: "Correct horse battery staple", want: brc39.ErrAuthFailed},
		{name: "truncated in the header", file: good[:20], want: brc39.ErrTruncated, region: brc39.RegionHeader},
		{name: "truncated in the salt", file: good[:brc39.HeaderFixedSize+10], want: brc39.ErrTruncated, region: brc39.RegionSalt},
		{name: "truncated in the nonce", file: good[:brc39.HeaderFixedSize+brc39.SaltSize+5], want: brc39.ErrTruncated, region: brc39.RegionNonce},
		{name: "truncated to a tag without ciphertext", file: good[:payload+brc39.TagSize], want: brc39.ErrTruncated, region: brc39.RegionCiphertext},
		{name: "truncated in the ciphertext", file: good[:payload+len(doc)/2], want: brc39.ErrAuthFailed},
		{name: "truncated in the tag", file: good[:len(good)-3], want: brc39.ErrAuthFailed},
		{name: "truncated before the tag is whole", file: good[:payload+5], want: brc39.ErrTruncated, region: brc39.RegionTag},
		{name: "bit flipped in the ciphertext", file: setHeader(good, payload+100, good[payload+100]^0x04), want: brc39.ErrAuthFailed},
		{name: "bit flipped in the tag", file: setHeader(good, len(good)-1, good[len(good)-1]^0x80), want: brc39.ErrAuthFailed},
		{name: "hostile memory (4 TiB)", file: withKDF(good, brc39.KDFParams{Iterations: 1, MemoryKiB: 0xffffffff}), want: brc39.ErrKDFTooCostly},
		{name: "hostile iterations", file: withKDF(good, brc39.KDFParams{Iterations: 0xffffffff, MemoryKiB: 8}), want: brc39.ErrKDFTooCostly},
		{name: "hostile parallelism", file: setHeader(withKDF(good, brc39.KDFParams{Iterations: 1, MemoryKiB: 8 * 255}), 19, 255), want: brc39.ErrKDFTooCostly},
		{name: "invalid JSON", file: cheapFile(t, importPassword, doc[:len(doc)/2]), want: brc38.ErrInvalidDocument},
		{name: "not JSON at all", file: cheapFile(t, importPassword, []byte("\x00\x01 not json")), want: brc38.ErrInvalidDocument},
		{name: "a null", file: broken(func(d map[string]any) { backuptest.DocRow(d, "transactions", 0)["description"] = backuptest.JSNull }), want: brc38.ErrInvalidDocument},
		{name: "a dangling reference", file: broken(func(d map[string]any) { backuptest.DocRow(d, "outputs", 0)["basketId"] = int64(99) }), want: brc38.ErrInvalidDocument},
		{name: "another chain", file: cheapFile(t, importPassword, bytes.Replace(doc, []byte(`"chain":"test"`), []byte(`"chain":"main"`), 1)), want: wallet.ErrWrongChain},
		{name: "an unknown chain", file: cheapFile(t, importPassword, bytes.Replace(doc, []byte(`"chain":"test"`), []byte(`"chain":"moon"`), 1)), want: wallet.ErrWrongChain},
		{name: "another identity in restore mode", file: cheapFile(t, importPassword, otherDoc), mode: wallet.ImportRestore, want: wallet.ErrNotEmpty},
		{name: "the same identity in restore mode", file: good, mode: wallet.ImportRestore, want: wallet.ErrNotEmpty},
		{name: "merge into a wallet of another chain", file: good, mode: wallet.ImportMerge, target: mockWallet, want: wallet.ErrWrongChain},
		{name: "restore into a wallet of another chain", file: good, mode: wallet.ImportRestore, target: mockWallet, want: wallet.ErrWrongChain},
		{name: "a sync map a merge cannot re-key", file: broken(func(d map[string]any) {
			backuptest.DocRow(d, "syncStates", 0)["syncMap"] = map[string]any{"transaction": map[string]any{}}
		}), want: brc38.ErrInvalidDocument},
	}
	for _, f := range []struct {
		offset int
		value  byte
		field  brc39.HeaderField
	}{
		{0, 'w', brc39.FieldMagic}, {4, 2, brc39.FieldVersion}, {5, 2, brc39.FieldProtector}, {6, 39, brc39.FieldInnerFormat},
		{7, 2, brc39.FieldKDFType}, {8, 1, brc39.FieldFlags}, {9, 0, brc39.FieldSaltLength}, {10, 0, brc39.FieldNonceLength},
		{11, 0, brc39.FieldIterations}, {20, 31, brc39.FieldHashLength}, {21, 1, brc39.FieldReserved}, {32, 0xff, brc39.FieldReserved},
	} {
		file := setHeader(good, f.offset, f.value)
		if f.field == brc39.FieldIterations {
			file = withKDF(good, brc39.KDFParams{Iterations: 0, MemoryKiB: 8})
		}
		cases = append(cases, bad{name: "header " + string(f.field), file: file, want: brc39.ErrBadHeader, field: f.field})
	}
	cases = append(cases,
		bad{name: "header Argon2id memory", file: withKDF(good, brc39.KDFParams{Iterations: 1, MemoryKiB: 0}), want: brc39.ErrBadHeader, field: brc39.FieldMemory},
		bad{name: "header Argon2id parallelism", file: setHeader(good, 19, 0), want: brc39.ErrBadHeader, field: brc39.FieldParallelism},
	)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target, _ := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
			if tc.target != "" {
				target = filepath.Join(t.TempDir(), "wallet.sqlite")
				backuptest.CopyFile(t, tc.target, target)
			}
			password := importPassword
			if tc.password != "" {
				password = tc.password
			}
			file := writeFile(t, tc.file)
			opts := importOptions(t)
			opts.Mode = tc.mode
			before := fileHashes(t, target)
			_, perr := Preview(context.Background(), file, password, Target{Path: target}, opts, nil)
			_, err := Import(context.Background(), file, password, Target{Path: target}, opts, nil)
			for _, e := range []error{perr, err} {
				var he *brc39.HeaderError
				var te *brc39.TruncatedError
				switch {
				case !errors.Is(e, tc.want):
					t.Fatalf("got %v, want %v", e, tc.want)
				case tc.field != "" && (!errors.As(e, &he) || he.Field != tc.field):
					t.Fatalf("got %v, want a *HeaderError for the %s", e, tc.field)
				case tc.region != "" && (!errors.As(e, &te) || te.Region != tc.region):
					t.Fatalf("got %v, want a *TruncatedError in the %s", e, tc.region)
				}
			}
			if fileHashes(t, target) != before {
				t.Fatal("the wallet changed")
			}
			if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
				t.Fatalf("the staging folder keeps %v", names)
			}
		})
	}
}

// settledWallet reads the wallet at path after a merge, leaving out what two merges of one
// document make differently by design: the producer's new sync state's refNum and times.
func settledWallet(tb testing.TB, path, identity string) compare.Wallet {
	tb.Helper()
	return readWallet(tb, path, identity, "sync_states.refNum", "sync_states.created_at", "sync_states.updated_at")
}

// cleanMerge is the small fixture's backup merged into a partial wallet by one uninterrupted
// import: what every interrupted import must end as.
func cleanMerge(tb testing.TB, file, identity string) compare.Wallet {
	tb.Helper()
	dst := partialWallet(tb)
	if _, err := Import(context.Background(), file, importPassword, Target{Path: dst}, importOptions(tb), nil); err != nil {
		tb.Fatal(err)
	}
	return settledWallet(tb, dst, identity)
}

// TestImport_ResumesAfterAStop stops a merge after three page commits and runs it again:
// from the same staging folder, and from an empty one (the staging database is lost and the
// document staged again). Either way the rerun finishes the import, the wallet equals one
// clean import, and no session state (checkpoint, id maps) or staging file stays behind.
func TestImport_ResumesAfterAStop(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	want := cleanMerge(t, file, identity)
	sum, err := Verify(context.Background(), file, importPassword, importOptions(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lose := range []bool{false, true} {
		t.Run(fmt.Sprintf("staging lost %v", lose), func(t *testing.T) {
			dst := partialWallet(t)
			opts := importOptions(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			commits := 0
			_, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, func(p ImportProgress) {
				if p.Sync != nil && p.Sync.State == syncer.StateCommitted {
					if commits++; commits == 3 {
						cancel()
					}
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped import: %v", err)
			}
			if rec, err := journalEntry(t, dst, sum.Digest); err != nil || rec.State != wallet.ImportMerging {
				t.Fatalf("journal after the stop: %+v, %v", rec, err)
			}
			if lose {
				if err := os.RemoveAll(opts.StagingDir); err != nil {
					t.Fatal(err)
				}
			}
			prev, err := Preview(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
			if err != nil || !prev.Resumes {
				t.Fatalf("preview of the unfinished import: %+v, %v", prev, err)
			}
			done, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
			if err != nil || !done.Resumed {
				t.Fatalf("rerun: %+v, %v", done, err)
			}
			requireSameWallet(t, settledWallet(t, dst, identity), want)
			if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
				t.Fatalf("the staging folder keeps %v", names)
			}
			db := rawDB(t, dst)
			var left int
			if err := db.QueryRow("SELECT (SELECT count(*) FROM walletsync_checkpoints) + (SELECT count(*) FROM walletsync_idmaps)").Scan(&left); err != nil || left != 0 {
				t.Fatalf("%d session rows stay behind (%v)", left, err)
			}
			db.Close()
			before := fileHashes(t, dst)
			if _, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil); !errors.Is(err, ErrAlreadyImported) || fileHashes(t, dst) != before {
				t.Fatalf("repeat: %v, want ErrAlreadyImported and the wallet unchanged", err)
			}
		})
	}
}

// FuzzImport feeds arbitrary bytes to the whole import path twice: as a BRC-39 file, and as
// the plaintext of a valid envelope, so that mutations reach past the tag into the decoder,
// the staging database and the merge. An import never panics, and it changes the wallet
// only when the bytes are a valid document: whenever it fails, the wallet file and its WAL
// are byte-identical. Work is bounded: the KDF limits admit only cheap parameters, and values,
// rows and nesting are capped far below the defaults.
//
// The seeds are small (a valid document costs a staging database and a merge, which the
// fuzzer's coverage instrumentation of SQLite makes slow), and the wallet starts empty.
func FuzzImport(f *testing.F) {
	doc := backuptest.Canonical(f, backuptest.BaseDoc())
	f.Add(doc)
	f.Add(cheapFile(f, importPassword, doc))
	f.Add([]byte("WDAT\x01\x01\x26\x01\x00\x20\x20"))
	template := filepath.Join(f.TempDir(), "empty.sqlite")
	s, err := localstore.Create(context.Background(), template, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		opts := ImportOptions{StagingDir: filepath.Join(t.TempDir(), "staging"), Open: testOpener(localstore.Options{}),
			KDFLimits: brc39.KDFLimits{MaxIterations: 2, MaxMemoryKiB: 64, MaxParallelism: 1},
			Decode:    brc38.DecodeOptions{MaxValueBytes: 1 << 16, MaxRowBytes: 1 << 18, MaxDepth: 16}}
		files := [][]byte{data}
		if len(data) > 0 {
			files = append(files, cheapFile(t, importPassword, data))
		}
		for i, file := range files {
			target := filepath.Join(t.TempDir(), "wallet.sqlite")
			backuptest.CopyFile(t, template, target)
			before := fileHashes(t, target)
			_, err := Import(context.Background(), writeFile(t, file), importPassword, Target{Path: target}, opts, nil)
			switch {
			case err != nil && fileHashes(t, target) != before:
				t.Fatalf("a failed import changed the wallet: %v", err)
			case err == nil && i == 1:
				if _, derr := brc38.Decode(context.Background(), bytes.NewReader(data), nil, opts.Decode); derr != nil {
					t.Fatalf("imported a document the decoder refuses: %v", derr)
				}
			}
			if names := stagingFiles(t, opts.StagingDir); err != nil && len(names) > 0 {
				t.Fatalf("a failed import left %v in the staging folder", names)
			}
		}
	})
}

// keyOnce derives a file's key once, at full strength, and hands it to every later import of
// the same file: the derivation is the interop check, and one is enough.
func keyOnce(password string) func(brc39.Header) (brc39.Key, error) {
	var mu sync.Mutex
	var key brc39.Key
	var salt []byte
	return func(h brc39.Header) (brc39.Key, error) {
		mu.Lock()
		defer mu.Unlock()
		if !bytes.Equal(salt, h.Salt) {
			k, err := brc39.DeriveKey(context.Background(), password, h, brc39.KDFLimits{})
			if err != nil {
				return k, err
			}
			key, salt = k, bytes.Clone(h.Salt)
		}
		return key, nil
	}
}

// TestImport_ToolboxBRC39 imports BRC-39 files that the toolbox's exportBRC39 wrote, at full
// strength, from a wallet the toolbox made and filled and from walletsync's small fixture. A
// restore into a new file holds exactly the source's wallet; a merge into a wallet that holds
// some of the rows (some missing, some older) ends equal to it too, writes what its preview
// predicted, table by table, and leaves what the toolbox's own merge of the file leaves.
func TestImport_ToolboxBRC39(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(testing.TB) (string, string)
	}{
		{"toolbox wallet", fixtures.ToolboxStore},
		{"walletsync small fixture", func(tb testing.TB) (string, string) {
			return fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			src, identity := tc.store(t)
			dir := t.TempDir()
			const password = "Pa\u0308sswort \u2713" // NFD: both sides derive from its NFC form
			pw, file := filepath.Join(dir, "password"), filepath.Join(dir, "toolbox.brc39")
			if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
				t.Fatal(err)
			}
			toolboxpeer.Run(t, nil, "export39", "--db", src, "--identity", identity, "--password-file", pw, "--out", file)
			opts := importOptions(t)
			opts.keyFor = keyOnce(password)

			restored := filepath.Join(t.TempDir(), "restored.sqlite")
			res, err := Import(ctx, file, password, Target{Path: restored}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.KDF == nil || *res.KDF != brc39.DefaultKDFParams || res.Mode != wallet.ImportRestore {
				t.Fatalf("restore: %+v", res)
			}
			want := readWallet(t, src, identity)
			requireSameWallet(t, readWallet(t, restored, identity), want)

			partial := filepath.Join(t.TempDir(), "partial.sqlite")
			if _, err := Import(ctx, file, password, Target{Path: partial}, opts, nil); err != nil {
				t.Fatal(err)
			}
			backuptest.Mutate(t, partial, slices.Concat(partialEdits, []string{"DELETE FROM walletsync_imports"})...)
			theirs := filepath.Join(t.TempDir(), "theirs.sqlite")
			backuptest.CopyFile(t, partial, theirs)
			var tres struct{ Inserts, Updates int64 }
			toolboxpeer.Run(t, &tres, "import39", "--db", theirs, "--in", file, "--password-file", pw, "--mode", "merge")
			prev, err := Preview(ctx, file, password, Target{Path: partial}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			merged, err := Import(ctx, file, password, Target{Path: partial}, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range wallet.AllTables {
				p, r := prev.Plan[tb.Name], merged.Tables[tb.Name]
				if p.Inserts != r.Inserts || p.Updates != r.Updates {
					t.Errorf("%s: the preview said %+v, the merge did %+v", tb.Name, p, r)
				}
			}
			if prev.Total.Inserts == 0 || prev.Total.Updates == 0 {
				t.Fatalf("the merge had nothing to do: %+v", prev.Total)
			}
			ignore := "proven_tx_reqs.notified" // reset by every merge of a request with notify ids
			got, wantMerged := readWallet(t, partial, identity, ignore), readWallet(t, src, identity, ignore)
			delete(got, wallet.TableSyncStates)
			delete(wantMerged, wallet.TableSyncStates)
			requireSameWallet(t, got, wantMerged)
			// The toolbox's importBRC39 merged the file into a copy of the same wallet: the same
			// counts, and the same wallet, sync states and their id maps included. The toolbox
			// counts a sync state it rewrites unchanged as an update; walletsync counts it as
			// unchanged (TestImport_UnchangedBackupIsUnchanged), and writes the same rows.
			sameStates := merged.Tables[wallet.TableSyncStates].Unchanged
			if tres.Inserts != merged.Inserts || tres.Updates != merged.Updates+sameStates {
				t.Fatalf("the toolbox's merge inserted %d and updated %d, walletsync's %d and %d (and %d sync states unchanged)",
					tres.Inserts, tres.Updates, merged.Inserts, merged.Updates, sameStates)
			}
			requireSameWallet(t, settledWallet(t, partial, identity), settledWallet(t, theirs, identity))
		})
	}
}

// rawDB opens the wallet file at path read-only with plain SQL; the caller closes it.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// syncStates reads the sync states of the user identity in the wallet at path, by key.
func syncStates(tb testing.TB, path, identity string) map[[2]string]brc40.SyncState {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	t := wallet.SyncStates
	rs, err := db.Query(`SELECT s."`+strings.Join(t.ColumnNames(), `", s."`)+`" FROM sync_states s JOIN users u ON u.userId = s.userId WHERE u.identityKey = ?`, identity)
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	out := map[[2]string]brc40.SyncState{}
	for rs.Next() {
		r := make(wallet.Row, len(t.Columns))
		dst := make([]any, len(r))
		for i := range r {
			dst[i] = &r[i]
		}
		if err := rs.Scan(dst...); err != nil {
			tb.Fatal(err)
		}
		st, err := brc40.SyncStateFromRow(r)
		if err != nil {
			tb.Fatal(err)
		}
		out[[2]string{st.StorageIdentityKey, st.StorageName}] = st
	}
	return out
}

// transactionIDs maps each transaction's reference to its id in the wallet at path.
func transactionIDs(tb testing.TB, path string) map[string]int64 {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	rs, err := db.Query("SELECT reference, transactionId FROM transactions")
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	out := map[string]int64{}
	for rs.Next() {
		var ref string
		var id int64
		if err := rs.Scan(&ref, &id); err != nil {
			tb.Fatal(err)
		}
		out[ref] = id
	}
	return out
}

// TestImport_MergeKeepsSyncStatesAsTheToolbox checks what a merge leaves in sync_states, as
// the toolbox's mergeBRC38 leaves it: a state for the document's source storage whose id
// maps take every source id to the row the merge matched or made, completed (counts 0, when
// the latest maxUpdated_at), and the document's own sync states re-keyed to the user with the
// values of their id maps mapped through it.
func TestImport_MergeKeepsSyncStatesAsTheToolbox(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	backuptest.Mutate(t, src, `UPDATE sync_states SET syncMap = json_set(syncMap, '$.transaction.idMap."900"', (SELECT min(transactionId) FROM transactions))`)
	file, _ := backupFile(t, src, identity)
	dst, _ := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed+1) // another user: the new rows get other ids
	opts := importOptions(t)
	opts.AllowOtherIdentity = true // asked for: the wallet then holds two identities
	res, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tables[wallet.TableSyncStates] != (wallet.MergeCounts{Inserts: 1}) {
		t.Fatalf("sync states: %+v", res.Tables[wallet.TableSyncStates])
	}
	srcIDs, dstIDs := transactionIDs(t, src), transactionIDs(t, dst)
	states := syncStates(t, dst, identity)
	producer, ok := states[[2]string{res.Source.StorageIdentityKey, res.Source.StorageName}]
	if !ok || len(states) != 2 {
		t.Fatalf("sync states %v", states)
	}
	txMap := producer.SyncMap["transaction"]
	if len(txMap.IDMap) != len(srcIDs) {
		t.Fatalf("the producer maps %d transactions, the document has %d", len(txMap.IDMap), len(srcIDs))
	}
	var first int64 = 1 << 62
	for ref, id := range srcIDs {
		if txMap.IDMap[id] != dstIDs[ref] {
			t.Fatalf("transaction %d maps to %d, its copy is %d", id, txMap.IDMap[id], dstIDs[ref])
		}
		first = min(first, id)
	}
	var latest time.Time
	for _, e := range producer.SyncMap {
		if e.Count != 0 {
			t.Fatalf("%s count %d after the closing chunk", e.EntityName, e.Count)
		}
		if e.MaxUpdatedAt != nil && e.MaxUpdatedAt.After(latest) {
			latest = *e.MaxUpdatedAt
		}
	}
	if producer.When == nil || !producer.When.Equal(latest) {
		t.Fatalf("when %v, want the latest maxUpdated_at %v", producer.When, latest)
	}
	imported, ok := states[[2]string{localstore.FixtureIdentity(9999), "fixture backup"}]
	if !ok || imported.SyncMap["transaction"].IDMap[900] != txMap.IDMap[first] {
		t.Fatalf("the imported sync state maps 900 to %d, want %d", imported.SyncMap["transaction"].IDMap[900], txMap.IDMap[first])
	}
}
