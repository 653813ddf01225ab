package localstore

import (
	"context"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// LookupRow reads the one row of table whose column equals value, whichever user it belongs
// to, inside the view's snapshot (brc38.RowLookup). It serves the BRC-38 export, whose
// closure and raw-transaction back-fill follow links that BRC-40's per-user scope does not.
// Only columns that are unique in the toolbox's schema are accepted: a table's id, and the
// txid of proven_txs and proven_tx_reqs; a missing row is wallet.ErrNotFound.
func (v *Snapshot) LookupRow(ctx context.Context, table wallet.TableName, column string, value any) (wallet.Row, error) {
	t, err := wallet.LookupTable(table)
	if err != nil {
		return nil, fmt.Errorf("look up row: %w", err)
	}
	unique := column == t.ID && t.ID != "" || column == "txid" && (t == wallet.ProvenTxs || t == wallet.ProvenTxReqs)
	if !unique {
		return nil, fmt.Errorf("look up %s by %s: not a unique column: %w", table, column, wallet.ErrInvalidArgument)
	}
	var rows []wallet.Row
	err = v.read(func() error {
		qctx, stop := mergeCancel(ctx, v.ctx)
		defer stop()
		rs, err := v.query(qctx, fmt.Sprintf("SELECT %s FROM %s AS t WHERE t.%s = ?",
			joinQuoted("t.", t.ColumnNames()), quoteIdent(string(t.Name)), quoteIdent(column)), wallet.SQLValue(value))
		if err != nil {
			return classify(err)
		}
		rows, err = scanRows(rs, t)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("look up %s by %s: %w", table, column, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("look up %s.%s = %v: %w", table, column, value, wallet.ErrNotFound)
	}
	return rows[0], nil
}

// RowID returns the SQLite rowid of the row of table whose unique key (wallet.Table.Key)
// is key, inside the view's snapshot (brc38.RowOrder). The rowid is the order in which
// a query without ORDER BY that scans the table returns its rows, which is the order the
// toolbox's finders read certificate fields in. A missing row is wallet.ErrNotFound; a
// table without rowids (none of the toolbox's) is wallet.ErrInvalidArgument.
func (v *Snapshot) RowID(ctx context.Context, table wallet.TableName, key []any) (int64, error) {
	t, err := wallet.LookupTable(table)
	if err != nil {
		return 0, fmt.Errorf("read rowid: %w", err)
	}
	if len(key) != len(t.Key) {
		return 0, fmt.Errorf("read %s rowid: %d key values for %d key columns: %w", table, len(key), len(t.Key), wallet.ErrInvalidArgument)
	}
	where, args := make([]string, len(key)), make([]any, len(key))
	for i, k := range t.Key {
		where[i] = "t." + quoteIdent(k) + " = ?"
		args[i] = wallet.SQLValue(key[i])
	}
	var id int64
	found := false
	err = v.read(func() error {
		qctx, stop := mergeCancel(ctx, v.ctx)
		defer stop()
		rs, err := v.query(qctx, fmt.Sprintf("SELECT t.rowid FROM %s AS t WHERE %s", quoteIdent(string(t.Name)), strings.Join(where, " AND ")), args...)
		if err != nil {
			return classify(err)
		}
		defer rs.Close()
		if rs.Next() {
			found = true
			if err := rs.Scan(&id); err != nil {
				return classify(err)
			}
		}
		return classify(rs.Err())
	})
	if err != nil {
		return 0, fmt.Errorf("read %s rowid: %w", table, err)
	}
	if !found {
		return 0, fmt.Errorf("read %s rowid of %v: %w", table, key, wallet.ErrNotFound)
	}
	return id, nil
}
