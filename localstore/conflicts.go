package localstore

import (
	"errors"
	"fmt"
	"strings"

	"walletsync/brc40"
	"walletsync/wallet"
)

// Conflicts. A merge fails, half-way, on a row it cannot write: a unique key another row
// already holds (transactions.reference is unique across every user of a wallet, while a
// merge matches a transaction by (txid, user) or (reference, user) only), a NOT NULL
// reference to a row that neither side holds, two stored rows that match one natural key,
// or a proof request of another batch. A preview runs the merge's very decisions (the dry
// merger) and, at every row it would insert or update, checks each unique index of the
// wallet's schema against the wallet and against the rows the preview itself would have
// written; it records each such row instead of failing, and goes on as if the row were
// written, so that one conflict does not hide behind the rows that refer to it.

// conflictLog is a preview's record of the rows a merge could not write.
type conflictLog struct {
	list  []wallet.MergeConflict
	total int
	// uniques holds each table's unique indexes (their columns), read from the schema.
	uniques map[wallet.TableName][][]string
	// owners maps a unique key the preview would write to the row that would hold it.
	owners map[string]string
	// cur is the backup row being merged (its key), for the rows update reports.
	cur []any
}

func newConflictLog() *conflictLog {
	return &conflictLog{uniques: map[wallet.TableName][][]string{}, owners: map[string]string{}}
}

func (c *conflictLog) add(mc wallet.MergeConflict) {
	c.total++
	if len(c.list) < wallet.MaxListedConflicts {
		c.list = append(c.list, mc)
	}
}

// uniqueIndexes returns the column sets of t's unique indexes, primary keys aside (a merge
// never writes a row's id: SQLite assigns a fresh one).
func (m *merger) uniqueIndexes(t *wallet.Table) ([][]string, error) {
	if u, ok := m.conflicts.uniques[t.Name]; ok {
		return u, nil
	}
	type index struct {
		name   string
		unique bool
		origin string
	}
	rs, err := m.tx.QueryContext(m.ctx, "SELECT name, \"unique\", origin FROM pragma_index_list(?)", string(t.Name))
	if err != nil {
		return nil, classify(err)
	}
	var idx []index
	for rs.Next() {
		var i index
		if err := rs.Scan(&i.name, &i.unique, &i.origin); err != nil {
			rs.Close()
			return nil, classify(err)
		}
		if i.unique && i.origin != "pk" {
			idx = append(idx, i)
		}
	}
	if err := rs.Close(); err != nil {
		return nil, classify(err)
	}
	var out [][]string
	for _, i := range idx {
		cols, err := queryStrings(m.ctx, m.tx, "SELECT name FROM pragma_index_info(?) ORDER BY seqno", i.name)
		if err != nil {
			return nil, err
		}
		out = append(out, cols)
	}
	m.conflicts.uniques[t.Name] = out
	return out, nil
}

// checkUnique records a conflict for each unique index of t on which r, as the merge would
// write it, repeats a key that another row holds: a row of the store other than self (the
// stored key of the row an update writes, nil for an insert), or a row the preview would
// write before. changed, for an update, names the columns it writes: an index none of them
// is in cannot newly collide. owner names r among the rows the preview writes.
func (m *merger) checkUnique(t *wallet.Table, r wallet.Row, self []any, changed []string, owner string) error {
	indexes, err := m.uniqueIndexes(t)
	if err != nil {
		return err
	}
	for _, cols := range indexes {
		if changed != nil && !intersects(cols, changed) {
			continue
		}
		vals := make([]any, len(cols))
		null := false
		for i, c := range cols {
			vals[i] = wallet.SQLValue(r[t.Col(c)])
			null = null || vals[i] == nil
		}
		if null {
			continue // NULLs never collide in a unique index
		}
		key := string(t.Name) + "\x00" + strings.Join(cols, ",") + "\x00" + brc40.NaturalKey(t, cols, r)
		if other, ok := m.conflicts.owners[key]; ok && other != owner {
			m.conflicts.add(wallet.MergeConflict{Kind: wallet.ConflictUnique, Table: t.Name, Key: m.conflicts.cur, Columns: cols,
				Reason: fmt.Sprintf("its %s repeats that of another row of the backup", strings.Join(cols, ", "))})
			continue
		}
		m.conflicts.owners[key] = owner
		holder, err := m.holder(t, cols, vals, self)
		if err != nil {
			return err
		}
		if holder != nil {
			m.conflicts.add(wallet.MergeConflict{Kind: wallet.ConflictUnique, Table: t.Name, Key: m.conflicts.cur, Columns: cols, Holder: holder,
				Reason: fmt.Sprintf("the wallet's %s row %v already holds its %s", t.Name, holder, strings.Join(cols, ", "))})
		}
	}
	return nil
}

// holder returns the key of a stored row of t, other than self, whose cols equal vals.
func (m *merger) holder(t *wallet.Table, cols []string, vals []any, self []any) ([]any, error) {
	conds := make([]string, len(cols))
	for i, c := range cols {
		conds[i] = quoteIdent(c) + " = ?"
	}
	st, err := m.stmt(fmt.Sprintf("SELECT %s FROM %s WHERE %s LIMIT 2", joinQuoted("", t.Key), quoteIdent(string(t.Name)), strings.Join(conds, " AND ")))
	if err != nil {
		return nil, err
	}
	rs, err := st.QueryContext(m.ctx, vals...)
	if err != nil {
		return nil, classify(err)
	}
	defer rs.Close()
	for rs.Next() {
		k := make([]any, len(t.Key))
		dst := make([]any, len(k))
		for i := range k {
			dst[i] = &k[i]
		}
		if err := rs.Scan(dst...); err != nil {
			return nil, classify(err)
		}
		if self == nil || fmt.Sprint(k) != fmt.Sprint(sqlValues(self)) {
			return k, nil
		}
	}
	return nil, classify(rs.Err())
}

func sqlValues(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = wallet.SQLValue(v)
	}
	return out
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// mergeOrRecord merges one row in a preview and records, instead of failing, what would
// make a merge fail on it: a reference to nothing, or an ambiguous match. The row then
// counts as written (with a fake id), so that the rows referring to it are judged on their
// own.
func (m *merger) mergeOrRecord(t *wallet.Table, in wallet.Row) error {
	m.conflicts.cur = t.KeyOf(in)
	err := m.merge(t, in)
	var kind wallet.ConflictKind
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wallet.ErrDanglingReference):
		kind = wallet.ConflictDangling
	case errors.Is(err, wallet.ErrCorrupt):
		kind = wallet.ConflictAmbiguous
	default:
		return err
	}
	m.conflicts.add(wallet.MergeConflict{Kind: kind, Table: t.Name, Key: t.KeyOf(in), Reason: err.Error()})
	if t.ID == "" {
		return nil
	}
	src := in[t.Col(t.ID)].(int64)
	if _, ok := m.ids.LocalID(t, src); ok {
		return nil
	}
	return m.ids.RecordID(t, src, m.dry.put(t, append(wallet.Row(nil), in...), true))
}
