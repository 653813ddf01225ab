package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"walletsync/wallet"
)

// The undo log of a merge. A merge commits page by page, so a merge that stops (a crash, a
// conflict the preview could not foresee, a person who changes their mind) leaves part of a
// backup in the wallet. Every page commit of an import session records, in the same
// transaction, what it wrote to the toolbox's tables: the key of each row it inserted, and
// the whole previous row (exact SQLite values, copied by SQL, never through Go types) of
// each row it updated, and before its first write the AUTOINCREMENT counters. AbandonImport
// replays the log backwards in one transaction, which leaves the toolbox's tables exactly as
// they were before the merge started; CompleteMerge drops the log with the import done.
//
// The log's rows are plain SQLite rows without column types, so a value goes back into its
// column with the type and bytes it came out with. undoWidth value columns hold the widest
// toolbox table (outputs, 25 columns); undoColumns refuses a wider one.
const (
	undoTable = ownPrefix + "import_undo"
	undoIndex = ownPrefix + "import_undo_key"
	undoWidth = 32
)

// The undo log's operations: op of each row.
const (
	undoInsert   = "i" // a row the merge inserted: k1, k2 its key
	undoUpdate   = "u" // a row the merge updated: k1, k2 its key, v1... its previous columns
	undoSequence = "s" // tbl's sqlite_sequence value before the merge: k1
	undoBegin    = "b" // the counters are recorded
	undoJournal  = "j" // the change journal entries of one merge page: k1 to k2
)

func undoDDL() string {
	vals := make([]string, undoWidth)
	for i := range vals {
		vals[i] = fmt.Sprintf("v%d", i+1)
	}
	return `
CREATE TABLE ` + undoTable + ` (
	digest TEXT NOT NULL,
	tbl TEXT NOT NULL,
	op TEXT NOT NULL,
	k1, k2, ` + strings.Join(vals, ", ") + `
);
CREATE INDEX ` + undoIndex + ` ON ` + undoTable + ` (digest, tbl, op, k1, k2);
`
}

// undoLog records what the merge of the import digest writes (see the top of this file).
// A nil *undoLog records nothing: a merge that is no import.
type undoLog struct {
	digest string
	begun  bool
	// pageStart is the journal's sequence when the page's transaction began.
	pageStart int64
}

// valueColumns returns t's columns but its key, and the undo log's columns that hold them.
func valueColumns(t *wallet.Table) (cols, slots []string, err error) {
	for _, c := range t.Columns {
		if !slices.Contains(t.Key, c.Name) {
			cols = append(cols, c.Name)
			slots = append(slots, fmt.Sprintf("v%d", len(slots)+1))
		}
	}
	if len(cols) > undoWidth {
		return nil, nil, fmt.Errorf("undo log: %s has %d columns, more than %d: %w", t.Name, len(cols), undoWidth, wallet.ErrUnknownSchema)
	}
	return cols, slots, nil
}

// keyIn is the condition that matches a row of t whose key is among the keys of the log's
// rows of op for the import and table bound to its two parameters: it drives the lookups
// from the log (t's primary key or unique index), never a scan of t.
func keyIn(t *wallet.Table, op string) string {
	key, sel := quoteIdent(t.Key[0]), "k1"
	if len(t.Key) > 1 {
		key, sel = "("+key+", "+quoteIdent(t.Key[1])+")", "k1, k2"
	}
	return fmt.Sprintf("%s IN (SELECT %s FROM %s WHERE digest = ? AND tbl = ? AND op = '%s')", key, sel, undoTable, op)
}

// keyMatch is the condition that matches the log's row u to the row of t being written.
func keyMatch(t *wallet.Table) string {
	cond := "u.k1 = " + quoteIdent(string(t.Name)) + "." + quoteIdent(t.Key[0])
	if len(t.Key) > 1 {
		cond += " AND u.k2 = " + quoteIdent(string(t.Name)) + "." + quoteIdent(t.Key[1])
	}
	return cond
}

// begin records the AUTOINCREMENT counters of the toolbox's tables, once per import, before
// the first write.
func (u *undoLog) begin(ctx context.Context, tx *sql.Tx) error {
	if u == nil {
		return nil
	}
	var err error
	if u.pageStart, err = journalSeq(ctx, tx); err != nil {
		return err
	}
	if u.begun {
		return nil
	}
	var begun bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+undoTable+" WHERE digest = ? AND tbl = '' AND op = ?)", u.digest, undoBegin).Scan(&begun); err != nil {
		return classify(err)
	}
	if !begun {
		names := tableNames(wallet.AllTables)
		args := []any{u.digest, undoSequence}
		for _, n := range names {
			args = append(args, n)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+undoTable+" (digest, tbl, op, k1) SELECT ?, name, ?, seq FROM sqlite_sequence WHERE name IN ("+placeholders(len(names))+")", args...); err != nil {
			return fmt.Errorf("undo log: %w", classify(err))
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+undoTable+" (digest, tbl, op) VALUES (?, '', ?)", u.digest, undoBegin); err != nil {
			return fmt.Errorf("undo log: %w", classify(err))
		}
	}
	u.begun = true
	return nil
}

// journalSeq returns the change journal's last sequence number (AUTOINCREMENT keeps it
// through pruning).
func journalSeq(ctx context.Context, tx *sql.Tx) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = '"+journalTable+"'), 0)").Scan(&seq)
	return seq, classify(err)
}

// journalled records that the journal entries since begin, up to the current sequence,
// are the page's own. SQLite has one writer, so a page's entries are one unbroken range;
// any other entry after the merge began was written by someone else (see foreignWrites).
func (u *undoLog) journalled(ctx context.Context, tx *sql.Tx) error {
	if u == nil {
		return nil
	}
	after, err := journalSeq(ctx, tx)
	if err != nil || after == u.pageStart {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO "+undoTable+" (digest, tbl, op, k1, k2) VALUES (?, '', ?, ?, ?)", u.digest, undoJournal, u.pageStart+1, after)
	return classify(err)
}

// foreignWrites counts the journal entries written by others than the merge of digest
// since its first page, which replaying its undo log could overwrite or orphan (the wallet
// app writes the file from its own process; walletsync's own writers are refused while a
// merge is unfinished). It returns -1 when the journal cannot tell: it was pruned or
// rebuilt after the merge began.
func foreignWrites(ctx context.Context, tx *sql.Tx, digest string) (int64, error) {
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(k1) FROM "+undoTable+" WHERE digest = ? AND tbl = '' AND op = ?", digest, undoJournal).Scan(&first); err != nil {
		return 0, classify(err)
	}
	if !first.Valid {
		return 0, nil // no page wrote anything
	}
	j, err := readJournalState(ctx, tx)
	if err != nil {
		return 0, err
	}
	if j.CompleteAfter >= first.Int64 || j.PrunedThrough >= first.Int64 {
		return -1, nil
	}
	var n int64
	err = tx.QueryRowContext(ctx, "SELECT count(*) FROM "+journalTable+" AS j WHERE j.seq >= ? AND j.tbl <> '' AND NOT EXISTS (SELECT 1 FROM "+undoTable+
		" AS u WHERE u.digest = ? AND u.tbl = '' AND u.op = ? AND j.seq BETWEEN u.k1 AND u.k2)", first.Int64, digest, undoJournal).Scan(&n)
	return n, classify(err)
}

// inserted records a row of t the merge inserted: local as written, id its new id (0 for
// the tables keyed by their columns).
func (u *undoLog) inserted(m *merger, t *wallet.Table, local wallet.Row, id int64) error {
	if u == nil {
		return nil
	}
	k := []any{id, nil}
	if t.ID == "" {
		k = []any{wallet.SQLValue(local[t.Col(t.Key[0])]), wallet.SQLValue(local[t.Col(t.Key[1])])}
	}
	st, err := m.stmt("INSERT INTO " + undoTable + " (digest, tbl, op, k1, k2) VALUES (?, ?, '" + undoInsert + "', ?, ?)")
	if err != nil {
		return err
	}
	if _, err := st.ExecContext(m.ctx, u.digest, string(t.Name), k[0], k[1]); err != nil {
		return fmt.Errorf("undo log: %w", classify(err))
	}
	return nil
}

// updated records the row of t that r is about to be written over, as it is stored now.
func (u *undoLog) updated(m *merger, t *wallet.Table, r wallet.Row) error {
	if u == nil {
		return nil
	}
	cols, slots, err := valueColumns(t)
	if err != nil {
		return err
	}
	k2, where := "NULL", quoteIdent(t.Key[0])+" = ?"
	args := []any{u.digest, string(t.Name), wallet.SQLValue(r[t.Col(t.Key[0])])}
	if len(t.Key) > 1 {
		k2, where = quoteIdent(t.Key[1]), where+" AND "+quoteIdent(t.Key[1])+" = ?"
		args = append(args, wallet.SQLValue(r[t.Col(t.Key[1])]))
	}
	st, err := m.stmt(fmt.Sprintf("INSERT INTO %s (digest, tbl, op, k1, k2, %s) SELECT ?, ?, '%s', %s, %s, %s FROM %s WHERE %s",
		undoTable, strings.Join(slots, ", "), undoUpdate, quoteIdent(t.Key[0]), k2, joinQuoted("", cols), quoteIdent(string(t.Name)), where))
	if err != nil {
		return err
	}
	if _, err := st.ExecContext(m.ctx, args...); err != nil {
		return fmt.Errorf("undo log: %w", classify(err))
	}
	return nil
}

// insertedUser records the user a commit created, with its default basket.
func (u *undoLog) insertedUser(ctx context.Context, tx *sql.Tx, userID int64) error {
	if u == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO "+undoTable+" (digest, tbl, op, k1) VALUES (?, 'users', ?, ?); "+
		"INSERT INTO "+undoTable+" (digest, tbl, op, k1) SELECT ?, 'output_baskets', ?, basketId FROM output_baskets WHERE userId = ?",
		u.digest, undoInsert, userID, u.digest, undoInsert, userID)
	if err != nil {
		return fmt.Errorf("undo log: %w", classify(err))
	}
	return nil
}

// replayUndo takes back, in tx, what the merge of the import digest wrote: the updated rows
// get their earliest recorded previous values, the inserted rows go (the children first),
// and the AUTOINCREMENT counters go back to where they were (never below a row that stays).
func replayUndo(ctx context.Context, tx *sql.Tx, digest string) error {
	for _, t := range slices.Backward(wallet.SyncOrder) {
		cols, slots, err := valueColumns(t)
		if err != nil {
			return err
		}
		// The earliest record of a row holds its value from before the merge.
		q := fmt.Sprintf("UPDATE %s SET (%s) = (SELECT %s FROM %s WHERE rowid = (SELECT min(u.rowid) FROM %s AS u WHERE u.digest = ? AND u.tbl = ? AND u.op = '%s' AND %s)) WHERE %s",
			quoteIdent(string(t.Name)), joinQuoted("", cols), strings.Join(slots, ", "), undoTable, undoTable, undoUpdate, keyMatch(t), keyIn(t, undoUpdate))
		if _, err := tx.ExecContext(ctx, q, digest, string(t.Name), digest, string(t.Name)); err != nil {
			return fmt.Errorf("undo the updates of %s: %w", t.Name, classify(err))
		}
	}
	for _, t := range slices.Backward(wallet.SyncOrder) {
		q := fmt.Sprintf("DELETE FROM %s WHERE %s", quoteIdent(string(t.Name)), keyIn(t, undoInsert))
		if _, err := tx.ExecContext(ctx, q, digest, string(t.Name)); err != nil {
			return fmt.Errorf("undo the inserts into %s: %w", t.Name, classify(err))
		}
	}
	var begun bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+undoTable+" WHERE digest = ? AND tbl = '' AND op = ?)", digest, undoBegin).Scan(&begun); err != nil {
		return classify(err)
	}
	if begun {
		for _, t := range wallet.AllTables {
			if t.ID == "" {
				continue
			}
			var saved sql.NullInt64
			err := tx.QueryRowContext(ctx, "SELECT k1 FROM "+undoTable+" WHERE digest = ? AND tbl = ? AND op = ?", digest, string(t.Name), undoSequence).Scan(&saved)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return classify(err)
			}
			var top sql.NullInt64
			if err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s", quoteIdent(t.ID), quoteIdent(string(t.Name)))).Scan(&top); err != nil {
				return classify(err)
			}
			if !saved.Valid && !top.Valid {
				_, err = tx.ExecContext(ctx, "DELETE FROM sqlite_sequence WHERE name = ?", string(t.Name))
			} else {
				_, err = tx.ExecContext(ctx, "UPDATE sqlite_sequence SET seq = ? WHERE name = ?", max(saved.Int64, top.Int64), string(t.Name))
			}
			if err != nil {
				return fmt.Errorf("restore the counter of %s: %w", t.Name, classify(err))
			}
		}
	}
	return dropUndo(ctx, tx, digest)
}

// dropUndo forgets the undo log of the import digest.
func dropUndo(ctx context.Context, tx *sql.Tx, digest string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM "+undoTable+" WHERE digest = ?", digest)
	return classify(err)
}
