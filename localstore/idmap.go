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

// Id maps. Rows arrive with the source's ids; the destination gives them its own. The map
// from source id to local id, per source storage and table, is what lets a later page (or a
// later run) point a foreign key at a row that is not sent again.
const idMapTable = ownPrefix + "idmaps"

// idBatchSize is how many ids go into one id map lookup or insert statement, and how many
// rows into one natural key lookup (SQLite allows 32766 parameters; 128 keeps each
// statement small and its plan cached).
const idBatchSize = 128

// tableIDs is the brc40.IDMapper of walletsync's own sessions, kept in walletsync_idmaps.
// A page loads the ids it references up front and writes the new ones at the end, in
// batches.
type tableIDs struct {
	*brc40.PageIDs
	source string
}

func newTableIDs(source string) *tableIDs {
	return &tableIDs{PageIDs: brc40.NewPageIDs(), source: source}
}

// preparer returns a statement prepared once per transaction: a page's id map lookups and
// writes run the same few statements many times, and preparing one of 512 parameters
// costs more than running it.
type preparer func(q string) (*sql.Stmt, error)

// load reads the mappings of the given source ids, grouped by table.
func (m *tableIDs) load(ctx context.Context, prep preparer, wanted map[wallet.TableName][]int64) error {
	for table, ids := range wanted {
		if len(ids) == 0 {
			continue
		}
		lo, hi := slices.Min(ids), slices.Max(ids)
		if hi-lo < 2*int64(len(ids)) {
			// Dense ids (a page of a full traversal, the rows it points at): one range scan
			// of the map's primary key instead of a statement per batch. The range holds at
			// most twice the wanted ids, so a range never loads much more than asked for.
			if err := m.loadQuery(ctx, prep, table, "source_id BETWEEN ? AND ?", lo, hi); err != nil {
				return err
			}
			continue
		}
		for start := 0; start < len(ids); start += idBatchSize {
			batch := ids[start:min(start+idBatchSize, len(ids))]
			args := make([]any, len(batch))
			for i, id := range batch {
				args[i] = id
			}
			if err := m.loadQuery(ctx, prep, table, "source_id IN ("+placeholders(len(batch))+")", args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadQuery learns the mappings of table whose source_id meets cond.
func (m *tableIDs) loadQuery(ctx context.Context, prep preparer, table wallet.TableName, cond string, args ...any) error {
	st, err := prep("SELECT source_id, local_id FROM " + idMapTable + " WHERE source_storage = ? AND tbl = ? AND " + cond)
	if err != nil {
		return fmt.Errorf("load id maps: %w", err)
	}
	rows, err := st.QueryContext(ctx, append([]any{m.source, string(table)}, args...)...)
	if err != nil {
		return fmt.Errorf("load id maps: %w", classify(err))
	}
	defer rows.Close()
	for rows.Next() {
		var src, local int64
		if err := rows.Scan(&src, &local); err != nil {
			return fmt.Errorf("load id maps: %w", classify(err))
		}
		m.Learn(table, src, local)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load id maps: %w", classify(err))
	}
	return nil
}

// flush writes the mappings made since load, in batches.
func (m *tableIDs) flush(ctx context.Context, prep preparer) error {
	for table, ids := range m.Fresh() {
		pairs := make([][2]int64, 0, len(ids))
		for src, local := range ids {
			pairs = append(pairs, [2]int64{src, local})
		}
		for start := 0; start < len(pairs); start += idBatchSize {
			batch := pairs[start:min(start+idBatchSize, len(pairs))]
			var args []any
			for _, p := range batch {
				args = append(args, m.source, string(table), p[0], p[1])
			}
			st, err := prep("INSERT INTO " + idMapTable + " (source_storage, tbl, source_id, local_id) VALUES " +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(batch)), ", "))
			if err != nil {
				return fmt.Errorf("write id maps: %w", err)
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("write id maps: %w", classify(err))
			}
		}
	}
	m.Flushed()
	return nil
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
