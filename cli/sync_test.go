package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/walletsynctest"
	"walletsync/wallet"
)

func TestCLI_SyncThenUnchanged(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dst := filepath.Join(t.TempDir(), "backup.sqlite")
	code, out, stderr := walletsync(t, "sync", "--from", src, "--to", dst, "--max-items", "3")
	if code != 0 || !strings.Contains(out, "completed: full sync") || !strings.Contains(out, "done true") {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = walletsync(t, "sync", "--from", src, "--to", dst, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res syncer.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); code != 0 || err != nil || res.Kind != syncer.KindUnchanged || res.Requests != 1 {
		t.Fatalf("second sync: exit %d, result %+v (%v)", code, res, err)
	}
}

func TestCLI_SyncInterruptStopsAtASafePoint(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildSelf(t, exe)
	src := testkit.SeededWallet(t, localstore.FixtureToolbox, 1)
	dst := filepath.Join(t.TempDir(), "backup.sqlite")
	cmd := exec.Command(exe, "sync", "--from", src, "--to", dst, "--max-items", "5", "--json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	committed, last := 0, ""
	for sc.Scan() {
		last = sc.Text()
		var p syncer.Progress
		if json.Unmarshal([]byte(last), &p) == nil && p.State == syncer.StateCommitted {
			if committed++; committed == 10 {
				cmd.Process.Signal(syscall.SIGINT) // what Ctrl-C sends
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted sync: %v, want exit code 130", err)
	}
	var res syncer.Result
	if err := json.Unmarshal([]byte(last), &res); err != nil || res.State != syncer.StateCancelled {
		t.Fatalf("last line %q: want the cancelled result", last)
	}
	b, err := localstore.Open(context.Background(), dst, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cp, err := b.Checkpoint(context.Background(), res.Checkpoint.Session)
	if err != nil || cp.Seq != res.Checkpoint.Seq || cp.Seq < 10 || cp.Done {
		t.Fatalf("durable checkpoint %+v (%v), reported %+v", cp, err, res.Checkpoint)
	}
}

// TestCLI_SyncRefusesBadOptionsBeforeAnyWork checks that a page limit outside the range the
// flags state, or a user the source lacks, is a usage error (exit 2) that creates no
// destination file.
func TestCLI_SyncRefusesBadOptionsBeforeAnyWork(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero rows", []string{"--max-items", "0"}, "--max-items and --max-bytes must be at least 1"},
		{"zero bytes", []string{"--max-bytes", "0"}, "--max-items and --max-bytes must be at least 1"},
		{"too many rows", []string{"--max-items", "1001"}, "max rows 1001 outside 1..1000"},
		{"negative rows", []string{"--max-items", "-1"}, "max rows -1 outside 1..1000"},
		{"too many bytes", []string{"--max-bytes", "10000001"}, "max bytes 10000001 outside 1..10000000"},
		{"unknown identity", []string{"--identity", "02abcdef"}, "holds no user 02abcdef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := walletsync(t, append([]string{"sync", "--from", src, "--to", filepath.Join(dir, "backup.sqlite")}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, stderr, tc.want)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Fatalf("a refused sync left %v", left)
			}
		})
	}
}

// TestCLI_SyncChainMismatchWritesNothing syncs a test-chain wallet into a main-chain one:
// the typed network error, and the destination as it was.
func TestCLI_SyncChainMismatchWritesNothing(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dst := filepath.Join(t.TempDir(), "main.sqlite")
	s, err := localstore.Create(t.Context(), dst, localstore.CreateOptions{Chain: wallet.ChainMain}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, out, stderr := walletsync(t, "sync", "--from", src, "--to", dst)
	if code != 1 || !strings.Contains(stderr, "chain mismatch: source is test, destination is main") ||
		!strings.Contains(out, "failed: sync, 0 pages") || !strings.Contains(out, "nothing committed at "+dst) {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	s, err = localstore.Open(t.Context(), dst, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if info, err := s.Info(t.Context()); err != nil || len(info.Identities) != 0 {
		t.Fatalf("the destination after a refused sync: %+v (%v)", info.Identities, err)
	}
}

// TestCLI_SyncIntoItsOwnWalletRefused: a --to that is the --from wallet under another name is
// a usage error, and the wallet stays as it was.
func TestCLI_SyncIntoItsOwnWalletRefused(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	before, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "same.sqlite")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := walletsync(t, "sync", "--from", src, "--to", link)
	if code != 2 || !strings.Contains(stderr, "is the wallet --from names") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if now, _ := os.ReadFile(src); string(now) != string(before) {
		t.Fatal("the refused sync changed the wallet")
	}
}

// TestCLI_TwoSyncsIntoOneNewFile starts two `walletsync sync` processes into the same new
// destination at the same moment, 20 times. Every round ends with a destination that
// `wallet check` passes and that holds the source's rows; a run that does not complete fails
// with the other's "held by walletsync process PID". Before creation took the writer lock
// first and stopped renaming over the path, about half the rounds left a malformed file
// while one run still said "completed".
func TestCLI_TwoSyncsIntoOneNewFile(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildSelf(t, exe)
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	for round := range 20 {
		dst := filepath.Join(t.TempDir(), "backup.sqlite")
		var cmds [2]*exec.Cmd
		var outs [2]strings.Builder
		for i := range cmds {
			cmds[i] = exec.Command(exe, "sync", "--from", src, "--to", dst, "--max-items", "50")
			cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		}
		for _, cmd := range cmds {
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		completed := 0
		for i, cmd := range cmds {
			err := cmd.Wait()
			out := outs[i].String()
			switch {
			case err == nil && strings.Contains(out, "completed"):
				completed++
			case err != nil && strings.Contains(out, "held by walletsync process "+strconv.Itoa(cmds[1-i].Process.Pid)):
			default:
				t.Fatalf("round %d: run %d: %v\n%s", round, i, err, out)
			}
		}
		if completed == 0 {
			t.Fatalf("round %d: no run completed", round)
		}
		if code, out, stderr := walletsync(t, "wallet", "check", "--db", dst); code != 0 {
			t.Fatalf("round %d: wallet check: exit %d\n%s%s", round, code, out, stderr)
		}
		if code, out, stderr := walletsync(t, "sync", "--from", src, "--to", dst, "--json"); code != 0 || !strings.Contains(out, `"kind":"unchanged"`) {
			t.Fatalf("round %d: the destination does not hold the source: exit %d\n%s%s", round, code, out, stderr)
		}
	}
}
