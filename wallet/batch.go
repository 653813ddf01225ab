package wallet

import (
	"fmt"
	"slices"
)

// The destination's half of the sync contract that does not depend on where it stores: the
// checks a batch passes before any work and the compare-and-set on the durable checkpoint.
// localstore (SQLite) and pgstore (PostgreSQL) both commit through these, so that both
// refuse and acknowledge alike; the merge of the page itself is brc40's (brc40.MergePage).

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
