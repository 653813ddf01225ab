package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// rowWriter inserts rows of any table inside one write transaction, preparing each table's
// statement once. It is the one insert path that fixtures, imports and merges share.
type rowWriter struct {
	tx    *sql.Tx
	stmts map[stmtKey]*sql.Stmt
}

type stmtKey struct {
	table  wallet.TableName
	keepID bool
}

func newRowWriter(tx *sql.Tx) *rowWriter {
	return &rowWriter{tx: tx, stmts: map[stmtKey]*sql.Stmt{}}
}

// insert writes r into t and returns the new row's id (0 for the map tables). With keepID
// the row's own primary key is written; otherwise SQLite assigns the next one.
func (w *rowWriter) insert(ctx context.Context, t *wallet.Table, r wallet.Row, keepID bool) (int64, error) {
	key := stmtKey{t.Name, keepID || t.ID == ""}
	st, ok := w.stmts[key]
	if !ok {
		var names, marks []string
		for _, c := range t.Columns {
			if c.Name == t.ID && !key.keepID {
				continue
			}
			names = append(names, quoteIdent(c.Name))
			marks = append(marks, "?")
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", quoteIdent(string(t.Name)), strings.Join(names, ", "), strings.Join(marks, ", "))
		var err error
		if st, err = w.tx.PrepareContext(ctx, q); err != nil {
			return 0, fmt.Errorf("prepare insert into %s: %w", t.Name, classify(err))
		}
		w.stmts[key] = st
	}
	args := make([]any, 0, len(t.Columns))
	for i, c := range t.Columns {
		if c.Name == t.ID && !key.keepID {
			continue
		}
		args = append(args, wallet.SQLValue(r[i]))
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("insert into %s: %w", t.Name, classify(err))
	}
	if t.ID == "" {
		return 0, nil
	}
	return res.LastInsertId()
}

func (w *rowWriter) close() {
	for _, st := range w.stmts {
		st.Close()
	}
}

// scanRows reads every row of rs as rows of t, normalized, and closes rs.
func scanRows(rs *sql.Rows, t *wallet.Table) ([]wallet.Row, error) {
	defer rs.Close()
	var out []wallet.Row
	for rs.Next() {
		r := make(wallet.Row, len(t.Columns))
		dst := make([]any, len(r))
		for i := range r {
			dst[i] = &r[i]
		}
		if err := rs.Scan(dst...); err != nil {
			return nil, classify(err)
		}
		if err := t.Normalize(r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, classify(rs.Err())
}
