// Package walletsynctest holds what the tests of the command line, the desktop shell and the
// window share: agent data folders with a config (its wallet from testkit.SeededWallet), a
// Notifier that records, and the walletsync binary built for tests that need a real child
// process. Only tests import it.
package walletsynctest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/testkit"
)

// Wait bounds a test's waits, so that a broken contract fails the test instead of
// hanging it; nothing is asserted about how long anything takes. Generous, as agent's
// waitCtx: under the race detector on a busy two-core machine a sync takes tens of seconds.
func Wait(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Folder is a data folder and config file in a new temp folder.
type Folder struct {
	Dir    agent.DataDir // the agent's data folder
	Config string        // the config file's path
}

// NewFolder returns a fresh folder whose config holds cfg (the default config when
// cfg is nil).
func NewFolder(t testing.TB, cfg *api.Config) Folder {
	t.Helper()
	root := t.TempDir()
	f := Folder{Dir: agent.DataDir(filepath.Join(root, "data")), Config: filepath.Join(root, "config.json")}
	if cfg != nil {
		if err := agent.SaveConfig(f.Config, *cfg); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// Options are the agent options of f.
func (f Folder) Options() agent.Options {
	return agent.Options{Dir: f.Dir, ConfigPath: f.Config}
}

// StartAgent runs an agent on f as the service would, closed at cleanup.
func (f Folder) StartAgent(t testing.TB) *agent.Agent {
	t.Helper()
	a, err := agent.Start(t.Context(), f.Options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// Client returns an API client for the agent running on f.
func (f Folder) Client(t testing.TB) *api.Client {
	t.Helper()
	e, err := f.Dir.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(e)
}

// Endpoint returns the address and token of the agent running on f (a desktop.EndpointFunc).
func (f Folder) Endpoint(context.Context) (api.Endpoint, error) { return f.Dir.Endpoint() }

// WalletConfig returns a config that backs up a new small wallet to a backup wallet file
// for each name in good (ids good-1, good-2...) and to one in a folder that does not exist,
// whose every run fails, for each name in broken (broken-1...). Every destination is
// paused until resumed: the agent runs a destination that never succeeded as soon as it
// starts, and retries a failed one, which would race with what a test asks for by hand
// (a run asked for by hand still runs).
func WalletConfig(t testing.TB, good, broken []string) *api.Config {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.Wallets = []api.WalletRef{{Path: testkit.SeededWallet(t, localstore.FixtureSmall, 1)}}
	add := func(id, name, path string) {
		cfg.Destinations = append(cfg.Destinations, api.Destination{ID: id, Name: name, Kind: api.DestinationSQLite, Path: path,
			Schedule: api.Schedule{Kind: api.ScheduleDaily, At: "04:00"}, Pause: &api.Pause{}})
	}
	for i, name := range good {
		add(fmt.Sprintf("good-%d", i+1), name, filepath.Join(t.TempDir(), "backup.sqlite"))
	}
	for i, name := range broken {
		add(fmt.Sprintf("broken-%d", i+1), name, filepath.Join(t.TempDir(), "unplugged", "backup.sqlite"))
	}
	return &cfg
}

// WaitTask polls task id until it ends and returns it.
func WaitTask(t testing.TB, c *api.Client, id string) api.Task {
	t.Helper()
	ctx := Wait(t)
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

// Recorder remembers the notes it is asked to show: a desktop.Notifier as
// Recorder[desktop.Notification]. It is generic so that this package, which the desktop
// package's own tests import, does not import desktop.
type Recorder[T any] struct {
	shown chan T
}

// NewRecorder returns a Recorder that holds up to 16 notes not yet taken by Next.
func NewRecorder[T any]() *Recorder[T] {
	return &Recorder[T]{shown: make(chan T, 16)}
}

// Notify records note.
func (n *Recorder[T]) Notify(_ context.Context, note T) error {
	n.shown <- note
	return nil
}

// Next returns the next note shown, failing t when none comes within Wait.
func (n *Recorder[T]) Next(t testing.TB) T {
	t.Helper()
	var note T
	select {
	case note = <-n.shown:
	case <-Wait(t).Done():
		t.Fatal("no notification")
	}
	return note
}
