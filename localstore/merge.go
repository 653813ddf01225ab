package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"walletsync/brc40"
	"walletsync/wallet"
)

// merger applies incoming rows from one source to this store inside one write transaction,
// with the merge rules of BRC-40 exactly as @bsv/wallet-toolbox 2.1.26 implements them
// (EntityX.mergeFind / mergeNew / mergeExisting):
//
//   - a row is matched by its natural key (wallet.Table.Natural), its foreign keys first
//     mapped to local ids; a transaction is matched by (txid, user), else (reference, user);
//   - an unmatched row is inserted with a new local id, keeping its timestamps;
//   - a matched row takes the table's Merge columns only when the incoming updated_at is
//     strictly newer, and then updated_at becomes the newer one;
//   - proven transactions never change once stored; proof requests always merge their
//     batch, history notes and notify ids (see mergeProofRequest);
//   - users are never created by a merge, and users.activeStorage follows the batch's
//     ActivePolicy.
//
// Both walletsync's own page commits and the BRC-40 consumer use it; they differ only in
// where the id maps live.
type merger struct {
	ctx    context.Context
	tx     *sql.Tx
	w      *rowWriter
	userID int64
	ids    brc40.IDMapper
	active wallet.ActivePolicy
	// mirror makes a matched row equal to the incoming one (wallet.Batch.Mirror).
	mirror  bool
	stmts   map[string]*sql.Stmt
	inserts int64
	updates int64
	// older counts matched rows strictly older than the stored row: skipped, and reported
	// apart from the unchanged ones by a preview.
	older int64
	// dry, when set, makes the merger a preview: it decides and counts every row exactly as
	// a merge would, but writes nothing; the rows it would insert or update go into dry,
	// which later finds consult first (see PreviewMerge); conflicts then collects the rows
	// a merge could not write (conflicts.go).
	dry       *overlay
	conflicts *conflictLog
	// undo, when set, records in the import journal what the merge writes, so that an
	// abandoned import can be taken back (undo.go).
	undo *undoLog
}

func newMerger(ctx context.Context, tx *sql.Tx, userID int64, ids brc40.IDMapper, active wallet.ActivePolicy) *merger {
	return &merger{ctx: ctx, tx: tx, w: newRowWriter(tx), userID: userID, ids: ids, active: active, stmts: map[string]*sql.Stmt{}}
}

func (m *merger) close() {
	m.w.close()
	for _, st := range m.stmts {
		st.Close()
	}
}

func (m *merger) stmt(q string) (*sql.Stmt, error) {
	if st, ok := m.stmts[q]; ok {
		return st, nil
	}
	st, err := m.tx.PrepareContext(m.ctx, q)
	if err != nil {
		return nil, classify(err)
	}
	m.stmts[q] = st
	return st, nil
}

// merge applies one incoming row of table t (with the source's ids).
func (m *merger) merge(t *wallet.Table, in wallet.Row) error {
	local, err := m.Localize(t, in)
	if err != nil {
		return err
	}
	found, ok, err := m.find(t, local)
	if err != nil {
		return err
	}
	if t == wallet.Users {
		if !ok {
			return fmt.Errorf("merge user %s: a sync never creates a user: %w", wallet.ShortKey(in[t.Col("identityKey")].(string), 16), wallet.ErrNotFound)
		}
		return m.mergeUser(in, found)
	}
	if !ok {
		return m.insert(t, in, local)
	}
	return m.MergeFound(t, in, local, found)
}

// MergeFound merges an incoming row into the stored row that matches it (brc40.PageMerger).
func (m *merger) MergeFound(t *wallet.Table, in, local, found wallet.Row) error {
	m.noteOlder(t, in, found)
	if t.ID != "" {
		if err := m.ids.RecordID(t, in[t.Col(t.ID)].(int64), found[t.Col(t.ID)].(int64)); err != nil {
			return err
		}
	}
	if m.mirror {
		return m.mirrorRow(t, in, local, found)
	}
	switch t {
	case wallet.ProvenTxs:
		return nil // a proof, once stored, never changes
	case wallet.ProvenTxReqs:
		return m.mergeProofRequest(in, found)
	}
	cols := brc40.MergeNewer(t, in, local, found)
	if cols == nil {
		return nil
	}
	m.updates++
	return m.update(t, found, cols)
}

// mergePage applies the rows of one page of t with the same rules as merge, batched
// (brc40.MergePage); a preview goes one row at a time, so that its overlay sees each row.
func (m *merger) mergePage(t *wallet.Table, rows []wallet.Row) error {
	if m.dry != nil {
		return m.MergeEach(t, rows)
	}
	return brc40.MergePage(m, t, rows, idBatchSize)
}

var _ brc40.PageMerger = (*merger)(nil)

// MergeEach merges rows one at a time (brc40.PageMerger).
func (m *merger) MergeEach(t *wallet.Table, rows []wallet.Row) error {
	merge := m.merge
	if m.conflicts != nil {
		merge = m.mergeOrRecord
	}
	for _, r := range rows {
		if err := merge(t, r); err != nil {
			return fmt.Errorf("merge %s row %v: %w", t.Name, t.KeyOf(r), err)
		}
	}
	return nil
}

// FindMany returns the stored rows whose cols equal those of one of locals (brc40.PageMerger).
//
// The tuples drive a join, one index lookup each. The shorter "(cols) IN (VALUES ...)"
// is not used on purpose: SQLite plans it as a scan of the whole table per statement, which
// made a full copy quadratic in the table's size.
func (m *merger) FindMany(t *wallet.Table, cols []string, locals []wallet.Row) ([]wallet.Row, error) {
	tuple := "(" + placeholders(len(cols)) + ")"
	var args []any
	for _, r := range locals {
		for _, c := range cols {
			args = append(args, wallet.SQLValue(r[t.Col(c)]))
		}
	}
	on := make([]string, len(cols))
	for i, c := range cols {
		on[i] = fmt.Sprintf("t.%s = v.column%d", quoteIdent(c), i+1)
	}
	q := fmt.Sprintf("SELECT %s FROM (VALUES %s) AS v CROSS JOIN %s AS t ON %s", joinQuoted("t.", t.ColumnNames()),
		strings.TrimSuffix(strings.Repeat(tuple+", ", len(locals)), ", "), quoteIdent(string(t.Name)), strings.Join(on, " AND "))
	st, err := m.stmt(q)
	if err != nil {
		return nil, err
	}
	rs, err := st.QueryContext(m.ctx, args...)
	if err != nil {
		return nil, classify(err)
	}
	return scanRows(rs, t)
}

// Bounds of one multi-row INSERT statement. The driver copies every bound text and blob into
// C memory that lives until the statement is reset; beyond a few MiB live at once, its
// allocator hands regions back to the OS on every free (an madvise each), which cost a
// full copy of a wallet with 32 KiB raw transactions a tenth of its time.
const (
	insertBatchRows  = 100
	insertBatchBytes = 256 << 10
)

// InsertMany inserts the rows at positions idx with multi-row statements and records the
// ids SQLite gave them. AUTOINCREMENT hands out increasing ids in the order a statement
// inserts its VALUES, so the returned ids, sorted, belong to the rows in order.
func (m *merger) InsertMany(t *wallet.Table, rows, locals []wallet.Row, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	var cols []string
	for _, c := range t.Columns {
		if c.Name != t.ID {
			cols = append(cols, c.Name)
		}
	}
	per := max(1, min(insertBatchRows, 30000/len(cols))) // within SQLite's parameter limit
	for start, end := 0, 0; start < len(idx); start = end {
		end = start + 1 // every statement takes at least one row, however large
		for size := PayloadBytes(locals[idx[start]]); end < len(idx) && end-start < per; end++ {
			if size += PayloadBytes(locals[idx[end]]); size > insertBatchBytes {
				break
			}
		}
		batch := idx[start:end]
		var args []any
		for _, i := range batch {
			r := locals[i]
			brc40.PrepareNew(t, r)
			for _, c := range cols {
				args = append(args, wallet.SQLValue(r[t.Col(c)]))
			}
		}
		q := insertSQL(t, cols, len(batch))
		if t.ID == "" {
			st, err := m.stmt(q)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(m.ctx, args...); err != nil {
				return fmt.Errorf("insert into %s: %w", t.Name, classify(err))
			}
			for _, i := range batch {
				if err := m.undo.inserted(m, t, locals[i], 0); err != nil {
					return err
				}
			}
			m.inserts += int64(len(batch))
			continue
		}
		st, err := m.stmt(q + " RETURNING " + quoteIdent(t.ID))
		if err != nil {
			return err
		}
		ids, err := queryIDs(m.ctx, st, args)
		if err != nil {
			return fmt.Errorf("insert into %s: %w", t.Name, err)
		}
		if len(ids) != len(batch) {
			return fmt.Errorf("insert into %s: %d ids for %d rows: %w", t.Name, len(ids), len(batch), wallet.ErrCorrupt)
		}
		slices.Sort(ids)
		for k, i := range batch {
			if err := m.ids.RecordID(t, rows[i][t.Col(t.ID)].(int64), ids[k]); err != nil {
				return err
			}
			if err := m.undo.inserted(m, t, locals[i], ids[k]); err != nil {
				return err
			}
		}
		m.inserts += int64(len(batch))
	}
	return nil
}

// insertSQL is the statement that inserts n rows of cols into t.
func insertSQL(t *wallet.Table, cols []string, n int) string {
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", quoteIdent(string(t.Name)), joinQuoted("", cols),
		strings.TrimSuffix(strings.Repeat("("+placeholders(len(cols))+"), ", n), ", "))
}

func queryIDs(ctx context.Context, st *sql.Stmt, args []any) ([]int64, error) {
	rs, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rs.Close()
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, classify(err)
		}
		ids = append(ids, id)
	}
	return ids, classify(rs.Err())
}

// Localize returns a copy of in as this store would hold it (brc40.Localize).
func (m *merger) Localize(t *wallet.Table, in wallet.Row) (wallet.Row, error) {
	return brc40.Localize(t, in, m.userID, m.ids.LocalID)
}

// find returns this store's row matching local by natural key (see matchKeys).
func (m *merger) find(t *wallet.Table, local wallet.Row) (wallet.Row, bool, error) {
	for _, cols := range brc40.MatchKeys(t) {
		if !brc40.Matchable(t, cols, local) {
			continue
		}
		if r, ok, err := m.findBy(t, cols, local); ok || err != nil {
			return r, ok, err
		}
	}
	return nil, false, nil
}

func (m *merger) findBy(t *wallet.Table, cols []string, local wallet.Row) (wallet.Row, bool, error) {
	if m.dry != nil {
		if r, ok := m.dry.get(t, cols, local); ok {
			return r, true, nil
		}
	}
	conds := make([]string, len(cols))
	args := make([]any, len(cols))
	for i, c := range cols {
		conds[i] = quoteIdent(c) + " = ?"
		args[i] = wallet.SQLValue(local[t.Col(c)])
	}
	st, err := m.stmt(fmt.Sprintf("SELECT %s FROM %s WHERE %s LIMIT 2", joinQuoted("", t.ColumnNames()),
		quoteIdent(string(t.Name)), strings.Join(conds, " AND ")))
	if err != nil {
		return nil, false, err
	}
	rs, err := st.QueryContext(m.ctx, args...)
	if err != nil {
		return nil, false, classify(err)
	}
	rows, err := scanRows(rs, t)
	switch {
	case err != nil:
		return nil, false, err
	case len(rows) > 1:
		return nil, false, fmt.Errorf("%s: two rows match natural key %v: %w", t.Name, cols, wallet.ErrCorrupt)
	case len(rows) == 0:
		return nil, false, nil
	}
	return rows[0], true, nil
}

func (m *merger) insert(t *wallet.Table, in, local wallet.Row) error {
	brc40.PrepareNew(t, local)
	var id int64
	if m.dry != nil {
		id = m.dry.put(t, local, true)
		if m.conflicts != nil {
			if err := m.checkUnique(t, local, nil, nil, fmt.Sprint("new ", id, t.KeyOf(in))); err != nil {
				return err
			}
		}
	} else {
		var err error
		if id, err = m.w.insert(m.ctx, t, local, false); err != nil {
			return err
		}
		if err := m.undo.inserted(m, t, local, id); err != nil {
			return err
		}
	}
	m.inserts++
	if t.ID == "" {
		return nil
	}
	return m.ids.RecordID(t, in[t.Col(t.ID)].(int64), id)
}

// update writes the named columns of r back to its row.
func (m *merger) update(t *wallet.Table, r wallet.Row, cols []string) error {
	if m.dry != nil {
		m.dry.put(t, r, false)
		if m.conflicts != nil {
			self := t.KeyOf(r)
			return m.checkUnique(t, r, self, cols, fmt.Sprint("stored ", sqlValues(self)))
		}
		return nil
	}
	if err := m.undo.updated(m, t, r); err != nil {
		return err
	}
	sets := make([]string, len(cols))
	args := make([]any, 0, len(cols)+3)
	for i, c := range cols {
		sets[i] = quoteIdent(c) + " = ?"
		args = append(args, wallet.SQLValue(r[t.Col(c)]))
	}
	where := t.Natural
	if t.ID != "" {
		where = []string{t.ID}
	}
	conds := make([]string, len(where))
	for i, c := range where {
		conds[i] = quoteIdent(c) + " = ?"
		args = append(args, wallet.SQLValue(r[t.Col(c)]))
	}
	st, err := m.stmt(fmt.Sprintf("UPDATE %s SET %s WHERE %s", quoteIdent(string(t.Name)), strings.Join(sets, ", "), strings.Join(conds, " AND ")))
	if err != nil {
		return err
	}
	_, err = st.ExecContext(m.ctx, args...)
	return classify(err)
}

// noteOlder counts an incoming row that is strictly older than the stored row it matched.
func (m *merger) noteOlder(t *wallet.Table, in, found wallet.Row) {
	if brc40.UpdatedAt(t, found).After(brc40.UpdatedAt(t, in)) {
		m.older++
	}
}

// mirrorRow makes the stored row equal to the incoming one (brc40.MirrorRow).
func (m *merger) mirrorRow(t *wallet.Table, in, local, found wallet.Row) error {
	cols := brc40.MirrorRow(t, in, local, found)
	if cols == nil {
		return nil
	}
	m.updates++
	return m.update(t, found, cols)
}

// mergeUser applies the user row. The toolbox copies activeStorage only from a newer row; a
// push keeps the source's active store at the destination and a pull keeps the
// destination's, so that no sync ever switches which store is active.
func (m *merger) mergeUser(in, found wallet.Row) error {
	t := wallet.Users
	m.noteOlder(t, in, found)
	if err := m.ids.RecordID(t, in[t.Col("userId")].(int64), found[t.Col("userId")].(int64)); err != nil {
		return err
	}
	if m.mirror { // the user row has no foreign keys: in is as this store would hold it
		return m.mirrorRow(t, in, in, found)
	}
	if !brc40.MergeUserRow(in, found, m.active) {
		return nil
	}
	m.updates++
	return m.update(t, found, brc40.UserMergeColumns())
}

// mergeProofRequest is the toolbox's EntityProvenTxReq.mergeExisting: it always runs,
// whatever the timestamps, and does not count as an update. The batch is taken when the
// local one is empty (two different batches are an error), history notes are united,
// notify ids are mapped and united (which marks the request not notified), updated_at
// becomes the later one. Status, attempts, provenTxId and rawTx are never overwritten.
func (m *merger) mergeProofRequest(in, found wallet.Row) error {
	if err := brc40.MergeProofRequest(in, found, m.localTxID); err != nil {
		return err
	}
	return m.update(wallet.ProvenTxReqs, found, brc40.ProofRequestMergeColumns())
}

// localTxID maps a source transaction id to this store's.
func (m *merger) localTxID(src int64) (int64, bool) { return m.ids.LocalID(wallet.Transactions, src) }

// overlay is a preview's memory of the rows its merge would have written, filed under every
// column set that finds them (matchKeys), so that a later row finds them as it would find
// them in the store.
type overlay struct {
	rows   map[string]wallet.Row
	nextID int64
}

func newOverlay() *overlay { return &overlay{rows: map[string]wallet.Row{}} }

// put records r as written. A row that would be inserted (fresh) first gets a fake id:
// negative, so that it never matches a stored row. It returns that id (0 for updates and
// for the tables without an id).
func (o *overlay) put(t *wallet.Table, r wallet.Row, fresh bool) int64 {
	var id int64
	if fresh && t.ID != "" {
		o.nextID--
		id = o.nextID
		r[t.Col(t.ID)] = id
	}
	for _, cols := range brc40.MatchKeys(t) {
		o.rows[overlayKey(t, cols, r)] = r
	}
	return id
}

func (o *overlay) get(t *wallet.Table, cols []string, local wallet.Row) (wallet.Row, bool) {
	r, ok := o.rows[overlayKey(t, cols, local)]
	return r, ok
}

func overlayKey(t *wallet.Table, cols []string, r wallet.Row) string {
	return string(t.Name) + "\x00" + strings.Join(cols, ",") + "\x00" + brc40.NaturalKey(t, cols, r)
}
