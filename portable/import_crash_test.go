package portable

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"walletsync/internal/logical"
	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// The crash tests run an import in a child process (this test binary, see TestMain) that
// kills itself with SIGKILL at one durable boundary; the parent then checks what the wallet
// holds, runs the same import again, and checks that the wallet ends as one clean import
// leaves it, with nothing left in the staging folder.

const (
	// importCrashEnv turns the test binary into a crash child; its value is the child's task.
	importCrashEnv = "WALLETSYNC_TEST_IMPORT_CRASH"
	// importCrashMarker starts the line a child prints just before it kills itself.
	importCrashMarker = "crashing at"
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

// importCrashTask is what the parent asks of a child: import File into Target and die at
// the Nth passing of At.
type importCrashTask struct {
	File, Target, Staging string
	Mode                  wallet.ImportMode
	At                    string
	N                     int
	// Count makes the child print importCommitMarker at each durable page commit, and end
	// normally (exit 0, after importEndMarker) when the import ends before the Nth At.
	Count bool
}

// importCrashChild runs the task and never returns: it dies by SIGKILL at the boundary, or
// exits with a message the parent reports.
func importCrashChild(task string) {
	var c importCrashTask
	if err := json.Unmarshal([]byte(task), &c); err != nil {
		fmt.Println("bad task:", err)
		os.Exit(2)
	}
	hits := 0
	reach := func(point string) {
		if point != c.At {
			return
		}
		if hits++; hits < c.N {
			return
		}
		fmt.Println(importCrashMarker, point) // os.Stdout is unbuffered: the line is out before the kill
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		panic("still running after SIGKILL")
	}
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
	fmt.Println("finished without crashing:", err)
	os.Exit(1)
}

// runImportCrash runs one crash child and waits for it to die by SIGKILL.
func runImportCrash(t *testing.T, task importCrashTask) {
	t.Helper()
	b, _ := json.Marshal(task)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), importCrashEnv+"="+string(b))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL ||
		len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], importCrashMarker) {
		t.Fatalf("the child did not die at %s #%d: %v\n%s\n%s", task.At, task.N, err, strings.Join(lines, "\n"), stderr.String())
	}
}

// TestImport_CrashAtEveryBoundary kills real import processes during staging, after
// validation (staging complete, journal "staged"), mid-merge (a page written but not
// committed, and a page committed but not acknowledged), and after the journal marks done;
// and a restore into a new file during staging and after it is in place. Each time the
// wallet holds either nothing of the import or a state the journal names, and the rerun ends
// exactly where a clean import ends.
func TestImport_CrashAtEveryBoundary(t *testing.T) {
	src, identity := mustStore(t, localstore.FixtureSmall, smallSeed)
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
			var before logical.Wallet
			if tc.mode == wallet.ImportMerge {
				before = settledWallet(t, target, identity)
			}
			opts := importOptions(t)
			runImportCrash(t, importCrashTask{File: file, Target: target, Staging: opts.StagingDir, Mode: tc.mode, At: tc.at, N: tc.n})

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
