package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// Keyset pages, with localstore's rules (localstore/page.go explains them; wallet's
// PageRequest.Plan and PageFit hold the parts that are not SQL): every table is paged by
// its unique key (wallet.Table.Key), never by OFFSET, scoped to one user as BRC-40 scopes
// it (scopeFilter, shared with GetSyncChunk), in two steps: first the keys and byte charges
// of up to Rows+1 rows, then the payloads of exactly the prefix that fits.
//
// The order is SQLite's, so that both stores page a wallet identically: integers by value,
// and text (certificate_fields.fieldName) by its bytes (COLLATE "C"), as SQLite's BINARY
// collation compares; PostgreSQL's default collation would follow the locale.
//
// The byte charge is wallet.Table.Charge, computed from stored lengths before any payload
// is loaded: octet_length of text and bytea reads the length from the value's header (a
// TOASTed value is not fetched), an integer counts its decimal digits, a boolean 1 byte (a
// 0/1 in SQLite), a time the 24 bytes of wallet.TimeLayout.

// ReadPage reads one page for the view named view inside tx, a REPEATABLE READ
// transaction in the view's snapshot: the view's own transaction, or one that imported its
// snapshot (SET TRANSACTION SNAPSHOT), in this process or another. It follows
// wallet.PageReader's contract: the rows of req.Table after req.After, in key order, of
// the user req.IdentityKey (wallet.ErrNotFound when the view has no such user), within
// req.Limits, a first row that does not fit refused with a *wallet.RowTooLargeError; a
// cursor of another view or table is wallet.ErrCursorMismatch. An incremental request
// reads only the rows the journal records as changed above req.Since, and the rows those
// changes bring into the user's scope.
func ReadPage(ctx context.Context, tx pgx.Tx, view string, req wallet.PageRequest) (wallet.Page, error) {
	plan, err := req.Plan(view, true)
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read page: %w", err)
	}
	userID, err := lookupUser(ctx, tx, req.IdentityKey)
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read page %s: %w", plan.Table.Name, err)
	}
	page, err := readPage(ctx, tx, view, plan, userID, req)
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read page %s: %w", plan.Table.Name, err)
	}
	return page, nil
}

func readPage(ctx context.Context, tx pgx.Tx, view string, plan wallet.PagePlan, userID int64, req wallet.PageRequest) (wallet.Page, error) {
	t := plan.Table
	q := &query{}
	from, where := scopeFilter(q, t, userID)
	if req.Incremental {
		// The distinct changed keys drive the query, so an incremental page costs what
		// changed, not the table. (A comma join: from may hold a JOIN of its own.)
		join := "t." + quote(t.Key[0]) + " = j.k1"
		if len(t.Key) > 1 {
			join += " AND t." + quote(t.Key[1]) + " = j.k2"
		}
		from = "(" + changedKeys(q, t, userID, req.Since) + ") AS j, " + from
		where = join + " AND " + where
	}
	if plan.After != nil {
		where += " AND (" + keyColumns(t, "t.") + ") > (" + keyArgs(q, plan.After) + ")"
	}
	order := keyColumns(t, "t.")

	// Step 1: keys and charges of up to Rows+1 rows; the extra row tells whether more follow.
	filters := len(q.args)
	charge := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		charge[i] = storedLength(c, "t."+quote(c.Name))
	}
	step1 := fmt.Sprintf("SELECT %s, (2 * (%s) + %d)::bigint FROM %s WHERE %s ORDER BY %s LIMIT %s",
		keyNames(t, "t."), strings.Join(charge, " + "), 64*len(t.Columns), from, where, order, q.add(plan.Limits.Rows+1))
	rows, err := tx.Query(ctx, step1, q.args...)
	if err != nil {
		return wallet.Page{}, classify(err)
	}
	fit := wallet.NewPageFit(plan)
	err = fit.Take(rows.Next, func() ([]any, int64, error) {
		vals, err := rows.Values()
		if err != nil {
			return nil, 0, classify(err)
		}
		return vals[:len(t.Key)], vals[len(t.Key)].(int64), nil
	}, func() error { rows.Close(); return classify(rows.Err()) })
	if err != nil {
		return wallet.Page{}, err
	}
	if fit.Rows == 0 {
		return fit.Page(view, nil)
	}

	// Step 2: the payloads of exactly the rows that fit, under the same conditions without
	// the LIMIT (its parameter goes; PostgreSQL refuses a parameter a statement never uses).
	q.args = q.args[:filters]
	loaded, err := queryRows(ctx, tx, t, fmt.Sprintf("SELECT %s FROM %s WHERE %s AND (%s) <= (%s) ORDER BY %s",
		selectColumns(t, "t"), from, where, keyColumns(t, "t."), keyArgs(q, fit.Last), order), q.args...)
	if err != nil {
		return wallet.Page{}, err
	}
	return fit.Page(view, loaded)
}

// keyNames lists t's key columns, qualified by prefix, as they are selected.
func keyNames(t *wallet.Table, prefix string) string {
	out := make([]string, len(t.Key))
	for i, k := range t.Key {
		out[i] = prefix + quote(k)
	}
	return strings.Join(out, ", ")
}

// keyColumns lists t's key columns, qualified by prefix, as they are ordered and
// compared: text in byte order, as SQLite's BINARY collation has it.
func keyColumns(t *wallet.Table, prefix string) string {
	out := make([]string, len(t.Key))
	for i, k := range t.Key {
		out[i] = prefix + quote(k)
		if t.Columns[t.Col(k)].Kind == wallet.KindText {
			out[i] += ` COLLATE "C"`
		}
	}
	return strings.Join(out, ", ")
}

// keyArgs binds a key's values and returns their placeholders.
func keyArgs(q *query, key []any) string {
	out := make([]string, len(key))
	for i, v := range key {
		out[i] = q.add(v)
	}
	return strings.Join(out, ", ")
}

// storedLength is the length of one cell as wallet.Table.Charge counts it (its storedLen,
// SQLite's octet_length of the value as walletsync stores it), 0 for NULL.
func storedLength(c wallet.Column, expr string) string {
	switch c.Kind {
	case wallet.KindInt:
		return "coalesce(length(" + expr + "::text), 0)"
	case wallet.KindBool:
		return "CASE WHEN " + expr + " IS NULL THEN 0 ELSE 1 END"
	case wallet.KindTime:
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN 0 ELSE %d END", expr, len(wallet.TimeLayout))
	default: // text, JSON, bytea
		return "coalesce(octet_length(" + expr + "), 0)"
	}
}

// link is one way a change to a row of one table (from) brings rows of another (to) into an
// incremental read, because BRC-40 scopes them (or their references) through the changed
// row: localstore's links, whose comment argues that these are all, in PostgreSQL's
// dialect. Each selects the to-table's keys (k1, k2) from the journal entries of from (as
// j, the changed row's key in j.k1); every user placeholder in where is %[1]s.
type link struct {
	to, from *wallet.Table
	join     string
	keys     string
	where    string
}

var links = []link{
	{to: wallet.ProvenTxs, from: wallet.Transactions, join: `JOIN transactions AS x ON x."transactionId" = j.k1`,
		keys: `x."provenTxId", NULL`, where: `x."userId" = %[1]s AND x."provenTxId" IS NOT NULL`},
	{to: wallet.ProvenTxs, from: wallet.ProvenTxReqs, join: `JOIN proven_tx_reqs AS r ON r."provenTxReqId" = j.k1`,
		keys: `r."provenTxId", NULL`, where: `r."provenTxId" IS NOT NULL`},
	{to: wallet.ProvenTxs, from: wallet.Transactions, join: `JOIN transactions AS x ON x."transactionId" = j.k1 JOIN proven_tx_reqs AS r ON r.txid = x.txid`,
		keys: `r."provenTxId", NULL`, where: `x."userId" = %[1]s AND r."provenTxId" IS NOT NULL`},
	{to: wallet.ProvenTxReqs, from: wallet.Transactions, join: `JOIN transactions AS x ON x."transactionId" = j.k1 JOIN proven_tx_reqs AS r ON r.txid = x.txid`,
		keys: `r."provenTxReqId", NULL`, where: `x."userId" = %[1]s`},
	{to: wallet.TxLabelsMap, from: wallet.TxLabels, join: `JOIN tx_labels_map AS m ON m."txLabelId" = j.k1`,
		keys: `m."transactionId", m."txLabelId"`},
	{to: wallet.OutputTagsMap, from: wallet.OutputTags, join: `JOIN output_tags_map AS m ON m."outputTagId" = j.k1`,
		keys: `m."outputId", m."outputTagId"`},
}

// changedKeys is a SELECT of the distinct keys (k1, k2) of t's rows that an incremental read
// above since sends: those the journal records as changed, and those a change links in.
// k2 has the type of t's second key column (the journal keeps it as text). The caller
// still applies the user's scope to them.
func changedKeys(q *query, t *wallet.Table, userID, since int64) string {
	k2 := "NULL::bigint"
	if len(t.Key) > 1 {
		k2 = "j.k2"
		if t.Columns[t.Col(t.Key[1])].Kind == wallet.KindInt {
			k2 = "j.k2::bigint"
		}
	}
	parts := []string{fmt.Sprintf("SELECT DISTINCT j.k1, %s AS k2 FROM %s AS j WHERE j.tbl = %s AND j.seq > %s",
		k2, journalTable, q.add(string(t.Name)), q.add(since))}
	user := ""
	for _, l := range links {
		if l.to != t {
			continue
		}
		where := fmt.Sprintf("j.tbl = %s AND j.seq > %s", q.add(string(l.from.Name)), q.add(since))
		switch {
		case strings.Contains(l.where, "%[1]s"):
			if user == "" {
				user = q.add(userID)
			}
			where += " AND " + fmt.Sprintf(l.where, user)
		case l.where != "":
			where += " AND " + l.where
		}
		parts = append(parts, fmt.Sprintf("SELECT %s FROM %s AS j %s WHERE %s", l.keys, journalTable, l.join, where))
	}
	return strings.Join(parts, " UNION ") // DISTINCT and UNION: a row changed twice is read once
}
