package localstore

import (
	"context"
	"testing"

	"walletsync/wallet"
)

// TestStats_ViewHoldsBackCheckpoint: frames committed while a snapshot view is open stay in
// the WAL through a checkpoint, and Stats says how many.
func TestStats_ViewHoldsBackCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := mustCreate(t, Options{})
	identity := mustSeed(t, s, FixtureSmall, 1)
	actions, err := s.ListActions(ctx, identity, wallet.ActionQuery{Limit: 1})
	if err != nil || len(actions) == 0 {
		t.Fatalf("actions %v: %v", actions, err)
	}
	s.walCP.checkpoint(ctx) // nothing held back yet
	before := s.Stats()
	if before.CheckpointHeldBack != 0 || before.Checkpoints < 1 || before.WALBytes <= 0 {
		t.Fatalf("before any view: %+v", before)
	}

	v, err := s.OpenSnapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := s.AddLabel(ctx, identity, actions[0].TransactionID, "held"); err != nil {
		t.Fatal(err)
	}
	s.walCP.checkpoint(ctx)
	after := s.Stats()
	// The view reads on its own connection, not one of the foreground's readers.
	if after.ReadPool.InUse != 0 {
		t.Errorf("an open view holds %d of the readers: %+v", after.ReadPool.InUse, after.ReadPool)
	}
	if after.CheckpointHeldBack < 1 || after.Checkpoints <= before.Checkpoints {
		t.Errorf("a commit under an open view: %+v, before %+v", after, before)
	}
}
