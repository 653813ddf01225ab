package localstore

import (
	"context"
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
