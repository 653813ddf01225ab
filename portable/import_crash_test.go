package portable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/wallet"
)

// The crash tests run an import in a child process (crash.Run) that kills itself with
// SIGKILL at one durable boundary; the parent then checks what the wallet holds, runs the
// same import again, and checks that the wallet ends as one clean import leaves it, with
// nothing left in the staging folder.

const (
	// importCommitMarker is the line a counting child prints at each durable page commit,
	// and importEndMarker starts the line it prints when its import ends without a crash.
	importCommitMarker = "page committed"
	importEndMarker    = "import ended:"
	// hookCommitted and hookRowsWritten are a page commit's boundaries in the wallet
	// (localstore.Options.CommitHook): durable but unacknowledged, and written but not
	// committed.
	hookCommitted   = "page-committed"
	hookRowsWritten = "page-rows-written"
)

// importCrashTask is what the parent asks of a child: import File into Target (and die at
// the boundary crash.Run names).
type importCrashTask struct {
	File, Target, Staging string
	Mode                  wallet.ImportMode
	// Count makes the child print importCommitMarker at each durable page commit, and end
	// normally (exit 0, after importEndMarker) when the import ends before its Point.
	Count bool
}

// importCrashChild runs the task and never returns: it dies by SIGKILL at k's boundary, or
// fails with a message the parent reports.
func importCrashChild(k *crash.Killer, task []byte) {
	var c importCrashTask
	if err := json.Unmarshal(task, &c); err != nil {
		crash.Fail("bad task: %v", err)
	}
	reach := func(point string) { k.Reach(point, nil) }
	walletOpts := localstore.Options{CommitHook: func(point string) {
		switch point {
		case localstore.HookRowsWritten:
			reach(hookRowsWritten)
		case localstore.HookCommitted:
			if c.Count {
				fmt.Println(importCommitMarker)
			}
			reach(hookCommitted)
		}
	}}
	open := Opener(func(ctx context.Context, path string, chain wallet.Chain) (*localstore.Store, error) {
		opts := localstore.Options{}
		if path == c.Target {
			opts = walletOpts
		}
		if chain == "" {
			return localstore.Open(ctx, path, opts)
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, opts)
	})
	opts := ImportOptions{StagingDir: c.Staging, Open: open, Mode: c.Mode, Sync: syncer.Options{MaxRows: 2}, hook: reach}
	_, err := Import(context.Background(), c.File, importPassword, Target{Path: c.Target}, opts, nil)
	if c.Count {
		fmt.Println(importEndMarker, err)
		os.Exit(0)
	}
	crash.Fail("finished without crashing: %v", err)
}

// TestImport_CrashAtEveryBoundary kills real import processes during staging, after
// validation (staging complete, journal "staged"), mid-merge (a page written but not
// committed, and a page committed but not acknowledged), and after the journal marks done;
// and a restore into a new file during staging and after it is in place. Each time the
// wallet holds either nothing of the import or a state the journal names, and the rerun ends
// exactly where a clean import ends.
func TestImport_CrashAtEveryBoundary(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	merged := cleanMerge(t, file, identity)
	restored := readWallet(t, src, identity)
	sum, err := Verify(context.Background(), file, importPassword, importOptions(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode  wallet.ImportMode
		at    string
		n     int
		state wallet.ImportState // the journal after the crash; "" for none
	}{
		{wallet.ImportMerge, hookStagingRow, 40, ""},
		{wallet.ImportMerge, hookStaged, 1, wallet.ImportStaged},
		{wallet.ImportMerge, hookRowsWritten, 6, wallet.ImportMerging},
		{wallet.ImportMerge, hookCommitted, 9, wallet.ImportMerging},
		{wallet.ImportMerge, hookDone, 1, wallet.ImportDone},
		{wallet.ImportRestore, hookStagingRow, 40, ""},
		{wallet.ImportRestore, hookDone, 1, wallet.ImportDone},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.mode, tc.at), func(t *testing.T) {
			t.Parallel()
			target := filepath.Join(t.TempDir(), "restored.sqlite")
			want := restored
			if tc.mode == wallet.ImportMerge {
				target, want = partialWallet(t), merged
			}
			var before compare.Wallet
			if tc.mode == wallet.ImportMerge {
				before = settledWallet(t, target, identity)
			}
			opts := importOptions(t)
			crash.Run(t, crash.Point{At: tc.at, N: tc.n}, importCrashTask{File: file, Target: target, Staging: opts.StagingDir, Mode: tc.mode})

			if _, err := os.Stat(target); err != nil {
				if tc.mode != wallet.ImportRestore || tc.state != "" {
					t.Fatalf("after the crash: %v", err)
				}
			} else {
				rec, err := journalEntry(t, target, sum.Digest)
				switch {
				case tc.state == "" && !errors.Is(err, wallet.ErrNotFound):
					t.Fatalf("journal after the crash: %+v, %v; want none", rec, err)
				case tc.state != "" && (err != nil || rec.State != tc.state):
					t.Fatalf("journal after the crash: %+v, %v; want %s", rec, err, tc.state)
				}
				if tc.state == "" || tc.state == wallet.ImportStaged {
					requireSameWallet(t, settledWallet(t, target, identity), before)
				}
			}

			opts.Mode = tc.mode
			_, err := Import(context.Background(), file, importPassword, Target{Path: target}, opts, nil)
			if tc.state == wallet.ImportDone {
				if !errors.Is(err, ErrAlreadyImported) {
					t.Fatalf("rerun after done: %v, want ErrAlreadyImported", err)
				}
			} else if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			got := settledWallet(t, target, identity)
			if tc.mode == wallet.ImportRestore {
				got = readWallet(t, target, identity)
			}
			requireSameWallet(t, got, want)
			if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
				t.Fatalf("the staging folder keeps %v", names)
			}
		})
	}
}
