package localstore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"walletsync/syncer"
	"walletsync/wallet"
)

// TestStore_PreviewFindsWhatWouldFailTheMerge runs, for each way a row can fail a merge, the
// preview and then the merge itself (a page session, three-row pages) of a small wallet into
// a copy of it that also holds a second user: the preview names the conflict exactly when the
// merge fails on it, and finds none when the merge goes through.
func TestStore_PreviewFindsWhatWouldFailTheMerge(t *testing.T) {
	ctx := context.Background()
	tmpl := filepath.Join(t.TempDir(), "template.sqlite")
	s, err := Create(ctx, tmpl, CreateOptions{Chain: wallet.ChainTest}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	identity := mustSeed(t, s, FixtureSmall, 1)
	s.Close()
	other := FixtureIdentity(77)
	byOther := "(SELECT userId FROM users WHERE identityKey = '" + other + "')"
	for _, tc := range []struct {
		name    string
		srcEdit string // on the merged wallet, with foreign keys off
		dstEdit string // on the wallet merged into, which holds the second user
		kind    wallet.ConflictKind
		table   wallet.TableName
		cols    []string
	}{
		{name: "none"},
		{name: "a transaction reference the other user holds",
			dstEdit: "UPDATE transactions SET userId = " + byOther + " WHERE transactionId = (SELECT min(transactionId) FROM transactions)",
			kind:    wallet.ConflictUnique, table: wallet.TableTransactions, cols: []string{"reference"}},
		{name: "a commission's transaction the other user's commission holds",
			dstEdit: "UPDATE commissions SET userId = " + byOther + " WHERE commissionId = (SELECT min(commissionId) FROM commissions)",
			kind:    wallet.ConflictUnique, table: wallet.TableCommissions, cols: []string{"transactionId"}},
		{name: "a certificate field the other user's field holds",
			dstEdit: "UPDATE certificate_fields SET userId = " + byOther + " WHERE rowid = (SELECT min(rowid) FROM certificate_fields)",
			kind:    wallet.ConflictUnique, table: wallet.TableCertificateFields, cols: []string{"fieldName", "certificateId"}},
		{name: "two certificates matching one natural key",
			dstEdit: `INSERT INTO certificates (created_at, updated_at, userId, serialNumber, type, certifier, subject, verifier, revocationOutpoint, signature, isDeleted)
				SELECT created_at, updated_at, userId, serialNumber, 'another type', certifier, subject, verifier, revocationOutpoint, signature, isDeleted
				FROM certificates WHERE certificateId = (SELECT min(certificateId) FROM certificates)`,
			kind: wallet.ConflictAmbiguous, table: wallet.TableCertificates},
		{name: "an output of a transaction neither side has",
			srcEdit: "UPDATE outputs SET transactionId = 9999 WHERE outputId = (SELECT min(outputId) FROM outputs)",
			kind:    wallet.ConflictDangling, table: wallet.TableOutputs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := copyWallet(t, tmpl), copyWallet(t, tmpl)
			edit(t, src, tc.srcEdit)
			d, err := Open(ctx, dst, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, _, err := d.EnsureUser(ctx, other); err != nil {
				t.Fatal(err)
			}
			edit(t, dst, tc.dstEdit)
			sr, err := Open(ctx, src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer sr.Close()
			settings, _ := sr.Settings(ctx)
			v, err := sr.OpenSnapshot(ctx, SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := d.PreviewMerge(ctx, v, identity, settings)
			v.Close()
			if err != nil {
				t.Fatal(err)
			}
			found := slices.ContainsFunc(p.Conflicts, func(c wallet.MergeConflict) bool {
				return c.Kind == tc.kind && c.Table == tc.table && (tc.cols == nil || slices.Equal(c.Columns, tc.cols))
			})
			if tc.kind == "" && p.ConflictTotal != 0 || tc.kind != "" && !found {
				t.Fatalf("preview conflicts %d %+v, want %s %s %v", p.ConflictTotal, p.Conflicts, tc.kind, tc.table, tc.cols)
			}
			_, err = syncer.Run(ctx, sr, d, identity, syncer.Options{MaxRows: 3, Active: wallet.KeepDestinationActive})
			failed := errors.Is(err, wallet.ErrConstraint) || errors.Is(err, wallet.ErrCorrupt) || errors.Is(err, wallet.ErrDanglingReference)
			if tc.kind == "" && err != nil || tc.kind != "" && !failed {
				t.Fatalf("the merge: %v (the preview found %d conflicts)", err, p.ConflictTotal)
			}
		})
	}
}

// copyWallet copies the closed wallet file at path into a temp dir.
func copyWallet(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(tb.TempDir(), "wallet.sqlite")
	if err := os.WriteFile(out, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return out
}

// edit runs q (if any) on the wallet file at path with plain SQL and foreign keys off.
func edit(tb testing.TB, path, q string) {
	tb.Helper()
	if q == "" {
		return
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(0)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}
