package syncer_test

import (
	"context"
	"errors"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

func TestJournalNeed(t *testing.T) {
	for _, tc := range []struct {
		name string
		cp   wallet.Checkpoint
		want int64
		ok   bool
	}{
		{"NothingAtTheDestination", wallet.Checkpoint{}, 0, false},
		{"Finished", wallet.Checkpoint{Seq: 9, Mode: wallet.ModeIncremental, Since: 40, HighWater: 70, Done: true}, 70, true},
		{"UnfinishedFull", wallet.Checkpoint{Seq: 3, Mode: wallet.ModeFull, HighWater: 70}, 70, true},
		{"UnfinishedIncremental", wallet.Checkpoint{Seq: 3, Mode: wallet.ModeIncremental, Since: 40, HighWater: 70}, 40, true},
		{"UnfinishedCatchUp", wallet.Checkpoint{Seq: 3, Mode: wallet.ModeFull, HighWater: 70, CatchUpHighWater: 90}, 70, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := syncer.JournalNeed(tc.cp); got != tc.want || ok != tc.ok {
				t.Fatalf("JournalNeed = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestJournalNeed_PruningThroughItKeepsRunsIncremental: a source pruned through what its
// destination needs still syncs incrementally (finished run) or resumes at the checkpoint
// (unfinished run); pruned one entry further, the run falls back to a full traversal, and
// either way the destination ends equal to the source.
func TestJournalNeed_PruningThroughItKeepsRunsIncremental(t *testing.T) {
	ctx := context.Background()
	errStop := errors.New("stop after two commits")
	stopAfterTwo := func() syncer.Options {
		commits := 0
		return syncer.Options{MaxRows: 2, Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				if commits++; commits == 2 {
					return errStop
				}
			}
			return nil
		}}
	}
	for _, tc := range []struct {
		name     string
		finished bool // the first run ends, else it stops midway
		further  int64
		wantKind syncer.Kind
		wantFrom syncer.Resume
	}{
		{"FinishedThroughTheNeed", true, 0, syncer.KindIncremental, ""},
		{"FinishedBeyondTheNeed", true, 1, syncer.KindFull, ""},
		{"UnfinishedThroughTheNeed", false, 0, syncer.KindFull, syncer.ResumeCheckpoint},
		{"UnfinishedBeyondTheNeed", false, 1, syncer.KindFull, syncer.ResumeFirstTable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, id := seeded(t, localstore.FixtureSmall, 3)
			dst := newStore(t, wallet.ChainTest)
			if tc.finished {
				push(t, src, dst, id, syncer.Options{})
			} else {
				opts := stopAfterTwo()
				opts.Active = wallet.KeepSourceActive
				if _, err := syncer.Run(ctx, src, dst, id, opts); !errors.Is(err, errStop) {
					t.Fatalf("first run: %v, want it stopped", err)
				}
			}
			for i := range 3 { // changes the next run must carry
				if err := src.AddLabel(ctx, id, int64(i+1), "after the first run"); err != nil {
					t.Fatal(err)
				}
			}
			cp, err := dst.Checkpoint(ctx, wallet.SessionKey{SourceStorage: mustSettings(t, src).StorageIdentityKey, IdentityKey: id})
			if err != nil {
				t.Fatal(err)
			}
			need, ok := syncer.JournalNeed(cp)
			if !ok {
				t.Fatalf("no need for checkpoint %+v", cp)
			}
			for more := true; more; {
				if _, more, err = src.PruneJournal(ctx, need+tc.further, 1000); err != nil {
					t.Fatal(err)
				}
			}
			res := push(t, src, dst, id, syncer.Options{})
			if res.Kind != tc.wantKind || res.Resumed != tc.wantFrom {
				t.Fatalf("run after pruning through %d: kind %s, resumed %q; want %s, %q", need+tc.further, res.Kind, res.Resumed, tc.wantKind, tc.wantFrom)
			}
			mustEqual(t, src, dst, id)
		})
	}
}

func mustSettings(t *testing.T, s *localstore.Store) wallet.Settings {
	t.Helper()
	st, err := s.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
