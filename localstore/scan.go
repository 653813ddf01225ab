package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"walletsync/wallet"
)

// ScanAll reads every row of every table a snapshot view can page with one plain
// `SELECT *` per table, and returns the rows and payload bytes read. It is the floor that
// `walletsync bench store` measures keyset paging against; nothing else uses it.
func (s *Store) ScanAll(ctx context.Context) (rows, size int64, err error) {
	for _, t := range wallet.AllTables {
		rs, err := s.readDB.QueryContext(ctx, "SELECT * FROM "+quoteIdent(string(t.Name)))
		if err != nil {
			return rows, size, fmt.Errorf("scan %s: %w", t.Name, classify(err))
		}
		r := make(wallet.Row, len(t.Columns))
		dst := make([]any, len(r))
		for i := range r {
			dst[i] = &r[i]
		}
		for rs.Next() {
			if err := rs.Scan(dst...); err != nil {
				rs.Close()
				return rows, size, fmt.Errorf("scan %s: %w", t.Name, classify(err))
			}
			rows++
			size += PayloadBytes(r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return rows, size, fmt.Errorf("scan %s: %w", t.Name, classify(err))
		}
	}
	return rows, size, nil
}

// PayloadBytes is the size of a row's values as stored: text and blob lengths, 8 bytes per
// number or time. Benchmarks count throughput in it.
func PayloadBytes(r wallet.Row) int64 {
	var n int64
	for _, v := range r {
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case int64, bool, time.Time, float64:
			n += 8
		}
	}
	return n
}

// CopyRawFrom copies every synced table of the wallet file at srcPath into this store with
// ATTACH and one INSERT ... SELECT per table, in one transaction: the raw SQLite floor that
// `walletsync bench sync` measures a sync against. It keeps the source's ids, so the store
// must hold no rows of those tables yet; nothing else uses it.
func (s *Store) CopyRawFrom(ctx context.Context, srcPath string) (rows int64, err error) {
	err = s.attachTx(ctx, srcPath, func(tx *sql.Tx) error {
		// A fresh store may hold its own user and default basket already.
		if _, err := tx.ExecContext(ctx, "DELETE FROM main.output_baskets; DELETE FROM main.users"); err != nil {
			return classify(err)
		}
		rows, err = copyTables(ctx, tx, wallet.SyncOrder)
		return err
	})
	return rows, err
}

// CopyThroughGo copies what CopyRawFrom copies, in one transaction too, but reads the rows
// into Go values, 1,000 at a time, and writes them back with the multi-row INSERT statements a
// page commit uses: no merge, no id maps, no pages, no checkpoints. It is the least a sync
// that moves its rows through Go (as every Provider must, its pages being plain values) can
// cost with this driver, which `walletsync bench sync` measures beside the raw floor; nothing
// else uses it.
func (s *Store) CopyThroughGo(ctx context.Context, srcPath string) (rows int64, err error) {
	err = s.attachTx(ctx, srcPath, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM main.output_baskets; DELETE FROM main.users"); err != nil {
			return classify(err)
		}
		stmts := map[string]*sql.Stmt{}
		defer func() {
			for _, st := range stmts {
				st.Close()
			}
		}()
		for _, t := range wallet.SyncOrder {
			cols := t.ColumnNames()
			read := fmt.Sprintf("SELECT rowid, %s FROM src.%s WHERE rowid > ? ORDER BY rowid LIMIT 1000", joinQuoted("", cols), quoteIdent(string(t.Name)))
			for after := int64(0); ; {
				page, last, err := readRowidPage(ctx, tx, read, after, len(cols))
				if err != nil {
					return fmt.Errorf("read %s: %w", t.Name, err)
				}
				if len(page) == 0 {
					break
				}
				after = last
				for start := 0; start < len(page); start += insertBatchRows {
					batch := page[start:min(start+insertBatchRows, len(page))]
					q := insertSQL(t, cols, len(batch))
					st, ok := stmts[q]
					if !ok {
						if st, err = tx.PrepareContext(ctx, q); err != nil {
							return classify(err)
						}
						stmts[q] = st
					}
					var args []any
					for _, r := range batch {
						for _, v := range r {
							args = append(args, wallet.SQLValue(v))
						}
					}
					if _, err := st.ExecContext(ctx, args...); err != nil {
						return fmt.Errorf("insert into %s: %w", t.Name, classify(err))
					}
				}
				rows += int64(len(page))
			}
		}
		return nil
	})
	return rows, err
}

// readRowidPage reads one page of "SELECT rowid, cols..." into Go values and returns the
// rows without their rowid, and the last rowid.
func readRowidPage(ctx context.Context, tx *sql.Tx, q string, after int64, ncols int) ([][]any, int64, error) {
	rs, err := tx.QueryContext(ctx, q, after)
	if err != nil {
		return nil, 0, classify(err)
	}
	defer rs.Close()
	var page [][]any
	var last int64
	for rs.Next() {
		r := make([]any, ncols)
		dst := []any{&last}
		for i := range r {
			dst = append(dst, &r[i])
		}
		if err := rs.Scan(dst...); err != nil {
			return nil, 0, classify(err)
		}
		page = append(page, r)
	}
	return page, last, classify(rs.Err())
}

// TouchFraction marks about fraction of the user's rows in every synced table as changed
// (a later updated_at), in one transaction, and returns how many rows it touched: the
// workload `walletsync bench sync` measures incremental sync with; nothing else uses it.
func (s *Store) TouchFraction(ctx context.Context, identityKey string, fraction float64) (int64, error) {
	if fraction <= 0 || fraction > 1 {
		return 0, fmt.Errorf("touch fraction %v outside (0, 1]: %w", fraction, wallet.ErrInvalidArgument)
	}
	every := int64(1 / fraction)
	var touched int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		stamp := wallet.FormatTime(wallet.Now())
		for _, t := range wallet.Entities {
			from, where, args := scopeFilter(t, userID)
			res, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET updated_at = ? WHERE rowid IN (SELECT t.rowid FROM %s WHERE %s AND t.rowid %% %d = 0)",
				quoteIdent(string(t.Name)), from, where, every), append([]any{stamp}, args...)...)
			if err != nil {
				return classify(err)
			}
			n, _ := res.RowsAffected()
			touched += n
		}
		return nil
	})
	return touched, err
}
