package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/wallet"
)

// tableIDs is the brc40.IDMapper of walletsync's own sessions, kept in walletsync_idmaps
// per source storage: a page loads the mappings of every id it refers to in one query
// (load) and writes the ones it made in one statement (flush), as localstore's does.
type tableIDs struct {
	*brc40.PageIDs
	source string
}

func newTableIDs(source string) *tableIDs {
	return &tableIDs{PageIDs: brc40.NewPageIDs(), source: source}
}

// load learns the mappings of the given source ids (brc40.ReferencedIDs).
func (m *tableIDs) load(ctx context.Context, tx pgx.Tx, wanted map[wallet.TableName][]int64) error {
	var tables []string
	var ids []int64
	for table, src := range wanted {
		for _, id := range src {
			tables, ids = append(tables, string(table)), append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT m.tbl, m.source_id, m.local_id FROM unnest($2::text[], $3::bigint[]) AS w(tbl, source_id)
		JOIN `+idMapTable+` AS m ON m.source_storage = $1 AND m.tbl = w.tbl AND m.source_id = w.source_id`, m.source, tables, ids)
	if err != nil {
		return fmt.Errorf("load id maps: %w", classify(err))
	}
	var table string
	var src, local int64
	_, err = pgx.ForEachRow(rows, []any{&table, &src, &local}, func() error {
		m.Learn(wallet.TableName(table), src, local)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load id maps: %w", classify(err))
	}
	return nil
}

// flush writes the mappings made since load.
func (m *tableIDs) flush(ctx context.Context, tx pgx.Tx) error {
	var tables []string
	var src, local []int64
	for table, ids := range m.Fresh() {
		for s, l := range ids {
			tables, src, local = append(tables, string(table)), append(src, s), append(local, l)
		}
	}
	if len(src) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+idMapTable+` (source_storage, tbl, source_id, local_id)
		SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[])`, m.source, tables, src, local); err != nil {
		return fmt.Errorf("write id maps: %w", classify(err))
	}
	m.Flushed()
	return nil
}
