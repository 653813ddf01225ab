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
