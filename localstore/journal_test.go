package localstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"walletsync/wallet"
)

type journalEntry struct {
	seq    int64
	table  string
	k1, k2 any
	op     string
}

func journalAfter(tb testing.TB, s *Store, seq int64) []journalEntry {
	tb.Helper()
	rows, err := s.readDB.Query("SELECT seq, tbl, k1, k2, op FROM "+journalTable+" WHERE seq > ? ORDER BY seq", seq)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []journalEntry
	for rows.Next() {
		var e journalEntry
		if err := rows.Scan(&e.seq, &e.table, &e.k1, &e.k2, &e.op); err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func mustJournalState(tb testing.TB, s *Store) JournalState {
	tb.Helper()
	j, err := s.JournalState(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

func TestJournal_RecordsWritesOfAnotherConnection(t *testing.T) {
	s := mustCreate(t, Options{})
	mustSeed(t, s, FixtureSmall, 1)
	start := mustJournalState(t, s).HighWater
	if start == 0 {
		t.Fatal("seeding recorded nothing")
	}

	// Another program writes to the file through its own connection, with none of
	// walletsync's code involved: the triggers in the file record it anyway.
	db := rawDB(t, s.Path())
	mustExec(t, db, "UPDATE tx_labels SET isDeleted = 1, updated_at = '2027-01-01T00:00:00.000Z' WHERE txLabelId = 2")
	var freeLabel int64 // a label transaction 6 does not carry yet
	if err := db.QueryRow("SELECT min(txLabelId) FROM tx_labels WHERE txLabelId NOT IN (SELECT txLabelId FROM tx_labels_map WHERE transactionId = 6)").Scan(&freeLabel); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "INSERT INTO tx_labels_map (created_at, updated_at, txLabelId, transactionId, isDeleted) VALUES ('2027-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', ?, 6, 0)", freeLabel)
	mustExec(t, db, "DELETE FROM certificate_fields WHERE certificateId = 1 AND fieldName = 'Email'")
	mustExec(t, db, "UPDATE outputs SET outputId = 5000 WHERE outputId = 3 AND outputId NOT IN (SELECT outputId FROM output_tags_map)")
	mustExec(t, db, "INSERT INTO monitor_events (created_at, updated_at, event) VALUES ('2027-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', 'not synced')")

	got := journalAfter(t, s, start)
	want := []journalEntry{
		{table: "tx_labels", k1: int64(2), op: "u"},
		{table: "tx_labels_map", k1: int64(6), k2: freeLabel, op: "i"},
		{table: "certificate_fields", k1: int64(1), k2: "Email", op: "d"},
		{table: "outputs", k1: int64(3), op: "d"},
		{table: "outputs", k1: int64(5000), op: "u"},
	}
	if len(got) != len(want) {
		t.Fatalf("journal after the writes: %+v, want %d entries", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.table != w.table || g.k1 != w.k1 || g.k2 != w.k2 || g.op != w.op {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
		if i > 0 && g.seq <= got[i-1].seq {
			t.Errorf("entry %d: sequence %d does not increase", i, g.seq)
		}
	}
}

func TestJournal_TriggersReinstalledAfterTableRebuild(t *testing.T) {
	path := closedStorePath(t)
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := mustJournalState(t, s)
	if !before.CoversSince(before.HighWater) {
		t.Fatalf("intact journal does not cover its own high water: %+v", before)
	}
	s.Close()

	// Reopening an intact file reinstalls nothing.
	s, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j := mustJournalState(t, s); j.CompleteAfter != before.CompleteAfter {
		t.Fatalf("reopen of an intact file moved complete_after from %d to %d", before.CompleteAfter, j.CompleteAfter)
	}
	s.Close()

	// A toolbox migration rebuilds a table the way Knex's .alter() does on SQLite; the
	// rebuilt table has no triggers, and a write after it goes unrecorded.
	db := rawDB(t, path)
	mustExec(t, db, `PRAGMA foreign_keys = OFF;
		CREATE TABLE "_knex_temp_alter" AS SELECT * FROM "tx_labels";
		DROP TABLE "tx_labels";
		ALTER TABLE "_knex_temp_alter" RENAME TO "tx_labels";
		UPDATE tx_labels SET isDeleted = 1 WHERE txLabelId = 1;`)
	db.Close()

	s, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := mustJournalState(t, s)
	if after.CompleteAfter < before.HighWater || after.CoversSince(before.HighWater) {
		t.Fatalf("after the rebuild: %+v; a destination at %d must be told to traverse again", after, before.HighWater)
	}
	var n int
	if err := s.readDB.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'tx_labels'").Scan(&n); err != nil || n != 3 {
		t.Fatalf("triggers on the rebuilt table: %d (%v), want 3", n, err)
	}
	id := FixtureIdentity(1)
	if err := s.SoftDelete(context.Background(), id, wallet.SoftDeleteLabel, labelName(2)); err != nil {
		t.Fatal(err)
	}
	if got := journalAfter(t, s, after.HighWater); len(got) != 1 || got[0].table != "tx_labels" {
		t.Fatalf("write after the repair: journal %+v", got)
	}
}

func TestJournal_PruneIsBounded(t *testing.T) {
	s := mustCreate(t, Options{})
	mustSeed(t, s, FixtureSmall, 1)
	ctx := context.Background()
	hw := mustJournalState(t, s).HighWater
	through := hw / 2
	if through < 10 {
		t.Fatalf("fixture journal too small: %d", hw)
	}
	deleted, more, err := s.PruneJournal(ctx, through, 3)
	if err != nil {
		t.Fatal(err)
	}
	j := mustJournalState(t, s)
	if deleted != 3 || !more || j.PrunedThrough != 3 || j.Entries != hw-3 {
		t.Fatalf("first batch: deleted %d, more %v, state %+v; want the 3 oldest gone", deleted, more, j)
	}
	for more {
		if _, more, err = s.PruneJournal(ctx, through, 7); err != nil {
			t.Fatal(err)
		}
	}
	j = mustJournalState(t, s)
	if j.PrunedThrough != through || j.Entries != hw-through || j.HighWater != hw {
		t.Fatalf("after pruning through %d: %+v", through, j)
	}
	if !j.CoversSince(through) || j.CoversSince(through-1) {
		t.Fatalf("coverage after pruning: %+v", j)
	}
	for _, tc := range []struct {
		through int64
		limit   int
	}{{0, 1}, {-1, 1}, {hw, 0}} {
		if _, _, err := s.PruneJournal(ctx, tc.through, tc.limit); tc.limit < 1 || tc.through < 0 {
			if !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Errorf("prune through %d by %d: %v, want ErrInvalidArgument", tc.through, tc.limit, err)
			}
		} else if err != nil {
			t.Errorf("prune through %d by %d: %v", tc.through, tc.limit, err)
		}
	}
}

// TestJournal_PruneWithNothingToDoWritesNothing: maintenance that finds nothing below its
// bound must not even take the write lock, let alone commit: any commit can fail a wallet
// app transaction that read before it.
func TestJournal_PruneWithNothingToDoWritesNothing(t *testing.T) {
	s := mustCreate(t, Options{})
	mustSeed(t, s, FixtureSmall, 1)
	ctx := context.Background()
	hw := mustJournalState(t, s).HighWater
	if _, _, err := s.PruneJournal(ctx, hw/2, 1_000_000); err != nil {
		t.Fatal(err)
	}
	before := mustWriteVersion(t, s)
	for _, through := range []int64{0, hw / 4, hw / 2} {
		if deleted, more, err := s.PruneJournal(ctx, through, 10); err != nil || deleted != 0 || more {
			t.Fatalf("prune through %d again: %d, %v, %v", through, deleted, more, err)
		}
	}
	if after := mustWriteVersion(t, s); after != before {
		t.Fatalf("a prune with nothing to delete committed (data_version %d -> %d)", before, after)
	}
}

func TestJournal_MaintainStopsWhenTheWalletIsWritten(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		writeBefore bool // the wallet is written after it was judged quiet
		batches     int
		wantDeleted int64
		wantErr     error
	}{
		{name: "QuietRunsToItsBound", batches: 2, wantDeleted: 20},
		{name: "WrittenSinceJudgedQuiet", writeBefore: true, batches: 2, wantErr: ErrNotQuiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreate(t, Options{})
			mustSeed(t, s, FixtureSmall, 1)
			hw := mustJournalState(t, s).HighWater
			version := mustWriteVersion(t, s)
			if tc.writeBefore {
				if err := s.AddLabel(ctx, FixtureIdentity(1), 1, "late"); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.MaintainJournal(ctx, JournalMaintenance{Through: hw, Batch: 10, Batches: tc.batches, Version: version})
			if !errors.Is(err, tc.wantErr) || res.Deleted != tc.wantDeleted || !res.More {
				t.Fatalf("maintain: %+v, %v; want %d deleted, more left, error %v", res, err, tc.wantDeleted, tc.wantErr)
			}
			if j := mustJournalState(t, s); j.PrunedThrough != tc.wantDeleted {
				t.Fatalf("journal after: %+v", j)
			}
		})
	}
}

func mustWriteVersion(t *testing.T, s *Store) int64 {
	t.Helper()
	v, err := s.WriteVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSnapshot_IdentityHighWater: in a store of two users, a user's journal position is
// that of its own last change: the other user's writes leave it where it was (while the
// store-wide mark moves), its own write moves it to that write's position, pruning raises
// it to the pruned bound, an unknown identity gets the journal's floor, and a store
// without a walletsync journal answers 0.
func TestSnapshot_IdentityHighWater(t *testing.T) {
	ctx := context.Background()
	s := mustCreate(t, Options{})
	a := mustSeed(t, s, FixtureSmall, 1)
	b := mustSeed(t, s, FixtureSmall, 2)
	position := func(identity string) (mine, store int64) {
		t.Helper()
		v := openView(t, s, SnapshotOptions{})
		defer v.Close()
		mine, err := v.IdentityHighWater(ctx, identity)
		if err != nil {
			t.Fatal(err)
		}
		store, _ = v.Journal(0)
		return mine, store
	}
	aBefore, storeBefore := position(a)
	if bHW, _ := position(b); aBefore == 0 || aBefore >= bHW || bHW != storeBefore {
		t.Fatalf("positions after seeding a then b: a %d, b %d, store %d", aBefore, bHW, storeBefore)
	}
	if _, err := s.RecordTransaction(ctx, b, wallet.NewTransaction{Satoshis: 5, Labels: []string{"b's"}}); err != nil {
		t.Fatal(err)
	}
	if aAfter, storeAfter := position(a); aAfter != aBefore || storeAfter <= storeBefore {
		t.Fatalf("b's write: a's position %d -> %d (want unchanged), the store's %d -> %d", aBefore, aAfter, storeBefore, storeAfter)
	}
	if _, err := s.RecordTransaction(ctx, a, wallet.NewTransaction{Satoshis: 6, Labels: []string{"a's"}}); err != nil {
		t.Fatal(err)
	}
	aOwn, storeOwn := position(a)
	if aOwn != storeOwn {
		t.Fatalf("a's own write: a's position %d, the store's %d; want the same (a wrote last)", aOwn, storeOwn)
	}
	if unknown, _ := position("03" + strings.Repeat("ab", 32)); unknown != 0 {
		t.Fatalf("an unknown identity's position: %d, want the journal's floor 0", unknown)
	}
	for more := true; more; {
		var err error
		if _, more, err = s.PruneJournal(ctx, aOwn, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if bPruned, _ := position(b); bPruned != aOwn {
		t.Fatalf("b's position after pruning through %d: %d, want the pruned bound", aOwn, bPruned)
	}
}

// TestSnapshot_IdentityHighWaterBoundedWalk: when another identity wrote more than
// identityJournalWalk entries of a table since the caller's last change to it, the
// caller's position is the bound the walk reached (above every change of the caller's,
// below the store's mark), and the caller's own next write still moves it to that write.
func TestSnapshot_IdentityHighWaterBoundedWalk(t *testing.T) {
	ctx := context.Background()
	s := mustCreate(t, Options{})
	a := mustSeed(t, s, FixtureSmall, 1)
	b := mustSeed(t, s, FixtureSmall, 2)
	var bTx int64
	if err := s.writeDB.QueryRowContext(ctx, "SELECT max(transactionId) FROM transactions t JOIN users u ON u.userId = t.userId WHERE u.identityKey = ?", b).Scan(&bTx); err != nil {
		t.Fatal(err)
	}
	position := func() (mine, store int64) {
		t.Helper()
		v := openView(t, s, SnapshotOptions{})
		defer v.Close()
		mine, err := v.IdentityHighWater(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		store, _ = v.Journal(0)
		return mine, store
	}
	seeded, _ := position()
	// b updates one of its transactions twice the walk's length of times.
	if _, err := s.writeDB.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
		INSERT INTO `+journalTable+` (tbl, k1, k2, op) SELECT 'transactions', ?, NULL, 'u' FROM c`, 2*identityJournalWalk, bTx); err != nil {
		t.Fatal(err)
	}
	bounded, store := position()
	if bounded != store-identityJournalWalk || bounded <= seeded {
		t.Fatalf("a's position past the walk: %d, want the walk's bound %d (store %d, a's seeded position %d)", bounded, store-identityJournalWalk, store, seeded)
	}
	if _, err := s.RecordTransaction(ctx, a, wallet.NewTransaction{Satoshis: 7}); err != nil {
		t.Fatal(err)
	}
	if own, store := position(); own != store {
		t.Fatalf("a's own write past the walk: a's position %d, the store's %d", own, store)
	}
}
