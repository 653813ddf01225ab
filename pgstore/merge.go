package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/wallet"
)

// merger applies incoming rows to the store inside one transaction, with BRC-40's merge
// rules as wallet states them (the same rules localstore's merger applies): a row is
// matched by its natural key (brc40.MatchKeys) after its foreign keys are mapped to local
// ids (brc40.Localize); an unmatched row is inserted with a new local id, a matched one
// merges by brc40.MergeNewer, brc40.MergeUserRow (under the batch's ActivePolicy; the
// zero policy is processSyncChunk's own rule) or brc40.MergeProofRequest; proofs never
// change once stored; users are never created by a merge.
//
// Both the BRC-40 consumer (ProcessSyncChunk) and walletsync's page commits (Commit) merge
// a table's rows as one page (brc40.MergePage): one query finds the stored rows matching
// the whole page, one INSERT ... SELECT FROM unnest(...) inserts the unmatched ones, and
// the updates of the matched ones go to the server in one batch. A row-by-row merge made
// about three round trips per row, which put a push of the toolbox fixture at 2.5x
// SQLite's time.
type merger struct {
	ctx    context.Context
	tx     pgx.Tx
	userID int64
	ids    brc40.IDMapper
	active wallet.ActivePolicy
	// mirror makes a matched row equal to the incoming one (wallet.Batch.Mirror).
	mirror  bool
	pending pgx.Batch // updates not yet sent (see update)
	inserts int64
	updates int64
}

var _ brc40.PageMerger = (*merger)(nil)

// findBatch is how many rows one natural key lookup covers: a whole page (its keys travel
// as arrays, so the statement stays the same whatever their number).
const findBatch = wallet.MaxPageRows

// mergeRows merges rows of t as one page (ConsumeChunk's mergeRows).
func (m *merger) mergeRows(t *wallet.Table, rows []wallet.Row) error {
	if err := brc40.MergePage(m, t, rows, findBatch); err != nil {
		return err
	}
	return m.flush()
}

// mergeUser merges the chunk's user row and reports whether it changed the stored one.
func (m *merger) mergeUser(in wallet.Row) (bool, error) {
	before := m.updates
	err := m.MergeEach(wallet.Users, []wallet.Row{in})
	return m.updates > before, err
}

// MergeEach merges rows one at a time, each finding the ones before it (brc40.PageMerger).
func (m *merger) MergeEach(t *wallet.Table, rows []wallet.Row) error {
	for _, in := range rows {
		if err := m.merge(t, in); err != nil {
			return fmt.Errorf("merge %s row %v: %w", t.Name, t.KeyOf(in), err)
		}
		if err := m.flush(); err != nil {
			return err
		}
	}
	return nil
}

// merge applies one incoming row of t (with the source's ids).
func (m *merger) merge(t *wallet.Table, in wallet.Row) error {
	local, err := m.Localize(t, in)
	if err != nil {
		return err
	}
	found, err := m.find(t, local)
	if err != nil {
		return err
	}
	if found == nil {
		if t == wallet.Users {
			return fmt.Errorf("merge user %s: a sync never creates a user: %w", wallet.ShortKey(in[t.Col("identityKey")].(string), 16), wallet.ErrNotFound)
		}
		return m.InsertMany(t, []wallet.Row{in}, []wallet.Row{local}, []int{0})
	}
	return m.MergeFound(t, in, local, found)
}

// Localize returns in as this store would hold it (brc40.PageMerger).
func (m *merger) Localize(t *wallet.Table, in wallet.Row) (wallet.Row, error) {
	return brc40.Localize(t, in, m.userID, m.ids.LocalID)
}

// MergeFound merges an incoming row into the stored row found for it (brc40.PageMerger).
func (m *merger) MergeFound(t *wallet.Table, in, local, found wallet.Row) error {
	if t.ID != "" {
		if err := m.ids.RecordID(t, in[t.Col(t.ID)].(int64), found[t.Col(t.ID)].(int64)); err != nil {
			return err
		}
	}
	var cols []string
	switch {
	case m.mirror:
		cols = brc40.MirrorRow(t, in, local, found)
	case t == wallet.ProvenTxs:
		return nil // a proof, once stored, never changes
	case t == wallet.ProvenTxReqs:
		localTx := func(src int64) (int64, bool) { return m.ids.LocalID(wallet.Transactions, src) }
		if err := brc40.MergeProofRequest(in, found, localTx); err != nil {
			return err
		}
		m.update(t, found, brc40.ProofRequestMergeColumns()) // not counted, as the toolbox counts it
		return nil
	case t == wallet.Users:
		if brc40.MergeUserRow(in, found, m.active) {
			cols = brc40.UserMergeColumns()
		}
	default:
		cols = brc40.MergeNewer(t, in, local, found)
	}
	if cols == nil {
		return nil
	}
	m.updates++
	m.update(t, found, cols)
	return nil
}

// find returns the stored row matching local by natural key (brc40.MatchKeys), or nil.
func (m *merger) find(t *wallet.Table, local wallet.Row) (wallet.Row, error) {
	for _, cols := range brc40.MatchKeys(t) {
		if !brc40.Matchable(t, cols, local) {
			continue
		}
		rows, err := m.FindMany(t, cols, []wallet.Row{local})
		switch {
		case err != nil:
			return nil, err
		case len(rows) > 1:
			return nil, fmt.Errorf("%s: two rows match natural key %v: %w", t.Name, cols, wallet.ErrCorrupt)
		case len(rows) == 1:
			return rows[0], nil
		}
	}
	return nil, nil
}

// FindMany returns the stored rows whose cols equal those of one of locals
// (brc40.PageMerger): the keys travel as one array per column, joined to the table.
func (m *merger) FindMany(t *wallet.Table, cols []string, locals []wallet.Row) ([]wallet.Row, error) {
	q := &query{}
	arrays := make([]string, len(cols))
	names := make([]string, len(cols))
	on := make([]string, len(cols))
	for i, c := range cols {
		vals := make([]any, len(locals))
		for k, r := range locals {
			vals[k] = arg(r[t.Col(c)])
		}
		arrays[i] = q.add(vals) + "::" + pgType(t.Columns[t.Col(c)].Kind) + "[]"
		names[i] = fmt.Sprintf("k%d", i)
		on[i] = fmt.Sprintf("t.%s = v.%s", quote(c), names[i])
	}
	sql := fmt.Sprintf("SELECT %s FROM unnest(%s) AS v(%s) JOIN %s AS t ON %s", selectColumns(t, "t"), strings.Join(arrays, ", "),
		strings.Join(names, ", "), quote(string(t.Name)), strings.Join(on, " AND "))
	return queryRows(m.ctx, m.tx, t, sql, q.args...)
}

// InsertMany inserts locals[i] for every i in idx with one statement and maps the source
// ids of rows[i] to theirs (brc40.PageMerger). The ids are taken from the table's identity
// sequence first (nextIDs), so that which row got which id is known without relying on the
// order of RETURNING; they are taken in ascending order and given in the page's, as SQLite's
// AUTOINCREMENT gives them.
func (m *merger) InsertMany(t *wallet.Table, rows, locals []wallet.Row, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	if err := m.flush(); err != nil { // the page's updates come first, as in localstore
		return err
	}
	var ids []int64
	if t.ID != "" {
		var err error
		if ids, err = m.nextIDs(t, len(idx)); err != nil {
			return err
		}
	}
	for _, i := range idx {
		brc40.PrepareNew(t, locals[i])
	}
	q := &query{}
	names := make([]string, len(t.Columns))
	arrays := make([]string, len(t.Columns))
	for c, col := range t.Columns {
		vals := make([]any, len(idx))
		for k, i := range idx {
			r := locals[i]
			if col.Name == t.ID {
				r[c] = ids[k]
			}
			vals[k] = arg(r[c])
		}
		names[c] = quote(col.Name)
		arrays[c] = q.add(vals) + "::" + pgType(col.Kind) + "[]"
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) SELECT * FROM unnest(%s)", quote(string(t.Name)), strings.Join(names, ", "), strings.Join(arrays, ", "))
	if _, err := m.tx.Exec(m.ctx, sql, q.args...); err != nil {
		return fmt.Errorf("insert into %s: %w", t.Name, classify(err))
	}
	m.inserts += int64(len(idx))
	for k, i := range idx {
		if t.ID == "" {
			break
		}
		if err := m.ids.RecordID(t, rows[i][t.Col(t.ID)].(int64), ids[k]); err != nil {
			return err
		}
	}
	return nil
}

// nextIDs takes n ids from t's identity sequence, in ascending order.
func (m *merger) nextIDs(t *wallet.Table, n int) ([]int64, error) {
	rows, err := m.tx.Query(m.ctx, "SELECT nextval(pg_get_serial_sequence($1, $2)) FROM generate_series(1, $3)", quote(string(t.Name)), t.ID, n)
	if err != nil {
		return nil, fmt.Errorf("take %s ids: %w", t.Name, classify(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("take %s ids: %w", t.Name, classify(err))
	}
	if len(ids) != n {
		return nil, fmt.Errorf("take %s ids: %d ids for %d rows: %w", t.Name, len(ids), n, wallet.ErrCorrupt)
	}
	slices.Sort(ids)
	return ids, nil
}

// update queues the write of the named columns of r back to its row, found by its id (or,
// for the tables without one, by its natural key); flush sends what is queued.
func (m *merger) update(t *wallet.Table, r wallet.Row, cols []string) {
	q := &query{}
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = quote(c) + " = " + q.add(r[t.Col(c)])
	}
	where := t.Natural
	if t.ID != "" {
		where = []string{t.ID}
	}
	conds := make([]string, len(where))
	for i, c := range where {
		conds[i] = quote(c) + " = " + q.add(r[t.Col(c)])
	}
	m.pending.Queue(fmt.Sprintf("UPDATE %s SET %s WHERE %s", quote(string(t.Name)), strings.Join(sets, ", "), strings.Join(conds, " AND ")), q.args...)
}

// flush sends the queued updates in one round trip.
func (m *merger) flush() error {
	n := m.pending.Len()
	if n == 0 {
		return nil
	}
	b := m.pending
	m.pending = pgx.Batch{}
	br := m.tx.SendBatch(m.ctx, &b)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("update: %w", classify(err))
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("update: %w", classify(err))
	}
	return nil
}

// checkText refuses rows of t whose text this store cannot hold exactly (a
// *wallet.UnstorableError): PostgreSQL's text holds neither a NUL byte nor invalid UTF-8,
// and a row must not lose or change a byte on its way in.
func checkText(t *wallet.Table, rows []wallet.Row) error {
	for _, r := range rows {
		for i, c := range t.Columns {
			if c.Kind != wallet.KindText && c.Kind != wallet.KindJSON {
				continue
			}
			s, _ := r[i].(string)
			if reason := unstorable(s); reason != "" {
				return &wallet.UnstorableError{Table: t.Name, Column: c.Name, Key: t.KeyOf(r), Reason: reason}
			}
		}
	}
	return nil
}

// unstorable says why PostgreSQL's text cannot hold s, or "" when it can.
func unstorable(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "PostgreSQL text cannot hold a NUL byte"
	case !utf8.ValidString(s):
		return "PostgreSQL text cannot hold invalid UTF-8"
	}
	return ""
}
