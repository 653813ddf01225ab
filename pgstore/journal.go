package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// The change journal, in commit order. Triggers on every synced table (users and the 12
// BRC-40 entities, wallet.SyncOrder) append the table, key and kind of each inserted,
// updated or deleted row to walletsync_journal inside the writer's own transaction, so
// every write is recorded, whichever process or wire made it. Incremental pages read the
// keys recorded above a destination's high-water mark (see ReadPage).
//
// Why a counter row and not a sequence. A reader keeps the journal position it has seen
// (a view's high-water mark) and later asks for the changes above it; that is only sound
// if no change can become visible later with a position at or below a mark already seen.
// PostgreSQL sequences do not give that: a transaction that took 10 may commit after one
// that took 11, and a reader that saw 11 would skip 10 forever. So a transaction takes its
// position from the one row of walletsync_journal_counter (UPDATE ... SET n = n + 1
// RETURNING n), and the row lock that UPDATE takes is held until the transaction ends.
// Hence, for any two writers A and B that both append: if A took the lock first, A
// committed (or rolled back, undoing its update) before B could take it, and B, in READ
// COMMITTED, then reads A's committed n and takes a larger one. Positions are therefore
// assigned in commit order: a snapshot that sees the counter at N sees every transaction
// with a position at or below N and none above it, and every transaction that commits
// after the snapshot has a position above N. The counter row's visible n is the view's
// high-water mark.
//
// The cost is that writers of synced tables take turns between their first journal
// append and their commit. Two choices keep that window short:
//   - the triggers are deferred constraint triggers (DEFERRABLE INITIALLY DEFERRED), so
//     they run at COMMIT, after all of a transaction's own work: the counter is held only
//     for the appends and the commit itself, not while a page is merged;
//   - a transaction takes one position for all its changes (kept in a transaction-local
//     setting, which a rolled-back savepoint undoes together with the counter update):
//     one counter update per transaction, not one per row, and a reader sees all of a
//     transaction's changes or none, at one position.
//
// A writer in REPEATABLE READ or SERIALIZABLE that reaches its commit after another
// journal writer committed fails with a serialization failure (SQLSTATE 40001) on the
// counter row; pgstore writes in READ COMMITTED, and Store.tx retries a 40001 anyway.
//
// complete_after (in the counter row) is the position from which the journal is trusted:
// 0 here, since no destination can hold a high-water mark of this journal from before the
// migration that created it; raising it sends every destination at or below it through a
// full traversal (wallet.JournalBounds.CoversSince).
const (
	journalTable   = "walletsync_journal"
	journalCounter = "walletsync_journal_counter"
	// journalPosSetting holds the position of the current transaction once it has one.
	journalPosSetting = "walletsync.journal_pos"
)

// journalTriggerName is the trigger (and trigger function) that journals t.
func journalTriggerName(t *wallet.Table) string { return "walletsync_j_" + string(t.Name) }

// journalDDL is the migration that creates the journal: the table, the counter row, the
// position function, one trigger per synced table, and the indexes that keyset pages walk
// (each table's paging key, behind the user's id where the scope is the row's own userId;
// the text key column in byte order, as SQLite orders it).
func journalDDL() string {
	var b strings.Builder
	b.WriteString(`CREATE TABLE ` + journalTable + ` (
	seq bigint NOT NULL,
	tbl text NOT NULL,
	k1 bigint NOT NULL,
	k2 text,
	op text NOT NULL
);
CREATE INDEX walletsync_journal_tbl ON ` + journalTable + ` (tbl, seq);
CREATE TABLE ` + journalCounter + ` (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	n bigint NOT NULL,
	complete_after bigint NOT NULL
);
INSERT INTO ` + journalCounter + ` (n, complete_after) VALUES (0, 0);
CREATE FUNCTION walletsync_journal_pos() RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
	pos bigint := nullif(current_setting('` + journalPosSetting + `', true), '')::bigint;
BEGIN
	IF pos IS NULL THEN
		UPDATE ` + journalCounter + ` SET n = n + 1 RETURNING n INTO pos;
		PERFORM set_config('` + journalPosSetting + `', pos::text, true);
	END IF;
	RETURN pos;
END $f$;
`)
	for _, t := range wallet.SyncOrder {
		b.WriteString(journalTriggerDDL(t))
	}
	for _, t := range wallet.AllTables {
		key := keyColumns(t, "")
		fmt.Fprintf(&b, "CREATE INDEX %s ON %s (%s);\n", quote(string(t.Name)+"_page"), quote(string(t.Name)), key)
		if t.Scope == wallet.ScopeUserID {
			fmt.Fprintf(&b, "CREATE INDEX %s ON %s (\"userId\", %s);\n", quote(string(t.Name)+"_page_user"), quote(string(t.Name)), key)
		}
	}
	return b.String()
}

// journalTriggerDDL is t's trigger function and its deferred trigger. A key change (rare,
// but legal SQL) retires the old key as a delete.
func journalTriggerDDL(t *wallet.Table) string {
	keys := func(rec string) string {
		k2 := "NULL"
		if len(t.Key) > 1 {
			k2 = rec + "." + quote(t.Key[1]) + "::text"
		}
		return rec + "." + quote(t.Key[0]) + ", " + k2
	}
	var changed []string
	for _, k := range t.Key {
		changed = append(changed, fmt.Sprintf("OLD.%s IS DISTINCT FROM NEW.%s", quote(k), quote(k)))
	}
	name := journalTriggerName(t)
	ins := "INSERT INTO " + journalTable + " (seq, tbl, k1, k2, op) VALUES (pos, '" + string(t.Name) + "', "
	return fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
	pos bigint := walletsync_journal_pos();
BEGIN
	IF TG_OP = 'DELETE' THEN
		%[3]s%[4]s, 'd');
	ELSIF TG_OP = 'INSERT' THEN
		%[3]s%[5]s, 'i');
	ELSE
		IF %[2]s THEN
			%[3]s%[4]s, 'd');
		END IF;
		%[3]s%[5]s, 'u');
	END IF;
	RETURN NULL;
END $f$;
CREATE CONSTRAINT TRIGGER %[1]s AFTER INSERT OR UPDATE OR DELETE ON %[6]s
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION %[1]s();
`, name, strings.Join(changed, " OR "), ins, keys("OLD"), keys("NEW"), quote(string(t.Name)))
}

// ReadJournal returns the journal's bounds as tx sees them: for a view's transaction, the
// view's high-water mark (see the commit-order argument above). Any transaction in the
// view's snapshot (one that imported it with SET TRANSACTION SNAPSHOT) reads the same.
func ReadJournal(ctx context.Context, tx pgx.Tx) (wallet.JournalBounds, error) {
	var j wallet.JournalBounds
	if err := tx.QueryRow(ctx, "SELECT n, complete_after FROM "+journalCounter).Scan(&j.HighWater, &j.CompleteAfter); err != nil {
		return j, fmt.Errorf("read journal bounds: %w", classify(err))
	}
	return j, nil
}

// identityJournalWalk bounds the journal entries of one table that IdentityHighWater looks
// at, as localstore's does.
const identityJournalWalk = 10_000

// IdentityHighWater returns the journal position of identityKey's rows as tx sees them,
// within the bounds j that tx read (ReadJournal): the last position at which a row in the
// identity's BRC-40 scope changed, raised to j's trusted floor (CompleteAfter,
// PrunedThrough), or that floor alone when tx holds no user for identityKey. It is
// localstore's Snapshot.IdentityHighWater on PostgreSQL, whose notes say why it serves the
// same syncs as the store-wide mark, and how its walk of the journal is bounded (the
// newest identityJournalWalk entries of each table; past them, the walk's bound): unlike
// j.HighWater it does not move when another identity writes.
func IdentityHighWater(ctx context.Context, tx pgx.Tx, identityKey string, j wallet.JournalBounds) (int64, error) {
	hw := max(j.CompleteAfter, j.PrunedThrough)
	userID, err := lookupUser(ctx, tx, identityKey)
	if errors.Is(err, wallet.ErrNotFound) {
		return hw, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read identity journal position: %w", err)
	}
	for _, t := range wallet.SyncOrder {
		q := &query{}
		from, where := scopeFilter(q, t, userID)
		join := "t." + quote(t.Key[0]) + " = j.k1"
		if len(t.Key) > 1 {
			k2 := "j.k2"
			if t.Columns[t.Col(t.Key[1])].Kind == wallet.KindInt {
				k2 = "j.k2::bigint"
			}
			join += " AND t." + quote(t.Key[1]) + " = " + k2
		}
		// The newest entries of t (its (tbl, seq) index, walked down), the last of them
		// that is the identity's, and how far down the walk went. (The window's own
		// parameters come first: scopeFilter numbered its own already.)
		window := fmt.Sprintf("SELECT seq, k1, k2 FROM %s WHERE tbl = %s AND seq > %s ORDER BY seq DESC LIMIT %s",
			journalTable, q.add(string(t.Name)), q.add(hw), q.add(identityJournalWalk))
		stmt := fmt.Sprintf(`WITH w AS MATERIALIZED (%s)
			SELECT coalesce((SELECT max(j.seq) FROM w AS j, %s WHERE %s AND %s), 0),
				coalesce((SELECT min(seq) FROM w), 0), (SELECT count(*) FROM w)`, window, from, join, where)
		var mine, oldest, walked int64
		if err := tx.QueryRow(ctx, stmt, q.args...).Scan(&mine, &oldest, &walked); err != nil {
			return 0, fmt.Errorf("read the journal position of %s: %w", t.Name, classify(err))
		}
		switch {
		case mine > 0:
			hw = max(hw, mine)
		case walked == identityJournalWalk:
			hw = max(hw, oldest-1)
		}
	}
	return hw, nil
}
