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
