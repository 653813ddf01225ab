package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/wallet"
)

// connect opens a connection of its own to url; it closes with the test.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// labelsSince reads, in a new view, the labels of identity the journal records as changed
// above since, and the view's high-water mark.
func labelsSince(t testing.TB, s *pgstore.Store, identity string, since int64) (labels []string, highWater int64) {
	t.Helper()
	v, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	highWater, covered := v.Journal(since)
	if !covered {
		t.Fatalf("the journal does not cover %d (high-water %d)", since, highWater)
	}
	for _, p := range readPages(t, v, wallet.PageRequest{Table: wallet.TableTxLabels, IdentityKey: identity, Incremental: true, Since: since}) {
		for _, r := range p.Rows {
			labels = append(labels, r[wallet.TxLabels.Col("label")].(string))
		}
	}
	return labels, highWater
}

const insertLabel = `INSERT INTO tx_labels (created_at, updated_at, "userId", label, "isDeleted")
	SELECT now(), now(), "userId", $2, false FROM users WHERE "identityKey" = $1`

// TestJournal_CommitOrder: a writer that journals first holds the journal's position until
// it commits, so a second writer on another connection that commits meanwhile waits for it
// and takes a later position. A reader that saw high-water N while both were open finds
// both changes above N afterwards, the first writer's below the second's: no change
// becomes visible later at a position a reader already passed.
func TestJournal_CommitOrder(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1)
	_, before := labelsSince(t, s, id, 0)

	a, b := connect(t, url), connect(t, url)
	txA, err := a.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(context.Background())
	// IMMEDIATE: A's trigger runs at the statement, so A takes its position now, long
	// before it commits (the case where a sequence would let a later writer pass it).
	if _, err := txA.Exec(t.Context(), "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := txA.Exec(t.Context(), insertLabel, id, "written first, committed last"); err != nil {
		t.Fatal(err)
	}
	pidB := b.PgConn().PID()
	committedB := make(chan error, 1)
	go func() {
		_, err := b.Exec(context.Background(), insertLabel, id, "written second, committed first")
		committedB <- err
	}()
	// B's commit must wait for A (a lock wait on the counter row), not take a position.
	mon := connect(t, url)
	for waiting := false; !waiting; {
		if err := mon.QueryRow(t.Context(), "SELECT wait_event_type IS NOT DISTINCT FROM 'Lock' FROM pg_stat_activity WHERE pid = $1", pidB).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-committedB:
			t.Fatalf("B committed while A held its journal position (err %v)", err)
		default:
		}
	}
	seen, mid := labelsSince(t, s, id, before)
	if len(seen) != 0 || mid != before {
		t.Fatalf("a view while both are open: %v at high-water %d, want nothing at %d", seen, mid, before)
	}
	if err := txA.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-committedB; err != nil {
		t.Fatal(err)
	}
	got, after := labelsSince(t, s, id, mid)
	if len(got) != 2 || after != mid+2 {
		t.Fatalf("changes above %d: %v at high-water %d, want both writers' labels at %d", mid, got, after, mid+2)
	}
	var posA, posB int64
	if err := mon.QueryRow(t.Context(), `SELECT
		(SELECT j.seq FROM walletsync_journal j JOIN tx_labels l ON l."txLabelId" = j.k1 WHERE j.tbl = 'tx_labels' AND l.label = 'written first, committed last'),
		(SELECT j.seq FROM walletsync_journal j JOIN tx_labels l ON l."txLabelId" = j.k1 WHERE j.tbl = 'tx_labels' AND l.label = 'written second, committed first')`).Scan(&posA, &posB); err != nil {
		t.Fatal(err)
	}
	if !(mid < posA && posA < posB) {
		t.Fatalf("positions: A %d, B %d, reader's high-water %d; want high-water < A < B (commit order)", posA, posB, mid)
	}
}

// TestJournal_NoChangeMissedUnderConcurrentWriters: several writers on their own
// connections commit labels while a reader chains incremental reads, each above the
// high-water mark of the one before. Every label committed is read exactly once: a journal
// whose positions were not commit-ordered would let a reader pass a position that a slower
// transaction commits later, and that label would never be read.
func TestJournal_NoChangeMissedUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1)
	_, since := labelsSince(t, s, id, 0)

	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		conn := connect(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Two statements per transaction, so that a transaction's position is
				// taken at commit while others are between their statements.
				err := pgx.BeginFunc(context.Background(), conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(context.Background(), insertLabel, id, fmt.Sprintf("w%d-%d", w, i)); err != nil {
						return err
					}
					_, err := tx.Exec(context.Background(), `UPDATE tx_labels SET updated_at = now() WHERE label = $1`, fmt.Sprintf("w%d-%d", w, i))
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]int{}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more read after the last commit
		default:
		}
		labels, hw := labelsSince(t, s, id, since)
		for _, l := range labels {
			seen[l]++
		}
		since = hw
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range writers {
		for i := range perWriter {
			if l := fmt.Sprintf("w%d-%d", w, i); seen[l] != 1 {
				t.Errorf("label %s read %d times by the chained incremental reads, want once", l, seen[l])
			}
		}
	}
	if len(seen) != writers*perWriter {
		t.Errorf("read %d labels, want %d", len(seen), writers*perWriter)
	}
}

// TestIdentityHighWater_OwnRowsOnly: in a database of two users, each user's position is
// that of its own last change (the later user's is the store's mark); past a walk of
// IdentityJournalWalk entries of another user's, the earlier user's is the walk's bound
// (above its own changes, below the store's mark); an unknown identity's is the floor.
func TestIdentityHighWater_OwnRowsOnly(t *testing.T) {
	t.Parallel()
	url, _, a := seededPG(t, 1, 2)
	b := localstore.FixtureIdentity(2)
	ctx := t.Context()
	positions := func() (mine, theirs, unknown, store int64) {
		t.Helper()
		conn := connect(t, url)
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		j, err := pgstore.ReadJournal(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			identity string
			to       *int64
		}{{a, &mine}, {b, &theirs}, {"03" + strings.Repeat("ab", 32), &unknown}} {
			if *p.to, err = pgstore.IdentityHighWater(ctx, tx, p.identity, j); err != nil {
				t.Fatal(err)
			}
		}
		return mine, theirs, unknown, j.HighWater
	}
	seeded, theirs, unknown, store := positions()
	if seeded == 0 || seeded >= theirs || theirs != store || unknown != 0 {
		t.Fatalf("after seeding a then b: a %d, b %d, unknown %d, store %d", seeded, theirs, unknown, store)
	}
	// b updates one of its transactions twice the walk's length of times.
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, `INSERT INTO walletsync_journal (seq, tbl, k1, k2, op)
		SELECT c.n + i, 'transactions', (SELECT max(x."transactionId") FROM transactions x JOIN users u ON u."userId" = x."userId" WHERE u."identityKey" = $1), NULL, 'u'
		FROM walletsync_journal_counter c, generate_series(1, $2::bigint) i`, b, 2*pgstore.IdentityJournalWalk); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE walletsync_journal_counter SET n = n + $1`, 2*pgstore.IdentityJournalWalk); err != nil {
		t.Fatal(err)
	}
	bounded, theirs, _, store := positions()
	if bounded != store-pgstore.IdentityJournalWalk || bounded <= seeded || theirs != store {
		t.Fatalf("past the walk: a %d (want %d, above its seeded %d), b %d, store %d", bounded, store-pgstore.IdentityJournalWalk, seeded, theirs, store)
	}
}
