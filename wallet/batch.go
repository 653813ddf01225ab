package wallet

import (
	"fmt"
	"slices"
)

// The destination's half of the sync contract that does not depend on where it stores: the
// checks a batch passes before any work, the compare-and-set on the durable checkpoint, and
// the ids a page refers to. localstore (SQLite) and pgstore (PostgreSQL) both commit
// through these, so that both refuse and acknowledge alike.

// MaxPageIDs bounds the distinct source ids one page may refer to (ReferencedIDs): a
// destination loads their mappings up front, in one transaction.
const MaxPageIDs = 4096

// Check refuses a malformed batch before any work (ErrInvalidArgument): no session, a
// sequence that does not follow Expect, a table position outside SyncOrder, a page of a
// table after the position (a catch-up page belongs to a table before it, never after), a
// catch-up table beyond the position, an unknown table, or a row of the wrong width.
func (b Batch) Check() error {
	cp := b.Checkpoint
	switch {
	case cp.Session.SourceStorage == "" || cp.Session.IdentityKey == "":
		return fmt.Errorf("batch without a session: %w", ErrInvalidArgument)
	case cp.Seq != b.Expect+1:
		return fmt.Errorf("batch sequence %d does not follow %d: %w", cp.Seq, b.Expect, ErrInvalidArgument)
	case cp.Table < 0 || cp.Table >= len(SyncOrder):
		return fmt.Errorf("batch table position %d: %w", cp.Table, ErrInvalidArgument)
	}
	t, err := LookupTable(b.Page.Table)
	if err != nil {
		return err
	}
	if pos := slices.Index(SyncOrder, t); len(b.Page.Rows) > 0 && pos > cp.Table {
		return fmt.Errorf("batch of %s rows at table position %d: %w", t.Name, cp.Table, ErrInvalidArgument)
	}
	if cp.CatchUpTable < 0 || cp.CatchUpTable > cp.Table {
		return fmt.Errorf("batch catch-up table %d beyond its position %d: %w", cp.CatchUpTable, cp.Table, ErrInvalidArgument)
	}
	for _, r := range b.Page.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("%s row of %d values: %w", t.Name, len(r), ErrInvalidArgument)
		}
	}
	return nil
}

// Against is the compare-and-set a destination runs inside its commit transaction, with
// cur the session's durable checkpoint read (and, where other processes commit too, locked)
// in that transaction: duplicate is true when cur is the very checkpoint b commits (the
// batch committed last, sent again after a lost acknowledgement: acknowledge cur, apply
// nothing); otherwise b applies only when cur.Seq is b.Expect, else ErrCheckpointConflict.
func (b Batch) Against(cur Checkpoint) (duplicate bool, err error) {
	if cur.Seq == b.Checkpoint.Seq && cur.SamePosition(b.Checkpoint) {
		return true, nil
	}
	if cur.Seq != b.Expect {
		return false, fmt.Errorf("session %s: expected sequence %d, the destination holds %d: %w", b.Checkpoint.Session, b.Expect, cur.Seq, ErrCheckpointConflict)
	}
	return false, nil
}

// SamePosition reports whether cp and o describe the same committed batch: every field but
// UpdatedAt (which the destination stamps) is equal.
func (cp Checkpoint) SamePosition(o Checkpoint) bool {
	o.UpdatedAt = cp.UpdatedAt
	return cp == o
}

// ReferencedIDs collects the source ids a page of t refers to, by the table they belong to:
// its own ids, its foreign keys, and a proof request's notify ids. More than MaxPageIDs of
// them is ErrInvalidArgument.
func ReferencedIDs(t *Table, rows []Row) (map[TableName][]int64, error) {
	seen := map[TableName]map[int64]bool{}
	add := func(table TableName, v any) {
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
		if t == ProvenTxReqs {
			notify, _ := r[t.Col("notify")].(string)
			ids, _ := NotifyTransactionIDs(notify)
			for _, id := range ids {
				add(TableTransactions, id)
			}
		}
	}
	out := map[TableName][]int64{}
	total := 0
	for table, ids := range seen {
		for id := range ids {
			out[table] = append(out[table], id)
		}
		total += len(ids)
	}
	if total > MaxPageIDs {
		return nil, fmt.Errorf("page references %d distinct ids, more than %d: %w", total, MaxPageIDs, ErrInvalidArgument)
	}
	return out, nil
}
