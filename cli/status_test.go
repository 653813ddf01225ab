package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/testkit/walletsynctest"
)

// TestCLI_StatusCheck_ExitCodes: `status --check` exits 0 with one OK line while every
// destination is on schedule, and 1 with one line per late or failing destination, each
// naming it and the fix; with nothing to back up it fails as well.
func TestCLI_StatusCheck_ExitCodes(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, []string{"USB disk"}))
	var ahead atomic.Int64
	opts := f.Options()
	opts.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	a, err := agent.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	c := f.Client(t)
	dir := "--data-dir=" + string(f.Dir)
	run := func(id string) api.Task {
		task, err := c.Run(walletsynctest.Wait(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return walletsynctest.WaitTask(t, c, task.ID)
	}
	if task := run("good-1"); task.State != api.TaskSucceeded {
		t.Fatalf("good-1: %+v", task)
	}
	// The broken destination has never run: amber, not red, so the check passes.
	if code, out, stderr := walletsync(t, "status", dir, "--check"); code != 0 || out != "OK: no destination is late or failing (2 checked)\n" {
		t.Fatalf("on schedule: exit %d, %q (%s)", code, out, stderr)
	}
	if task := run("broken-1"); task.State != api.TaskFailed {
		t.Fatalf("broken-1: %+v", task)
	}
	code, out, stderr := walletsync(t, "status", "--check", dir)
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != 1 || len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "failing broken-1: Backups to USB disk (") || !strings.Contains(stderr, "1 of 2 destinations late or failing") {
		t.Fatalf("one failing: exit %d, %q (%s)", code, out, stderr)
	}
	// Two days on, the daily backup wallet is late too (a day and a half is its margin).
	ahead.Store(int64(48 * time.Hour))
	code, out, _ = walletsync(t, "status", "--check", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "late good-1: Backups to Backup wallet (") ||
		!strings.Contains(lines[0], "one is expected every day. It is paused: resume it") || !strings.HasPrefix(lines[1], "failing broken-1: ") {
		t.Fatalf("late and failing: exit %d, %q", code, out)
	}
	if code, out, _ := walletsync(t, "status", dir); code != 0 || !strings.Contains(out, "last good") || !strings.Contains(out, ", LATE, paused") {
		t.Fatalf("status without --check: exit %d, %q", code, out)
	}
}

// TestCLI_StatusCheck_NothingProtected: an agent with no wallet backs nothing up, which a
// monitoring script must hear about.
func TestCLI_StatusCheck_NothingProtected(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	f.StartAgent(t)
	code, out, stderr := walletsync(t, "status", "--check", "--data-dir="+string(f.Dir))
	if code != 1 || !strings.HasPrefix(out, "unprotected: No wallet yet") || !strings.Contains(stderr, "nothing is backed up") {
		t.Fatalf("no wallet: exit %d, %q (%s)", code, out, stderr)
	}
}
