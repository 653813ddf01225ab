package cli

import (
	"context"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/testkit/walletsynctest"
)

// TestCLI_RunWait runs a destination with --wait: a good one exits 0 with the summary of
// what it copied, a broken one (its folder is missing) exits 1 with the failure in the
// agent's plain words and the hint, never the error chain alone.
func TestCLI_RunWait(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, []string{"Unplugged disk"}))
	f.StartAgent(t)
	dir := "--data-dir=" + string(f.Dir)
	tests := []struct {
		name   string
		args   []string
		code   int
		out    []string
		stderr []string
	}{
		{"succeeds", []string{"run", "good-1", "--wait", dir}, 0,
			[]string{"task ", "sync good-1", "succeeded: sync good-1,", "rows ("}, nil},
		{"fails", []string{"run", dir, "--wait", "broken-1"}, 1,
			[]string{"failed: sync broken-1 after"}, []string{"sync broken-1 failed: ", "unplugged", "does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := walletsync(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %q %q", code, tt.code, out, stderr)
			}
			for _, want := range tt.out {
				if !strings.Contains(out, want) {
					t.Errorf("output %q lacks %q", out, want)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
		})
	}
}

// TestCLI_TasksNewestFirstWithHeader lists two finished runs: a header names the columns,
// the newer run comes first, each row has its start time, duration and outcome, and a
// finished task shows how it ended rather than the last step it was on.
func TestCLI_TasksNewestFirstWithHeader(t *testing.T) {
	f := walletsynctest.NewFolder(t, walletsynctest.WalletConfig(t, []string{"Backup wallet"}, []string{"Unplugged disk"}))
	f.StartAgent(t)
	c := f.Client(t)
	first, err := c.Run(walletsynctest.Wait(t), "good-1")
	if err != nil {
		t.Fatal(err)
	}
	walletsynctest.WaitTask(t, c, first.ID)
	second, err := c.Run(walletsynctest.Wait(t), "broken-1")
	if err != nil {
		t.Fatal(err)
	}
	ended := walletsynctest.WaitTask(t, c, second.ID)

	code, out, stderr := walletsync(t, "tasks", "--data-dir="+string(f.Dir))
	if code != 0 {
		t.Fatalf("tasks: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "STARTED ") || !strings.Contains(lines[0], "TOOK") || !strings.Contains(lines[0], "OUTCOME") {
		t.Fatalf("no header: %q", out)
	}
	at := func(id string) int {
		for i, l := range lines {
			if strings.Contains(l, id) {
				return i
			}
		}
		t.Fatalf("tasks %q lacks %s", out, id)
		return -1
	}
	newer, older := lines[at(second.ID)], lines[at(first.ID)]
	if at(second.ID) > at(first.ID) {
		t.Errorf("older task listed first:\n%s", out)
	}
	if !strings.Contains(older, first.StartedAt.Local().Format("2006-01-02 15:04")) || !strings.HasSuffix(older, "succeeded") {
		t.Errorf("succeeded row %q: want its start time and a bare outcome (no stale step)", older)
	}
	if !strings.Contains(newer, "failed: "+ended.Message) || ended.Message == "" {
		t.Errorf("failed row %q: want the failure in words %q", newer, ended.Message)
	}
	for _, task := range []api.Task{ended} {
		if task.Detail != "" {
			t.Errorf("ended task keeps the step it was on: %q", task.Detail)
		}
	}
}

// TestTaskDuration_Rounds says a duration as the tasks list does.
func TestTaskDuration_Rounds(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		task api.Task
		want string
	}{
		{api.Task{State: api.TaskQueued}, "-"},
		{api.Task{State: api.TaskSucceeded, StartedAt: start, FinishedAt: start.Add(1234 * time.Millisecond)}, "1.2s"},
		{api.Task{State: api.TaskSucceeded, StartedAt: start, FinishedAt: start.Add(43210 * time.Microsecond)}, "43ms"},
		{api.Task{State: api.TaskFailed, StartedAt: start, FinishedAt: start.Add(90*time.Second + 400*time.Millisecond)}, "1m30s"},
		{api.Task{State: api.TaskRunning, StartedAt: start}, "5s"},
	}
	for _, tt := range tests {
		if got := taskDuration(tt.task, start.Add(5*time.Second)); got != tt.want {
			t.Errorf("taskDuration(%+v) = %q, want %q", tt.task, got, tt.want)
		}
	}
}

// TestCLI_RunWaitStoppedServer watches a run to a storage server where nothing listens:
// the watch prints the agent's "cannot reach HOST (attempt N, next try in …)" (a line of
// its own off a terminal), and the command exits 1 with the failure in words once the
// agent's bound (2 s here) has passed.
func TestCLI_RunWaitStoppedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg := walletsynctest.WalletConfig(t, nil, nil) // its wallet is FixtureIdentity(1)'s
	cfg.Destinations = append(cfg.Destinations, api.Destination{ID: "server", Name: "Storage server", Kind: api.DestinationStorageServer,
		Path: dead, Schedule: api.Schedule{Kind: api.ScheduleDaily, At: "04:00"}, Pause: &api.Pause{}})
	f := walletsynctest.NewFolder(t, cfg)
	if err := f.Dir.Ensure(); err != nil {
		t.Fatal(err)
	}
	// The agent keeps a storage server's signing key in its secrets as storage-key-<id>.
	if err := agent.NewSecrets(f.Dir.SecretsPath()).Set("storage-key-server", api.NewSecret(hex.EncodeToString(localstore.FixtureRootKey(1)))); err != nil {
		t.Fatal(err)
	}
	opts := f.Options()
	opts.ServerGiveUp = 2 * time.Second
	a, err := agent.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })

	code, out, stderr := walletsync(t, "run", "server", "--wait", "--data-dir="+string(f.Dir))
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if host := strings.TrimPrefix(dead, "http://"); !strings.Contains(out, "\ncannot reach "+host+" (attempt ") || !strings.Contains(out, ", next try in ") {
		t.Errorf("output %q does not say the server cannot be reached", out)
	}
	if want := "walletsync run: sync server failed: Cannot reach " + dead + ": connection refused; gave up after 2 s."; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q; want it to start %q", stderr, want)
	}
}
