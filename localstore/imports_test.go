package localstore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"walletsync/syncer"
	"walletsync/wallet"
)

func TestStore_CheckEmpty(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fill  string // SQL that puts one row in
		table string
	}{
		{"settings only", "", ""},
		{"a user", "INSERT INTO users (identityKey, activeStorage) VALUES ('k', 's')", "users"},
		{"a monitor event", "INSERT INTO monitor_events (event) VALUES ('e')", "monitor_events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreate(t, Options{})
			if tc.fill != "" {
				if _, err := s.writeDB.ExecContext(ctx, tc.fill); err != nil {
					t.Fatal(err)
				}
			}
			err := s.CheckEmpty(ctx)
			var ne *wallet.NotEmptyError
			switch {
			case tc.table == "" && err != nil:
				t.Fatalf("empty store: %v", err)
			case tc.table != "" && (!errors.As(err, &ne) || ne.Table != tc.table || ne.Rows != 1 || !errors.Is(err, wallet.ErrNotEmpty)):
				t.Fatalf("got %v, want a *wallet.NotEmptyError for %s", err, tc.table)
			}
		})
	}
}

// loadRows copies every row of the user in src into the empty store dst with LoadDocument,
// children before parents as a BRC-38 document lists them.
func loadRows(t *testing.T, src, dst *Store, identity string, rec wallet.ImportRecord, fail error) error {
	t.Helper()
	v, err := src.OpenSnapshot(context.Background(), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	limits := wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}
	return dst.LoadDocument(context.Background(), rec, func(put func(*wallet.Table, wallet.Row) error) error {
		for i := len(wallet.AllTables) - 1; i >= 0; i-- {
			tb := wallet.AllTables[i]
			for _, r := range readAll(t, v, tb.Name, identity, limits) {
				if err := put(tb, r); err != nil {
					return err
				}
			}
		}
		return fail
	})
}

func TestStore_LoadDocumentCommitsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	src := mustCreate(t, Options{})
	identity := mustSeed(t, src, FixtureSmall, 1)
	rec := wallet.ImportRecord{Digest: "d1", Mode: wallet.ImportMerge, State: wallet.ImportStaged, IdentityKey: identity}

	t.Run("fill fails", func(t *testing.T) {
		dst := mustCreate(t, Options{})
		stop := errors.New("the document ended early")
		if err := loadRows(t, src, dst, identity, rec, stop); !errors.Is(err, stop) {
			t.Fatalf("got %v", err)
		}
		if err := dst.CheckEmpty(ctx); err != nil {
			t.Fatalf("a failed load left rows: %v", err)
		}
		if _, err := dst.ImportRecord(ctx, rec.Digest); !errors.Is(err, wallet.ErrNotFound) {
			t.Fatalf("a failed load left a journal entry: %v", err)
		}
	})
	t.Run("a reference to nothing", func(t *testing.T) {
		dst := mustCreate(t, Options{})
		err := dst.LoadDocument(ctx, rec, func(put func(*wallet.Table, wallet.Row) error) error {
			return put(wallet.TxLabels, newRow(wallet.TxLabels, fields{"created_at": wallet.Now(), "updated_at": wallet.Now(),
				"txLabelId": 7, "userId": 99, "label": "orphan", "isDeleted": false}))
		})
		if !errors.Is(err, wallet.ErrConstraint) {
			t.Fatalf("got %v, want wallet.ErrConstraint", err)
		}
		if err := dst.CheckEmpty(ctx); err != nil {
			t.Fatalf("a refused load left rows: %v", err)
		}
	})
	t.Run("complete", func(t *testing.T) {
		dst := mustCreate(t, Options{})
		if err := loadRows(t, src, dst, identity, rec, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := dst.ImportRecord(ctx, rec.Digest); err != nil || got.State != wallet.ImportStaged {
			t.Fatalf("journal: %+v, %v", got, err)
		}
		// The load turns foreign keys off on the writer connection; every later write must
		// find them on again.
		var on int
		if err := dst.writeTx(ctx, func(tx *sql.Tx) error { return tx.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&on) }); err != nil || on != 1 {
			t.Fatalf("foreign_keys on the writer after the load = %d (%v), want 1", on, err)
		}
		want, _ := src.Summary(ctx, identity)
		got, _ := dst.Summary(ctx, identity)
		for _, tb := range wallet.AllTables {
			if got.Counts[tb.Name] != want.Counts[tb.Name] {
				t.Errorf("%s: %d rows, want %d", tb.Name, got.Counts[tb.Name], want.Counts[tb.Name])
			}
		}
		if err := loadRows(t, src, dst, identity, rec, nil); !errors.Is(err, wallet.ErrNotEmpty) {
			t.Fatalf("a second load: %v, want wallet.ErrNotEmpty", err)
		}
	})
}

// TestStore_PreviewMergeCountsWhatCommitWrites previews a merge into a store that does not
// have the user yet (the preview makes the user and its default basket in memory, as Commit
// makes them in the store), checks that the preview wrote nothing, and then merges the same
// rows with a page session: every table's inserts and updates are the preview's.
func TestStore_PreviewMergeCountsWhatCommitWrites(t *testing.T) {
	ctx := context.Background()
	src := mustCreate(t, Options{})
	identity := mustSeed(t, src, FixtureSmall, 1)
	dst := mustCreate(t, Options{})
	srcSettings, _ := src.Settings(ctx)

	v, err := src.OpenSnapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := dst.JournalState(ctx)
	plan, err := dst.PreviewMerge(ctx, v, identity, srcSettings)
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := dst.JournalState(ctx); after != before || dst.CheckEmpty(ctx) != nil {
		t.Fatal("the preview wrote to the store")
	}
	// The user and its default basket, both made by EnsureUser in the source too, match the
	// ones the merge makes first: the preview finds them, it does not insert them.
	if plan[wallet.TableUsers] != (wallet.MergeCounts{Unchanged: 1}) || plan[wallet.TableOutputBaskets].Unchanged != 1 {
		t.Fatalf("plan %+v", plan)
	}
	tables := wallet.MergePlan{}
	var last syncer.Counters
	_, err = syncer.Run(ctx, src, dst, identity, syncer.Options{MaxRows: 3, Active: wallet.KeepDestinationActive,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				c := tables[p.Table]
				c.Inserts += p.Inserts - last.Inserts
				c.Updates += p.Updates - last.Updates
				tables[p.Table], last = c, p.Counters
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range wallet.SyncOrder {
		if p, r := plan[tb.Name], tables[tb.Name]; p.Inserts != r.Inserts || p.Updates != r.Updates {
			t.Errorf("%s: previewed %+v, committed %+v", tb.Name, p, r)
		}
	}
	// Previewed again, the merged rows are all unchanged.
	v, err = src.OpenSnapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	again, err := dst.PreviewMerge(ctx, v, identity, srcSettings)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range wallet.SyncOrder {
		if c := again[tb.Name]; c.Inserts != 0 || c.Updates != 0 || c.Older != 0 {
			t.Errorf("%s after the merge: %+v", tb.Name, c)
		}
	}
}

func TestStore_SaveAs(t *testing.T) {
	ctx := context.Background()
	s := mustCreate(t, Options{})
	identity := mustSeed(t, s, FixtureSmall, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "copy.sqlite")
	if err := s.SaveAs(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveAs(ctx, path); !errors.Is(err, os.ErrExist) {
		t.Fatalf("saving over a file: %v, want os.ErrExist", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 || entries[1].Name() != "copy.sqlite.walletsync-lock" {
		t.Fatalf("the folder holds %v, want the copy and its writer lock file alone", entries)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy: %v, %v", fi, err)
	}
	c, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, _ := s.Summary(ctx, identity)
	got, err := c.Summary(ctx, identity)
	if err != nil || got.Balance != want.Balance || got.Counts[wallet.TableOutputs] != want.Counts[wallet.TableOutputs] {
		t.Fatalf("copy summary %+v, %v; want %+v", got, err, want)
	}
}

func TestStore_RestoreFromRefusesAWalletThatIsNotEmpty(t *testing.T) {
	ctx := context.Background()
	src := mustCreate(t, Options{})
	mustSeed(t, src, FixtureSmall, 1)
	dst := mustCreate(t, Options{})
	other := mustSeed(t, dst, FixtureSmall, 2)
	rec := wallet.ImportRecord{Digest: "d", Mode: wallet.ImportRestore, State: wallet.ImportDone, IdentityKey: other}
	before, _ := dst.Summary(ctx, other)
	src.Close()
	err := dst.RestoreFrom(ctx, src.Path(), rec)
	if !errors.Is(err, wallet.ErrNotEmpty) {
		t.Fatalf("got %v, want wallet.ErrNotEmpty", err)
	}
	if after, _ := dst.Summary(ctx, other); after.Balance != before.Balance || after.Counts[wallet.TableOutputs] != before.Counts[wallet.TableOutputs] {
		t.Fatal("a refused restore changed the wallet")
	}
	if _, err := dst.ImportRecord(ctx, rec.Digest); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("a refused restore left a journal entry: %v", err)
	}
}
