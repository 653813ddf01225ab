package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/localstore"
)

// testWait bounds a test's waits, so that a broken contract fails the test instead of
// hanging it; nothing is asserted about how long anything takes. Generous, as agent's
// waitCtx: under the race detector on a busy two-core machine a sync takes tens of seconds.
func testWait(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// agentFolder is a data folder and config file in a new temp folder.
type agentFolder struct {
	dir    agent.DataDir
	config string
}

// newAgentFolder returns a fresh folder whose config holds cfg (the default config when
// cfg is nil).
func newAgentFolder(t testing.TB, cfg *agent.Config) agentFolder {
	t.Helper()
	root := t.TempDir()
	f := agentFolder{dir: agent.DataDir(filepath.Join(root, "data")), config: filepath.Join(root, "config.json")}
	if cfg != nil {
		if err := agent.SaveConfig(f.config, *cfg); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// options are the agent options of f.
func (f agentFolder) options() agent.Options {
	return agent.Options{Dir: f.dir, ConfigPath: f.config}
}

// startAgent runs an agent on f as the service would, closed at cleanup.
func (f agentFolder) startAgent(t testing.TB) *agent.Agent {
	t.Helper()
	a, err := agent.Start(t.Context(), f.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// client returns an API client for the agent running on f.
func (f agentFolder) client(t testing.TB) *agent.Client {
	t.Helper()
	e, err := f.dir.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	return agent.NewClient(e)
}

// endpoint is f's endpointFunc.
func (f agentFolder) endpoint(context.Context) (agent.Endpoint, error) { return f.dir.Endpoint() }

// walletConfig returns a config that backs up a new small wallet to a backup wallet file
// for each name in good (ids good-1, good-2...) and to one in a folder that does not exist,
// whose every run fails, for each name in broken (broken-1...). Every destination is
// paused until resumed: the agent runs a destination that never succeeded as soon as it
// starts, and retries a failed one, which would race with what a test asks for by hand
// (a run asked for by hand still runs).
func walletConfig(t *testing.T, good, broken []string) *agent.Config {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.Wallets = []agent.WalletRef{{Path: seededWallet(t, localstore.FixtureSmall)}}
	add := func(id, name, path string) {
		cfg.Destinations = append(cfg.Destinations, agent.Destination{ID: id, Name: name, Kind: agent.DestinationSQLite, Path: path,
			Schedule: agent.Schedule{Kind: agent.ScheduleDaily, At: "04:00"}, Pause: &agent.Pause{}})
	}
	for i, name := range good {
		add(fmt.Sprintf("good-%d", i+1), name, filepath.Join(t.TempDir(), "backup.sqlite"))
	}
	for i, name := range broken {
		add(fmt.Sprintf("broken-%d", i+1), name, filepath.Join(t.TempDir(), "unplugged", "backup.sqlite"))
	}
	return &cfg
}

// waitTask polls task id until it ends and returns it.
func waitTask(t testing.TB, c *agent.Client, id string) agent.Task {
	t.Helper()
	ctx := testWait(t)
	for {
		task, err := c.Task(ctx, id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if task.State.Terminal() {
			return task
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s did not end: %+v", id, task)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// recordingNotifier remembers the notifications it is asked to show.
type recordingNotifier struct {
	shown chan Notification
}

func newRecordingNotifier() *recordingNotifier {
	return &recordingNotifier{shown: make(chan Notification, 16)}
}

func (n *recordingNotifier) Notify(_ context.Context, note Notification) error {
	n.shown <- note
	return nil
}

// next returns the next notification shown.
func (n *recordingNotifier) next(t testing.TB) Notification {
	t.Helper()
	select {
	case note := <-n.shown:
		return note
	case <-testWait(t).Done():
		t.Fatal("no notification")
	}
	return Notification{}
}

// fakeWindow is a Window whose dialogs answer with reply and whose geometry is geometry.
type fakeWindow struct {
	mu       sync.Mutex
	reply    string
	dialogs  []FileDialog
	folders  []string
	geometry WindowState
	placed   []WindowState
	raised   int
}

func (w *fakeWindow) OpenFile(_ context.Context, d FileDialog) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dialogs = append(w.dialogs, d)
	return w.reply, nil
}

func (w *fakeWindow) SaveFile(_ context.Context, d FileDialog) (string, error) {
	return w.OpenFile(context.Background(), d)
}

func (w *fakeWindow) ChooseFolder(_ context.Context, title string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.folders = append(w.folders, title)
	return w.reply, nil
}

func (w *fakeWindow) Geometry(context.Context) WindowState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.geometry
}

func (w *fakeWindow) Raise(context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raised++
}

func (w *fakeWindow) Place(_ context.Context, s WindowState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.placed = append(w.placed, s)
}
