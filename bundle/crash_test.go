package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
)

// The crash tests run a create or a restore in a child process (crash.Run) that kills
// itself with SIGKILL at one durable step; the parent then opens the wallet as the next
// walletsync start would and checks that it is the old wallet or the new one, whole, with
// nothing of the interrupted work left beside it.

// crashTask is what the parent asks of a child (which dies at the step crash.Run names).
type crashTask struct {
	// Op: "create" (Wallet into Bundle), "restore" (Bundle into Wallet), or "dirty" (write a
	// label into Wallet and die with it in the WAL, so that the wallet a restore replaces has
	// a -wal beside it).
	Op     string
	Wallet string
	Bundle string
}

// crashChild runs task and never returns: it dies by SIGKILL at k's step, or fails with a
// message the parent reports.
func crashChild(k *crash.Killer, task []byte) {
	var c crashTask
	if err := json.Unmarshal(task, &c); err != nil {
		crash.Fail("bad task: %v", err)
	}
	die := func(point string) { k.Reach(point, nil) }
	ctx := context.Background()
	var err error
	switch c.Op {
	case "dirty":
		var s *localstore.Store
		if s, err = localstore.Open(ctx, c.Wallet, localstore.Options{}); err == nil {
			var info localstore.Info
			if info, err = s.Info(ctx); err == nil {
				if err = s.AddLabel(ctx, info.Identities[0].IdentityKey, 1, "in the wal"); err == nil {
					die("dirty")
				}
			}
		}
	case "create":
		var s *localstore.Store
		if s, err = localstore.Open(ctx, c.Wallet, localstore.Options{}); err == nil {
			_, err = Create(ctx, s, c.Bundle, CreateOptions{Hook: die})
		}
	case "restore":
		_, err = Restore(ctx, c.Bundle, c.Wallet, RestoreOptions{Hook: die})
	}
	if err != nil {
		crash.Fail("%s: %v", c.Op, err)
	}
	crash.Fail("finished without reaching %s", k.Point)
}

// runCrashChild runs task in a child that dies at the step at.
func runCrashChild(t *testing.T, task crashTask, at string) {
	t.Helper()
	crash.Run(t, crash.Point{At: at, N: 1}, task)
}

// TestRestore_SurvivesSIGKILL kills a restoring process at every durable step of the swap
// and opens the wallet as the next start does: before the marker is durable the wallet is the
// old one (with what its -wal held); from the marker on, the restore is carried through and
// it is the new one. Either way it is whole, and no staged file, old copy or marker remains.
func TestRestore_SurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	bundleDir := mustCreate(t, small.copyTo(t, base, "new.sqlite"), base, "bundle")
	newDigests := compare.Digests(t, filepath.Join(base, "new.sqlite"))
	old := small.copyTo(t, base, "old.sqlite")
	s := openStore(t, old)
	if _, err := localstore.Seed(ctx, s, localstore.FixtureSmall, localstore.SeedOptions{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for _, c := range []struct {
		at      string
		wantOld bool
	}{
		{localstore.HookBeforeStage, true},
		{localstore.HookStaged, true},
		{localstore.HookMarked, false},
		{localstore.HookSwapped, false},
		{localstore.HookOldRemoved, false},
	} {
		t.Run(c.at, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target := filepath.Join(dir, "wallet.sqlite")
			if err := safefile.CopyNew(old, target); err != nil {
				t.Fatal(err)
			}
			runCrashChild(t, crashTask{Op: "dirty", Wallet: target}, "dirty")
			oldDigests := digestsWithWAL(t, target)
			if oldDigests["tx_labels"] == compare.Digests(t, old)["tx_labels"] {
				t.Fatal("the dirty child's label is not in the old wallet")
			}

			runCrashChild(t, crashTask{Op: "restore", Wallet: target, Bundle: bundleDir}, c.at)
			s, err := localstore.Open(ctx, target, localstore.Options{})
			if err != nil {
				t.Fatalf("open after the kill: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want, which := newDigests, "new"
			if c.wantOld {
				want, which = oldDigests, "old"
			}
			compare.Same(t, "wallet after a kill at "+c.at+" (want the "+which+" one)", compare.Digests(t, target), want)
			if l := leftovers(target); len(l) > 0 {
				t.Errorf("recovery left %v", l)
			}
		})
	}
}

// digestsWithWAL digests a wallet as it stands with its -wal, from a copy, so that the
// wallet's own files stay exactly as a crash left them.
func digestsWithWAL(t *testing.T, path string) map[string]string {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "copy.sqlite")
	for _, suffix := range []string{"", "-wal"} {
		if err := safefile.CopyNew(path+suffix, scratch+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no -wal beside the dirty wallet (checkpointed before the kill)")
	}
	return compare.Digests(t, scratch)
}

// TestCreate_SurvivesSIGKILL kills a process making a bundle at every step: the bundle folder
// is absent until the final rename and whole (it verifies) after it, and the wallet it was
// made from is unchanged.
func TestCreate_SurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	for _, at := range []string{HookTempCreated, HookSnapshotted, HookCompressed, HookManifested, HookRenamed} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w := small.copyTo(t, dir, "wallet.sqlite")
			before := compare.Digests(t, w)
			out := filepath.Join(dir, "bundle")
			runCrashChild(t, crashTask{Op: "create", Wallet: w, Bundle: out}, at)
			_, err := os.Lstat(out)
			if at == HookRenamed {
				if _, err := Verify(context.Background(), out); err != nil {
					t.Fatalf("the bundle renamed into place does not verify: %v", err)
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a kill at %s left %s: %v", at, out, err)
			}
			s := openStore(t, w)
			s.Close()
			compare.Same(t, "wallet after a kill during create", compare.Digests(t, w), before)
		})
	}
}
