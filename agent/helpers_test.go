package agent

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"walletsync/agent/api"
)

// waitCtx bounds a test's waits, so that a broken contract fails the test instead of
// hanging it; nothing is asserted about how long anything takes.
func waitCtx(t testing.TB) context.Context {
	// A hang guard, not a timing assertion: a toolbox-fixture sync under the race
	// detector on a busy two-core machine takes tens of seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustManager returns a manager on a new bus (unless opts has one), shut down at cleanup.
func mustManager(t testing.TB, opts managerOptions) (*Manager, *Bus) {
	t.Helper()
	if opts.Bus == nil {
		opts.Bus = newBus(0)
	}
	m, err := newManager(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return m, opts.Bus
}

// mustState opens a state database in a new temp folder, closed at cleanup.
func mustState(t testing.TB) *stateDB {
	t.Helper()
	s, err := openState(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// nextTaskEvent returns the next event about task id of type typ, skipping others.
func nextTaskEvent(t testing.TB, sub *Subscription, id string, typ api.EventType) api.Task {
	t.Helper()
	ctx := waitCtx(t)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s of task %s: %v", typ, id, err)
		}
		if task, ok := ev.Data.(api.Task); ok && task.ID == id && ev.Type == typ {
			return task
		}
	}
}

// blockingJob is a job that signals when it runs and returns what release sends, or
// ctx's error wrapped when its task is cancelled first.
type blockingJob struct {
	started chan struct{}
	release chan error
}

func newBlockingJob() *blockingJob {
	return &blockingJob{started: make(chan struct{}), release: make(chan error, 1)}
}

func (j *blockingJob) run(ctx context.Context, h *TaskHandle) error {
	close(j.started)
	select {
	case err := <-j.release:
		return err
	case <-ctx.Done():
		return &wrapped{ctx.Err()}
	}
}

// wrapped is an error that wraps another, as a job's errors do.
type wrapped struct{ err error }

func (w *wrapped) Error() string { return "stopped at a safe point: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// logBuffer is a slog handler's output, safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// debugLogger logs everything, as JSON, to a new buffer.
func debugLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// cancelAfterPages runs destination dest and cancels the run once it has committed pages
// pages, and returns the task as it ended.
func cancelAfterPages(t *testing.T, a *Agent, dest string, pages int64) api.Task {
	t.Helper()
	sub := a.bus.Subscribe(a.bus.Last())
	task, err := a.RunDestination(dest, "manual")
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := ev.Data.(api.Task); ok && p.ID == task.ID && p.Counters.Pages >= pages {
			break
		}
	}
	if _, err := a.tasks.Cancel(task.ID); err != nil {
		t.Fatal(err)
	}
	done, err := a.tasks.Wait(waitCtx(t), task.ID)
	if err != nil {
		t.Fatalf("wait for the cancelled run: %v", err)
	}
	return done
}
