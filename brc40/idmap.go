package brc40

import (
	"fmt"

	"walletsync/wallet"
)

// IDMapper maps a source's ids to a destination's, per table: what a merge (Localize and
// the rows it matches or inserts) consults and extends. A BRC-40 consumer's SyncMap is one;
// walletsync's page commits use a PageIDs over the destination's id map table.
type IDMapper interface {
	// LocalID returns the destination's id for a source id of t.
	LocalID(t *wallet.Table, src int64) (int64, bool)
	// RecordID maps a source id of t to a local one; mapping an id again to another value
	// is an *IDMapConflictError (the stores disagree about identity, and nothing may be
	// merged on top of that).
	RecordID(t *wallet.Table, src, local int64) error
}

var (
	_ IDMapper = SyncMap(nil)
	_ IDMapper = (*PageIDs)(nil)
)

// PageIDs is a destination's id map for one source storage as one page commit sees it: the
// mappings the destination loaded (Learn) for the ids the page refers to (ReferencedIDs),
// and the ones the page's merge made (Fresh), which the commit writes back before its
// checkpoint and then marks written (Flushed). A PageIDs is used by one goroutine.
type PageIDs struct {
	known map[wallet.TableName]map[int64]int64
	fresh map[wallet.TableName]map[int64]int64
}

// NewPageIDs returns an empty PageIDs.
func NewPageIDs() *PageIDs {
	return &PageIDs{known: map[wallet.TableName]map[int64]int64{}, fresh: map[wallet.TableName]map[int64]int64{}}
}

// LocalID returns the local id of a source id of t, made by this page or loaded.
func (m *PageIDs) LocalID(t *wallet.Table, src int64) (int64, bool) {
	if id, ok := m.fresh[t.Name][src]; ok {
		return id, true
	}
	id, ok := m.known[t.Name][src]
	return id, ok
}

// RecordID maps a source id of t to a local one (see IDMapper); a new mapping is Fresh.
func (m *PageIDs) RecordID(t *wallet.Table, src, local int64) error {
	if old, ok := m.LocalID(t, src); ok {
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

// Learn adds a mapping the destination holds already.
func (m *PageIDs) Learn(table wallet.TableName, src, local int64) {
	if m.known[table] == nil {
		m.known[table] = map[int64]int64{}
	}
	m.known[table][src] = local
}

// Fresh returns the mappings made since the last Flushed, by table: what the destination
// must write.
func (m *PageIDs) Fresh() map[wallet.TableName]map[int64]int64 { return m.fresh }

// Flushed records that the destination wrote every Fresh mapping: they become known.
func (m *PageIDs) Flushed() {
	for table, ids := range m.fresh {
		for src, local := range ids {
			m.Learn(table, src, local)
		}
	}
	m.fresh = map[wallet.TableName]map[int64]int64{}
}

// MaxPageIDs bounds the distinct source ids one page may refer to (ReferencedIDs): a
// destination loads their mappings up front, in one transaction.
const MaxPageIDs = 4096

// ReferencedIDs collects the source ids a page of t refers to, by the table they belong to:
// its own ids, its foreign keys, and a proof request's notify ids. More than MaxPageIDs of
// them is ErrInvalidArgument.
func ReferencedIDs(t *wallet.Table, rows []wallet.Row) (map[wallet.TableName][]int64, error) {
	seen := map[wallet.TableName]map[int64]bool{}
	add := func(table wallet.TableName, v any) {
		id, ok := v.(int64)
		if !ok {
			return
		}
		if seen[table] == nil {
			seen[table] = map[int64]bool{}
		}
		seen[table][id] = true
	}
	for _, r := range rows {
		if t.ID != "" {
			add(t.Name, r[t.Col(t.ID)])
		}
		for _, ref := range t.Refs {
			add(ref.Target, r[t.Col(ref.Column)])
		}
		if t == wallet.ProvenTxReqs {
			notify, _ := r[t.Col("notify")].(string)
			ids, _ := NotifyTransactionIDs(notify)
			for _, id := range ids {
				add(wallet.TableTransactions, id)
			}
		}
	}
	out := map[wallet.TableName][]int64{}
	total := 0
	for table, ids := range seen {
		for id := range ids {
			out[table] = append(out[table], id)
		}
		total += len(ids)
	}
	if total > MaxPageIDs {
		return nil, fmt.Errorf("page references %d distinct ids, more than %d: %w", total, MaxPageIDs, wallet.ErrInvalidArgument)
	}
	return out, nil
}
