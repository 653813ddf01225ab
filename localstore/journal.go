package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// The change journal. Triggers on every synced toolbox table (users and the 12 BRC-40
// entities) append the table and key of each inserted, updated or deleted row to
// walletsync_journal, inside the writer's own transaction, so writes made by any program
// on the file (the toolbox included) are recorded. SQLite has one writer at a time, so the
// AUTOINCREMENT sequence is commit-ordered: a reader that has seen everything up to seq N
// has seen every change committed before the first change above N.
//
// Entries with an empty table name are markers, not changes (see repairJournal).
//
// The journal is only trusted from complete_after on. The toolbox's migrations rebuild
// tables, and a rebuilt table loses its triggers; when Open finds a trigger missing or
// altered it reinstalls all of them and raises complete_after to the current sequence, so
// a destination whose high-water mark is older falls back to a full traversal instead of
// silently missing changes. Pruning raises pruned_through the same way.
const (
	journalTable      = ownPrefix + "journal"
	journalStateTable = ownPrefix + "journal_state"
	// journalConsumersTable held acknowledgements that syncs wrote into the wallet file; no
	// walletsync writes it any more (a push writes nothing into its source), and files in the
	// field keep the empty table, which migrations never drop.
	journalConsumersTable = ownPrefix + "journal_consumers"
	// journalTableIndex serves incremental pages, which read one table's changes above a
	// sequence.
	journalTableIndex = ownPrefix + "journal_tbl"
)

var triggerOps = []struct{ suffix, event string }{{"ins", "INSERT"}, {"upd", "UPDATE"}, {"del", "DELETE"}}

func triggerName(t *wallet.Table, suffix string) string {
	return fmt.Sprintf("%sj_%s_%s", ownPrefix, t.Name, suffix)
}

// triggerSQL is the exact CREATE TRIGGER text; SQLite stores it verbatim in sqlite_master,
// which is how Open tells an intact trigger from a missing or altered one.
func triggerSQL(t *wallet.Table, suffix, event string) string {
	keys := func(rec string) string {
		k2 := "NULL"
		if len(t.Key) > 1 {
			k2 = rec + "." + quoteIdent(t.Key[1])
		}
		return rec + "." + quoteIdent(t.Key[0]) + ", " + k2
	}
	insert := func(rec, op string) string {
		return fmt.Sprintf("INSERT INTO %s (tbl, k1, k2, op) VALUES ('%s', %s, '%s');", journalTable, t.Name, keys(rec), op)
	}
	var body string
	switch event {
	case "INSERT":
		body = insert("NEW", "i")
	case "DELETE":
		body = insert("OLD", "d")
	case "UPDATE":
		// A key change (rare, but legal SQL) retires the old key as a delete.
		var changed []string
		for _, k := range t.Key {
			changed = append(changed, fmt.Sprintf("OLD.%s IS NOT NEW.%s", quoteIdent(k), quoteIdent(k)))
		}
		body = fmt.Sprintf("INSERT INTO %s (tbl, k1, k2, op) SELECT '%s', %s, 'd' WHERE %s; ",
			journalTable, t.Name, keys("OLD"), strings.Join(changed, " OR ")) + insert("NEW", "u")
	}
	return fmt.Sprintf("CREATE TRIGGER %s AFTER %s ON %s BEGIN %s END", triggerName(t, suffix), event, quoteIdent(string(t.Name)), body)
}

func journalTriggersDDL() string {
	var b strings.Builder
	for _, t := range wallet.SyncOrder {
		for _, op := range triggerOps {
			b.WriteString(triggerSQL(t, op.suffix, op.event))
			b.WriteString(";\n")
		}
	}
	return b.String()
}

func journalTriggerObjects() map[string]string {
	out := map[string]string{}
	for _, t := range wallet.SyncOrder {
		for _, op := range triggerOps {
			out[triggerName(t, op.suffix)] = "trigger"
		}
	}
	return out
}

// JournalState describes how far the change journal can be trusted (wallet.JournalBounds,
// whose CoversSince it has) and how many entries it keeps.
type JournalState struct {
	wallet.JournalBounds
	// Entries is the number of entries kept.
	Entries int64 `json:"entries"`
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readJournalState(ctx context.Context, q queryer) (JournalState, error) {
	var j JournalState
	err := q.QueryRowContext(ctx, `SELECT
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = '`+journalTable+`'), 0),
		complete_after, pruned_through, (SELECT count(*) FROM `+journalTable+`)
		FROM `+journalStateTable).Scan(&j.HighWater, &j.CompleteAfter, &j.PrunedThrough, &j.Entries)
	if err != nil {
		return j, fmt.Errorf("read journal state: %w", classify(err))
	}
	return j, nil
}

// JournalState returns the journal's current bounds. It fails on a store opened read-only
// whose file has no walletsync schema.
func (s *Store) JournalState(ctx context.Context) (JournalState, error) {
	return readJournalState(ctx, s.readDB)
}

// repairJournal puts back what a toolbox table rebuild drops: the scope index, and the
// journal triggers when any is missing or altered, after which the journal is marked
// complete only from the current sequence on.
func (s *Store) repairJournal(ctx context.Context) (reinstalled bool, err error) {
	var hasIndex int
	if err := s.writeDB.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?", scopeIndex).Scan(&hasIndex); err != nil {
		return false, fmt.Errorf("read scope index: %w", classify(err))
	}
	if hasIndex == 0 {
		if _, err := s.writeDB.ExecContext(ctx, scopeIndexDDL); err != nil {
			return false, fmt.Errorf("recreate scope index: %w", classify(err))
		}
	}
	want := journalTriggerObjects()
	have := map[string]string{}
	rows, err := s.writeDB.QueryContext(ctx, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '"+ownPrefix+"%'")
	if err != nil {
		return false, fmt.Errorf("read journal triggers: %w", classify(err))
	}
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			rows.Close()
			return false, fmt.Errorf("read journal triggers: %w", classify(err))
		}
		have[name] = text
	}
	rows.Close()
	intact := len(have) == len(want)
	for _, t := range wallet.SyncOrder {
		for _, op := range triggerOps {
			if have[triggerName(t, op.suffix)] != triggerSQL(t, op.suffix, op.event) {
				intact = false
			}
		}
	}
	if intact {
		return false, nil
	}
	err = s.quietWriteTx(ctx, func(tx *sql.Tx) error {
		for name := range have {
			if _, err := tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+quoteIdent(name)); err != nil {
				return classify(err)
			}
		}
		if _, err := tx.ExecContext(ctx, journalTriggersDDL()); err != nil {
			return classify(err)
		}
		// Writes made while the triggers were gone were not recorded, and they may be newer
		// than a destination's high-water mark. A marker entry takes the next sequence
		// number, and only what follows it is trusted: every destination at or below the
		// marker traverses again.
		res, err := tx.ExecContext(ctx, "INSERT INTO "+journalTable+" (tbl, k1, k2, op) VALUES ('', 0, NULL, 'r')")
		if err != nil {
			return classify(err)
		}
		marker, err := res.LastInsertId()
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE "+journalStateTable+" SET complete_after = ?", marker)
		return classify(err)
	})
	if err != nil {
		return false, fmt.Errorf("reinstall journal triggers: %w", err)
	}
	s.log.Warn("journal triggers were missing or altered and have been reinstalled; destinations will do one full traversal",
		"path", s.path, "found", len(have), "want", len(want))
	return true, nil
}

// PruneJournal deletes at most limit of the oldest journal entries at or below through,
// in one short write transaction, and raises pruned_through to the last entry it deleted,
// so that a destination whose high-water mark lies below it does a full traversal instead
// of missing changes (JournalState.CoversSince). It returns how many entries went and
// whether entries at or below through remain. With nothing to delete it writes nothing: it
// looks first on a read connection and takes the write lock only for a real deletion.
//
// Pruning is walletsync's one routine write into a wallet file that a sync does not ask
// for, and every write into a file the wallet app uses can fail an app transaction that
// read before it and writes after it; call it through MaintainJournal, which writes only
// while the wallet is quiet.
func (s *Store) PruneJournal(ctx context.Context, through int64, limit int) (deleted int64, more bool, err error) {
	if limit < 1 || through < 0 {
		return 0, false, fmt.Errorf("prune journal through %d, %d entries: %w", through, limit, wallet.ErrInvalidArgument)
	}
	if s.writeDB == nil {
		return 0, false, fmt.Errorf("prune journal %s: %w", s.path, wallet.ErrReadOnly)
	}
	last, err := lastPrunable(ctx, s.readDB, through, limit)
	if err != nil || last == 0 {
		return 0, false, err
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		// Again inside the transaction: another walletsync of this file may have pruned
		// meanwhile (the read above took no lock).
		if last, err = lastPrunable(ctx, tx, through, limit); err != nil || last == 0 {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM "+journalTable+" WHERE seq <= ?", last)
		if err != nil {
			return classify(err)
		}
		deleted, _ = res.RowsAffected()
		if _, err = tx.ExecContext(ctx, "UPDATE "+journalStateTable+" SET pruned_through = max(pruned_through, ?)", last); err != nil {
			return classify(err)
		}
		return classify(tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+journalTable+" WHERE seq > ? AND seq <= ?)", last, through).Scan(&more))
	})
	if err != nil {
		return 0, false, fmt.Errorf("prune journal: %w", err)
	}
	return deleted, more, nil
}

// lastPrunable returns the sequence of the limit-th oldest entry at or below through (or of
// the last such entry when fewer remain), 0 when there is none: deleting everything at or
// below it deletes at most limit entries.
func lastPrunable(ctx context.Context, q queryer, through int64, limit int) (int64, error) {
	var last int64
	err := q.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM (SELECT seq FROM "+journalTable+" WHERE seq <= ? ORDER BY seq LIMIT ?)", through, limit).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("read prunable journal entries: %w", classify(err))
	}
	return last, nil
}

// quoteIdent quotes an SQL identifier; toolbox columns include keywords such as "index".
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// scopeIndex lets a snapshot view find the user of a proof by index; BRC-40 scopes proofs
// through transactions.provenTxId, which the toolbox does not index. It is walletsync's
// object on a toolbox table: it changes no column, and the toolbox never sees it. A toolbox
// rebuild of transactions drops it with the triggers, and Open puts both back.
const (
	scopeIndex    = ownPrefix + "transactions_proven"
	scopeIndexDDL = "CREATE INDEX " + scopeIndex + " ON transactions (provenTxId, userId)"
)

// identityJournalWalk bounds the journal entries of one table that IdentityHighWater
// looks at: 10,000 entries are a few milliseconds of index walk (1,000,000 took 5 s on the
// development machine), so a view/open costs at most 13 such walks however busy the other
// identities have been since the caller last wrote.
const identityJournalWalk = 10_000

// IdentityHighWater returns the journal position of identityKey's rows as of the snapshot:
// the last position at which a row in the identity's BRC-40 scope changed, raised to the
// journal's trusted floor (complete_after, pruned_through), or that floor alone when the
// snapshot holds no user for identityKey. Unlike Journal's store-wide high-water mark it
// does not move when another identity writes, so a multi-tenant server can hand it to a
// client without telling it anything of the others' activity; and it serves the same
// syncs: every change of the identity's rows committed after the snapshot is above it (it
// is at most the store's mark), none in the snapshot is, so an incremental read above it
// sends nothing that one above the store's mark would not, and it moves whenever the
// identity's rows change. It is one of the view's reads (a concurrent one is refused).
//
// Its cost is bounded: it looks at the newest identityJournalWalk entries of each table.
// When the identity's last change to a table is older than those, the position is that of
// the oldest entry looked at, less one: still above every change of the identity's and
// below the store's mark, so every rule above holds, but it then follows other
// identities' writes to that table, coarsely, until the identity writes again. Without a
// walletsync journal it returns 0.
func (v *Snapshot) IdentityHighWater(ctx context.Context, identityKey string) (int64, error) {
	if v.journal == nil {
		return 0, nil
	}
	floor := max(v.journal.CompleteAfter, v.journal.PrunedThrough)
	hw := floor
	err := v.read(func() error {
		qctx, stop := mergeCancel(ctx, v.ctx)
		defer stop()
		userID, err := v.userID(qctx, identityKey)
		if errors.Is(err, wallet.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, t := range wallet.SyncOrder {
			from, where, args := scopeFilter(t, userID)
			join := "t." + quoteIdent(t.Key[0]) + " = j.k1"
			if len(t.Key) > 1 {
				join += " AND t." + quoteIdent(t.Key[1]) + " = j.k2"
			}
			// The newest entries of t (its (tbl, seq) index, walked down), the last of
			// them that is the identity's, and how far down the walk went.
			q := fmt.Sprintf(`WITH w AS (SELECT seq, k1, k2 FROM %s WHERE tbl = ? AND seq > ? ORDER BY seq DESC LIMIT ?)
				SELECT coalesce((SELECT max(j.seq) FROM w AS j CROSS JOIN %s WHERE %s AND %s), 0),
					coalesce((SELECT min(seq) FROM w), 0), (SELECT count(*) FROM w)`, journalTable, from, join, where)
			var mine, oldest, walked int64
			err := v.tx.QueryRowContext(qctx, q, append([]any{string(t.Name), hw, identityJournalWalk}, args...)...).Scan(&mine, &oldest, &walked)
			switch {
			case err != nil:
				return fmt.Errorf("read the journal position of %s: %w", t.Name, classify(err))
			case mine > 0:
				hw = max(hw, mine)
			case walked == identityJournalWalk:
				hw = max(hw, oldest-1)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read identity journal position: %w", err)
	}
	return hw, nil
}
