package portable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/wallet"
)

// walletDigest hashes everything the wallet file at path holds, table by table and row by
// row, in SQLite's own exact form of each value (quote(): the type, every byte): the
// toolbox's tables, their AUTOINCREMENT counters, and walletsync's import journal, undo
// log, checkpoints and id maps. It leaves out the change journal, which records every change
// and its undoing by design (a sync destination must learn of both).
func walletDigest(tb testing.TB, path string) string {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	names, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'walletsync_journal%' ORDER BY name")
	if err != nil {
		tb.Fatal(err)
	}
	var tables []string
	for names.Next() {
		var n string
		names.Scan(&n)
		tables = append(tables, n)
	}
	names.Close()
	h := sha256.New()
	for _, table := range tables {
		rs, err := db.Query(fmt.Sprintf("SELECT * FROM %q", table))
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rs.Columns()
		rs.Close()
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = fmt.Sprintf("quote(%q)", c)
		}
		q := fmt.Sprintf("SELECT %s FROM %q", strings.Join(quoted, " || ',' || "), table)
		if table == "sqlite_sequence" {
			q += " WHERE name NOT LIKE 'walletsync_journal%'"
		}
		rs, err = db.Query(q)
		if err != nil {
			tb.Fatal(err)
		}
		var rows []string
		for rs.Next() {
			var r string
			if err := rs.Scan(&r); err != nil {
				tb.Fatal(err)
			}
			rows = append(rows, r)
		}
		rs.Close()
		slices.Sort(rows)
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", table, len(rows), strings.Join(rows, "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// otherIdentityBackup returns a backup of the small fixture's wallet under another
// identity: a copy of a wallet made for a second person, so that its transactions keep the
// references of the first (which are unique across a whole wallet).
func otherIdentityBackup(tb testing.TB) (file, identity string) {
	tb.Helper()
	src, _ := mustStore(tb, localstore.FixtureSmall, smallSeed)
	identity = localstore.FixtureIdentity(99)
	mutate(tb, src, fmt.Sprintf("UPDATE users SET identityKey = '%s'", identity))
	file, _ = backupFile(tb, src, identity)
	return file, identity
}

// TestImport_RefusesAnotherIdentity imports the backup of another user into a wallet: it is
// refused, with a typed error and the wallet byte-identical, unless asked for; the preview
// says so and goes on. Asked for, into a wallet whose transactions share the backup's
// references, the merge is refused for its conflicts, again before anything is written; into
// a wallet without them it merges, and the wallet then holds both identities.
func TestImport_RefusesAnotherIdentity(t *testing.T) {
	ctx := context.Background()
	file, other := otherIdentityBackup(t)
	dst, own := mustStore(t, localstore.FixtureSmall, smallSeed)
	before, digest := fileHashes(t, dst), walletDigest(t, dst)
	opts := importOptions(t)

	_, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	var oi *wallet.OtherIdentityError
	if !errors.As(err, &oi) || !errors.Is(err, wallet.ErrOtherIdentity) || oi.Backup != other || !slices.Equal(oi.Wallet, []string{own}) {
		t.Fatalf("import of another identity: %v, want *wallet.OtherIdentityError", err)
	}
	if fileHashes(t, dst) != before {
		t.Fatal("the refused import changed the wallet file")
	}

	prev, err := Preview(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil || !prev.OtherIdentity || !slices.Equal(prev.WalletIdentities, []string{own}) {
		t.Fatalf("preview: other identity %v %v, %v", prev.OtherIdentity, prev.WalletIdentities, err)
	}
	if prev.ConflictTotal == 0 || prev.Conflicts[0].Table != wallet.TableTransactions || !slices.Equal(prev.Conflicts[0].Columns, []string{"reference"}) {
		t.Fatalf("preview conflicts: %d %+v", prev.ConflictTotal, prev.Conflicts)
	}

	opts.AllowOtherIdentity = true
	_, err = Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	var mc *wallet.MergeConflictError
	if !errors.As(err, &mc) || mc.Total != prev.ConflictTotal || !errors.Is(err, wallet.ErrMergeConflict) {
		t.Fatalf("import with conflicts: %v, want *wallet.MergeConflictError with %d", err, prev.ConflictTotal)
	}
	if walletDigest(t, dst) != digest {
		t.Fatal("the import refused for its conflicts changed the wallet")
	}
	if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
		t.Fatalf("the staging folder keeps %v", names)
	}

	// Without the shared references, the merge asked for goes in whole.
	mutate(t, dst, "UPDATE transactions SET reference = 'own-' || reference")
	res, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil || res.Inserts == 0 {
		t.Fatalf("import asked for: %+v, %v", res, err)
	}
	s := mustOpen(t, dst)
	defer s.Close()
	if ids, err := s.Identities(ctx); err != nil || !slices.Equal(ids, []string{own, other}) {
		t.Fatalf("identities after the merge: %v, %v", ids, err)
	}
}
