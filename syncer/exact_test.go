package syncer_test

import (
	"context"
	"database/sql"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// TestRun_EmptyBinaryStaysEmpty: a zero-length BLOB (an empty locking script) arrives as a
// zero-length BLOB, and NULL as NULL, through a page sync, full and incremental.
func TestRun_EmptyBinaryStaysEmpty(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 21)
	dst := newStore(t, wallet.ChainTest)
	set := func(q string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+src.Path()+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	shape := func(s *localstore.Store) (empty, null int) {
		t.Helper()
		db, err := openRaw(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT count(*) FILTER (WHERE typeof(lockingScript) = 'blob' AND length(lockingScript) = 0),
			count(*) FILTER (WHERE lockingScript IS NULL) FROM outputs`).Scan(&empty, &null); err != nil {
			t.Fatal(err)
		}
		return empty, null
	}
	set(`UPDATE outputs SET lockingScript = X'' WHERE outputId = 1`)
	set(`UPDATE outputs SET lockingScript = NULL WHERE outputId = 2`)
	push(t, src, dst, id, syncer.Options{MaxRows: 7})
	if e, n := shape(dst); e != 1 || n != 1 {
		t.Fatalf("after a full sync the destination holds %d empty and %d NULL scripts; want 1 and 1", e, n)
	}
	set(`UPDATE outputs SET lockingScript = X'', updated_at = '2099-01-01T00:00:00.000Z' WHERE outputId = 3`)
	push(t, src, dst, id, syncer.Options{})
	if e, n := shape(dst); e != 2 || n != 1 {
		t.Fatalf("after an incremental sync the destination holds %d empty and %d NULL scripts; want 2 and 1", e, n)
	}
	mustEqual(t, src, dst, id)
	_ = context.Background
}
