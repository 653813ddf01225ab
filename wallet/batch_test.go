package wallet

import (
	"errors"
	"testing"
	"time"
)

// The compare-and-set every destination runs: the batch committed last is a duplicate,
// a batch expecting the durable sequence applies, anything else is a conflict.
func TestBatch_Against(t *testing.T) {
	key := SessionKey{SourceStorage: "src", IdentityKey: "id"}
	b := Batch{Expect: 4, Checkpoint: Checkpoint{Session: key, Seq: 5, Mode: ModeFull, Table: 3, Cursor: "c", View: "v"}}
	moved := b.Checkpoint
	moved.Cursor = "other"
	for _, tc := range []struct {
		name    string
		cur     Checkpoint
		dup     bool
		wantErr error
	}{
		{"applies", Checkpoint{Session: key, Seq: 4}, false, nil},
		{"duplicate, stamped later", func() Checkpoint { c := b.Checkpoint; c.UpdatedAt = time.Now(); return c }(), true, nil},
		{"same sequence, another position", moved, false, ErrCheckpointConflict},
		{"behind", Checkpoint{Session: key, Seq: 2}, false, ErrCheckpointConflict},
		{"fresh destination", Checkpoint{Session: key}, false, ErrCheckpointConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dup, err := b.Against(tc.cur)
			if dup != tc.dup || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Against = %v, %v; want %v, %v", dup, err, tc.dup, tc.wantErr)
			}
		})
	}
}

// A page's id map remembers what it loaded and what it made, refuses to map an id twice
// differently, and hands over only the new mappings until they are written.
func TestPageIDs_FreshUntilFlushed(t *testing.T) {
	m := NewPageIDs()
	m.Learn(TableTransactions, 1, 10)
	if err := m.RecordID(Transactions, 1, 10); err != nil {
		t.Fatalf("recording a loaded mapping again: %v", err)
	}
	if err := m.RecordID(Transactions, 2, 20); err != nil {
		t.Fatal(err)
	}
	var conflict *IDMapConflictError
	if err := m.RecordID(Transactions, 2, 21); !errors.As(err, &conflict) {
		t.Fatalf("a second local id for one source id: %v", err)
	}
	if f := m.Fresh(); len(f) != 1 || len(f[TableTransactions]) != 1 || f[TableTransactions][2] != 20 {
		t.Fatalf("fresh %v, want only 2 -> 20", f)
	}
	m.Flushed()
	if id, ok := m.LocalID(Transactions, 2); !ok || id != 20 || len(m.Fresh()) != 0 {
		t.Fatalf("after Flushed: %d, %v, fresh %v", id, ok, m.Fresh())
	}
}

// ReferencedIDs bounds the ids one page may refer to.
func TestReferencedIDs_Bounded(t *testing.T) {
	rows := make([]Row, MaxPageIDs+1)
	for i := range rows {
		rows[i] = make(Row, len(TxLabels.Columns))
		rows[i][TxLabels.Col("txLabelId")] = int64(i)
	}
	if _, err := ReferencedIDs(TxLabels, rows[:MaxPageIDs]); err != nil {
		t.Fatal(err)
	}
	if _, err := ReferencedIDs(TxLabels, rows); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%d ids: %v, want ErrInvalidArgument", len(rows), err)
	}
}
