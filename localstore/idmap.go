package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"walletsync/wallet"
)

// Id maps. Rows arrive with the source's ids; the destination gives them its own. The map
// from source id to local id, per source storage and table, is what lets a later page (or a
// later run) point a foreign key at a row that is not sent again.
const idMapTable = ownPrefix + "idmaps"

// Bounds of one page's id map work: the distinct ids a page may reference, and how many go
// into one lookup or insert statement (SQLite allows 32766 parameters; 128 keeps each
// statement small and its plan cached).
const (
	maxPageIDs  = 4096
	idBatchSize = 128
)

// idMapper maps source ids to local ids for one source storage.
type idMapper interface {
	// local returns the local id for a source id of table t.
	local(t *wallet.Table, src int64) (int64, bool)
	// record maps a source id to a local one; mapping an id again to another value is an
	// error (the stores disagree about identity, and nothing may be merged on top of that).
	record(t *wallet.Table, src, local int64) error
}

// tableIDs is the idMapper of walletsync's own sessions, kept in walletsync_idmaps. A page
// loads the ids it references up front and writes the new ones at the end, in batches.
type tableIDs struct {
	source string
	known  map[wallet.TableName]map[int64]int64
	fresh  map[wallet.TableName]map[int64]int64
}

func newTableIDs(source string) *tableIDs {
	return &tableIDs{source: source, known: map[wallet.TableName]map[int64]int64{}, fresh: map[wallet.TableName]map[int64]int64{}}
}

func (m *tableIDs) local(t *wallet.Table, src int64) (int64, bool) {
	if id, ok := m.fresh[t.Name][src]; ok {
		return id, true
	}
	id, ok := m.known[t.Name][src]
	return id, ok
}

func (m *tableIDs) record(t *wallet.Table, src, local int64) error {
	if old, ok := m.local(t, src); ok {
		if old != local {
			return &wallet.IDMapConflictError{Entity: t.Entity, SourceID: src, Mapped: old, New: local}
		}
		return nil
	}
	if m.fresh[t.Name] == nil {
		m.fresh[t.Name] = map[int64]int64{}
	}
	m.fresh[t.Name][src] = local
	return nil
}

// preparer returns a statement prepared once per transaction: a page's id map lookups and
// writes run the same few statements many times, and preparing one of 512 parameters
// costs more than running it.
type preparer func(q string) (*sql.Stmt, error)

// load reads the mappings of the given source ids, grouped by table.
func (m *tableIDs) load(ctx context.Context, prep preparer, wanted map[wallet.TableName][]int64) error {
	total := 0
	for _, ids := range wanted {
		total += len(ids)
	}
	if total > maxPageIDs {
		return fmt.Errorf("page references %d distinct ids, more than %d: %w", total, maxPageIDs, wallet.ErrInvalidArgument)
	}
	for table, ids := range wanted {
		if m.known[table] == nil {
			m.known[table] = map[int64]int64{}
		}
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

// loadQuery adds to m.known the mappings of table whose source_id meets cond.
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
		m.known[table][src] = local
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load id maps: %w", classify(err))
	}
	return nil
}

// flush writes the mappings made since load, in batches.
func (m *tableIDs) flush(ctx context.Context, prep preparer) error {
	for table, ids := range m.fresh {
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
		for src, local := range ids {
			if m.known[table] == nil {
				m.known[table] = map[int64]int64{}
			}
			m.known[table][src] = local
		}
	}
	m.fresh = map[wallet.TableName]map[int64]int64{}
	return nil
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
