package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// Keyset pages. Every table is paged by its unique key, the last key column breaking ties,
// never by OFFSET: a page costs the same wherever it starts, and rows inserted or deleted
// by writers can neither shift a page nor be skipped (the view is a snapshot anyway).
//
// A page is read in two steps inside the view's transaction. The first reads only keys and
// the byte charge of each row, computed by SQLite from stored lengths (octet_length reads
// a value's header, not its payload), and decides how many rows fit both limits. The second
// loads the payloads of exactly that prefix. So a 30 MiB row costs nothing to skip over
// when it does not fit, and a page never loads more than its budget.

// ReadPage returns the next page of req.Table for the user req.IdentityKey, after
// req.After, within req.Limits (zero fields take the defaults). A first row whose charge
// exceeds the byte limit is refused with a *wallet.RowTooLargeError reporting its charge,
// never skipped: read it alone with Limits{Rows: 1, Bytes: charge} (allowed up to
// wallet.MaxFrameBytes). A cursor from another view or table is refused with
// wallet.ErrCursorMismatch; an unknown identity with wallet.ErrNotFound.
func (v *Snapshot) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	plan, err := req.Plan(v.id, v.journal != nil)
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read page: %w", err)
	}
	var page wallet.Page
	err = v.read(func() error {
		// Queries run under the view's context too, so a close or an expiry interrupts them.
		qctx, stop := mergeCancel(ctx, v.ctx)
		defer stop()
		userID, err := v.userID(qctx, req.IdentityKey)
		if err != nil {
			return err
		}
		page, err = v.readPage(qctx, plan, userID, req)
		return err
	})
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read page %s: %w", plan.Table.Name, err)
	}
	return page, nil
}

func (v *Snapshot) readPage(ctx context.Context, plan wallet.PagePlan, userID int64, req wallet.PageRequest) (wallet.Page, error) {
	t := plan.Table
	from, where, args := scopeFilter(t, userID)
	if req.Incremental {
		// Only rows the journal records as changed above Since, and the rows those changes
		// link in (changedKeys): the distinct keys drive the query, so an incremental page
		// costs what changed, not the table.
		join := "t." + quoteIdent(t.Key[0]) + " = j.k1"
		if len(t.Key) > 1 {
			join += " AND t." + quoteIdent(t.Key[1]) + " = j.k2"
		}
		keys, keyArgs := changedKeys(t, userID, req.Since)
		from = "(" + keys + ") AS j CROSS JOIN " + from
		where = join + " AND " + where
		args = append(keyArgs, args...)
	}
	if plan.After != nil {
		w, a := keyAfter(t.Key, plan.After)
		where += " AND " + w
		args = append(args, a...)
	}
	order := joinQuoted("t.", t.Key)

	// Step 1: keys and charges of up to Rows+1 rows; the extra row tells whether more follow.
	charge := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		charge[i] = fmt.Sprintf("coalesce(octet_length(t.%s), 0)", quoteIdent(c.Name))
	}
	q := fmt.Sprintf("SELECT %s, 2 * (%s) + %d FROM %s WHERE %s ORDER BY %s LIMIT ?",
		joinQuoted("t.", t.Key), strings.Join(charge, " + "),
		64*len(t.Columns), from, where, order)
	rows, err := v.query(ctx, q, append(args, plan.Limits.Rows+1)...)
	if err != nil {
		return wallet.Page{}, classify(err)
	}
	fit := wallet.NewPageFit(plan)
	err = fit.Take(rows.Next, func() ([]any, int64, error) {
		key := make([]any, len(t.Key))
		dst := make([]any, len(key)+1)
		for i := range key {
			dst[i] = &key[i]
		}
		var rowCharge int64
		dst[len(key)] = &rowCharge
		return key, rowCharge, classify(rows.Scan(dst...))
	}, func() error { rows.Close(); return classify(rows.Err()) })
	if err != nil {
		return wallet.Page{}, err
	}
	if fit.Rows == 0 {
		return fit.Page(v.id, nil)
	}

	// Step 2: the payloads of exactly the rows that fit.
	w, a := keyAtMost(t.Key, fit.Last)
	q = fmt.Sprintf("SELECT %s FROM %s WHERE %s AND %s ORDER BY %s",
		joinQuoted("t.", t.ColumnNames()), from, where, w, order)
	rows, err = v.query(ctx, q, append(args, a...)...)
	if err != nil {
		return wallet.Page{}, classify(err)
	}
	loaded, err := scanRows(rows, t)
	if err != nil {
		return wallet.Page{}, err
	}
	return fit.Page(v.id, loaded)
}

// query runs q on the view's transaction through a statement prepared once per view: a
// traversal runs the same few statements thousands of times, and parsing them again for
// every page costs more than reading a small page.
func (v *Snapshot) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, ok := v.stmts[q]
	if !ok {
		var err error
		if st, err = v.tx.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		v.stmts[q] = st
	}
	return st.QueryContext(ctx, args...)
}

// scopeFilter selects the rows of one user as BRC-40 scopes them. It returns the FROM
// clause (the table as t, with a join where the scope goes through another table) and the
// WHERE condition. Every form walks the paging key in order and costs one index lookup per
// row, so a page costs the same wherever it starts: the map tables join their
// label or tag by primary key (CROSS JOIN keeps the map table as the outer loop, in key
// order), proof requests find their transaction through the txid index, and proofs through
// walletsync's own index on transactions.provenTxId, which the toolbox lacks.
//
// A proof is in scope one step wider than BRC-40 has it: also when the proof request of
// one of the user's transactions refers to it. The toolbox records a proof in two commits
// (the proven_txs row with the request's provenTxId, then the transactions' provenTxId);
// between them the request, in scope through its txid, refers to a proof BRC-40 leaves
// out, and a destination that took the request then would keep it without its proof for
// good (a request's provenTxId is never merged again). The request is looked up by the
// proof's txid, the one the toolbox gives it, so the test stays one index lookup.
func scopeFilter(t *wallet.Table, userID int64) (from, where string, args []any) {
	from = quoteIdent(string(t.Name)) + " AS t"
	switch t.Scope {
	case wallet.ScopeProvenTx:
		return from, "(EXISTS (SELECT 1 FROM transactions x WHERE x.provenTxId = t.provenTxId AND x.userId = ?)" +
			" OR EXISTS (SELECT 1 FROM proven_tx_reqs r CROSS JOIN transactions x ON x.txid = r.txid" +
			" WHERE r.txid = t.txid AND r.provenTxId = t.provenTxId AND x.userId = ?))", []any{userID, userID}
	case wallet.ScopeProvenTxReq:
		return from, "EXISTS (SELECT 1 FROM transactions x WHERE x.txid = t.txid AND x.userId = ?)", []any{userID}
	case wallet.ScopeLabelMap:
		return from + " CROSS JOIN tx_labels AS s ON s.txLabelId = t.txLabelId", "s.userId = ?", []any{userID}
	case wallet.ScopeTagMap:
		return from + " CROSS JOIN output_tags AS s ON s.outputTagId = t.outputTagId", "s.userId = ?", []any{userID}
	case wallet.ScopeUserID:
		// The unary + keeps SQLite from driving the query through one of the toolbox's
		// (userId, ...) indexes, which would sort every remaining row of the user on every
		// page; walking the primary key from the cursor and filtering stops after one page.
		return from, "+t.userId = ?", []any{userID}
	default: // ScopeIdentity: the user row itself
		return from, "t.userId = ?", []any{userID}
	}
}

// link is one way a change to a row of one table (from) brings rows of another (to) into an
// incremental read: rows the changed row now reaches, which BRC-40 scopes through it, and
// which the journal does not list because they did not change themselves. A proof inserted
// before a transaction of the user points at it is the case that matters: the toolbox
// writes the proof, the sync between its two commits leaves the proof out (no transaction
// of the user reaches it yet), and the second commit changes only transactions.
//
// Each link selects the keys (k1, k2) of its to-table's rows from the journal entries of
// its from-table (as j; the changed row's key is j.k1), through joins that are one index
// lookup each. Every reference and scope path of the schema is here or needs no link:
//
//   - proven_txs <- transactions.provenTxId (scope and reference), <- proven_tx_reqs.provenTxId
//     (reference), and <- the requests of a changed transaction's txid (their references);
//   - proven_tx_reqs <- transactions.txid (scope): a transaction that gains a txid, or a
//     new transaction of another user's txid, reaches a request written long before;
//   - tx_labels_map <- tx_labels, output_tags_map <- output_tags (scope through their label
//     or tag): a map row is the user's through its label's userId, so a label that changes
//     user brings its maps. The toolbox never moves a label, but it does revive one
//     (isDeleted), which re-sends that label's maps: idempotent, bounded by the label.
//   - outputs, commissions, certificate_fields and the rest are scoped by their own userId
//     and refer only to rows of the same user that were written, and journaled, before them
//     (foreign keys): their own entries bring them, and SyncOrder puts the targets first;
//     proven_tx_reqs.notify ids name transactions, which come first for the same reason.
//
// No link needs a new table order: SyncOrder already reads a linked row before the rows that
// refer to it (a proof before its transactions and requests, a transaction before its
// requests and label maps), and a read's links see the whole journal above since, so a
// catch-up that stops before transactions still brings the proofs their change links in.
type link struct {
	to, from *wallet.Table
	join     string // joins after "FROM journal AS j"
	keys     string // the to-table's key columns, as k1, k2
	where    string // extra condition; every ? is the user id
}

var links = []link{
	{to: wallet.ProvenTxs, from: wallet.Transactions, join: "CROSS JOIN transactions AS x ON x.transactionId = j.k1",
		keys: "x.provenTxId, NULL", where: "x.userId = ? AND x.provenTxId IS NOT NULL"},
	{to: wallet.ProvenTxs, from: wallet.ProvenTxReqs, join: "CROSS JOIN proven_tx_reqs AS r ON r.provenTxReqId = j.k1",
		keys: "r.provenTxId, NULL", where: "r.provenTxId IS NOT NULL"},
	{to: wallet.ProvenTxs, from: wallet.Transactions, join: "CROSS JOIN transactions AS x ON x.transactionId = j.k1 CROSS JOIN proven_tx_reqs AS r ON r.txid = x.txid",
		keys: "r.provenTxId, NULL", where: "x.userId = ? AND r.provenTxId IS NOT NULL"},
	{to: wallet.ProvenTxReqs, from: wallet.Transactions, join: "CROSS JOIN transactions AS x ON x.transactionId = j.k1 CROSS JOIN proven_tx_reqs AS r ON r.txid = x.txid",
		keys: "r.provenTxReqId, NULL", where: "x.userId = ?"},
	{to: wallet.TxLabelsMap, from: wallet.TxLabels, join: "CROSS JOIN tx_labels_map AS m ON m.txLabelId = j.k1",
		keys: "m.transactionId, m.txLabelId"},
	{to: wallet.OutputTagsMap, from: wallet.OutputTags, join: "CROSS JOIN output_tags_map AS m ON m.outputTagId = j.k1",
		keys: "m.outputId, m.outputTagId"},
}

// changedKeys is a SELECT of the distinct keys (k1, k2) of t's rows that an incremental read
// above since sends: those the journal records as changed, and those a change links in
// (see link). The caller still applies the user's scope to them.
func changedKeys(t *wallet.Table, userID, since int64) (string, []any) {
	parts := []string{"SELECT DISTINCT k1, k2 FROM " + journalTable + " WHERE tbl = ? AND seq > ?"}
	args := []any{string(t.Name), since}
	for _, l := range links {
		if l.to != t {
			continue
		}
		q := fmt.Sprintf("SELECT %s FROM %s AS j %s WHERE j.tbl = ? AND j.seq > ?", l.keys, journalTable, l.join)
		args = append(args, string(l.from.Name), since)
		if l.where != "" {
			q += " AND " + l.where
			for range strings.Count(l.where, "?") {
				args = append(args, userID)
			}
		}
		parts = append(parts, q)
	}
	return strings.Join(parts, " UNION "), args // UNION: distinct, NULLs equal
}

// keyAfter is the keyset condition "key > after", written so that SQLite can use an index
// range on the first key column: a >= ? AND (a > ? OR b > ?).
func keyAfter(key []string, after []any) (string, []any) {
	if len(key) == 1 {
		return "t." + quoteIdent(key[0]) + " > ?", after
	}
	a, b := "t."+quoteIdent(key[0]), "t."+quoteIdent(key[1])
	return fmt.Sprintf("%s >= ? AND (%s > ? OR %s > ?)", a, a, b), []any{after[0], after[0], after[1]}
}

// keyAtMost is "key <= last".
func keyAtMost(key []string, last []any) (string, []any) {
	if len(key) == 1 {
		return "t." + quoteIdent(key[0]) + " <= ?", last
	}
	a, b := "t."+quoteIdent(key[0]), "t."+quoteIdent(key[1])
	return fmt.Sprintf("%s <= ? AND (%s < ? OR %s <= ?)", a, a, b), []any{last[0], last[0], last[1]}
}

// userID resolves the user's id inside the snapshot, once per view.
func (v *Snapshot) userID(ctx context.Context, identityKey string) (int64, error) {
	if id, ok := v.users[identityKey]; ok {
		return id, nil
	}
	var id int64
	err := v.tx.QueryRowContext(ctx, "SELECT userId FROM users WHERE identityKey = ?", identityKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
	}
	if err != nil {
		return 0, classify(err)
	}
	v.users[identityKey] = id
	return id, nil
}

// Resume returns this view's cursor for the key of c, a cursor an earlier view of this
// store issued for table (see wallet.View and wallet.ResumeCursor).
func (v *Snapshot) Resume(table wallet.TableName, c wallet.Cursor) (wallet.Cursor, error) {
	return wallet.ResumeCursor(v.id, table, c)
}

// joinQuoted quotes each name, prefixed (e.g. "t."), and joins them with commas.
func joinQuoted(prefix string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + quoteIdent(n)
	}
	return strings.Join(out, ", ")
}

// mergeCancel returns a context that is done when either a or b is.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}
