package agent

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"
	"walletsync/agent/api"

	"walletsync/internal/stats"
	"walletsync/syncer"
	"walletsync/wallet"
)

func TestManager_JobOutcomeDecidesState(t *testing.T) {
	diskFullHint := api.Explain(wallet.ErrDiskFull).Hint
	for _, tc := range []struct {
		name      string
		cancel    bool  // cancel the task while its job runs
		ignoreCtx bool  // the job does not watch ctx
		result    error // what the job returns when released
		want      api.TaskState
		wantError string
		wantHint  string
	}{
		{name: "nil succeeds", want: api.TaskSucceeded},
		{name: "an error fails, hinted by its class", result: fmt.Errorf("commit page: %w", wallet.ErrDiskFull),
			want: api.TaskFailed, wantError: "commit page: disk full", wantHint: diskFullHint},
		{name: "a WithHint hint wins", result: api.WithHint(fmt.Errorf("open: %w", wallet.ErrDiskFull), "do this"),
			want: api.TaskFailed, wantError: "open: disk full", wantHint: "do this"},
		{name: "cancel stops at the safe point", cancel: true, want: api.TaskCancelled},
		{name: "work done despite a cancel succeeds", cancel: true, ignoreCtx: true, want: api.TaskSucceeded},
		{name: "another failure despite a cancel fails", cancel: true, ignoreCtx: true, result: errors.New("boom"),
			want: api.TaskFailed, wantError: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, bus := mustManager(t, managerOptions{})
			sub := bus.Subscribe(0)
			j := newBlockingJob()
			run := j.run
			if tc.ignoreCtx {
				run = func(ctx context.Context, h *TaskHandle) error { return j.run(context.Background(), h) }
			}
			task, err := m.Start(api.KindSync, "dest-1", run)
			if err != nil || task.State != api.TaskRunning {
				t.Fatalf("Start = %+v, %v", task, err)
			}
			nextTaskEvent(t, sub, task.ID, api.EventTaskStarted)
			<-j.started
			if tc.cancel {
				if c, err := m.Cancel(task.ID); err != nil || c.State != api.TaskCancelling {
					t.Fatalf("Cancel = %+v, %v", c, err)
				}
				if p := nextTaskEvent(t, sub, task.ID, api.EventTaskProgress); p.State != api.TaskCancelling {
					t.Fatalf("progress after cancel: %s", p.State)
				}
			}
			j.release <- tc.result
			end := nextTaskEvent(t, sub, task.ID, api.EventTaskFinished)
			got, _ := m.Get(task.ID)
			for _, s := range []api.Task{end, got} {
				if s.State != tc.want || s.Error != tc.wantError || s.Hint != tc.wantHint || s.FinishedAt.IsZero() {
					t.Fatalf("task = %s %q %q, want %s %q %q", s.State, s.Error, s.Hint, tc.want, tc.wantError, tc.wantHint)
				}
			}
			if again, err := m.Cancel(task.ID); err != nil || again.State != tc.want {
				t.Fatalf("Cancel of an ended task = %s, %v; want it unchanged", again.State, err)
			}
		})
	}
}

func TestManager_OneRunningTaskPerTarget(t *testing.T) {
	m, _ := mustManager(t, managerOptions{})
	first, second, absorbed, other, dropped := newBlockingJob(), newBlockingJob(), newBlockingJob(), newBlockingJob(), newBlockingJob()
	start := func(kind api.TaskKind, target string, j *blockingJob, want api.TaskState) api.Task {
		t.Helper()
		task, err := m.Start(kind, target, j.run)
		if err != nil || task.State != want {
			t.Fatalf("Start(%s, %s) = %s, %v; want %s", kind, target, task.State, err, want)
		}
		return task
	}
	a := start(api.KindSync, "d1", first, api.TaskRunning)
	<-first.started
	b := start(api.KindBackup, "d1", second, api.TaskQueued)
	if c := start(api.KindBackup, "d1", absorbed, api.TaskQueued); c.ID != b.ID {
		t.Fatalf("a second queued backup of d1 got its own task %s, want %s", c.ID, b.ID)
	}
	start(api.KindSync, "d2", other, api.TaskRunning)
	<-other.started // another target runs at once
	d := start(api.KindDrill, "d1", dropped, api.TaskQueued)
	if got, err := m.Cancel(d.ID); err != nil || got.State != api.TaskCancelled {
		t.Fatalf("Cancel of a queued task = %s, %v", got.State, err)
	}

	first.release <- nil
	<-second.started // the oldest queued task on d1 runs next
	if got, _ := m.Get(b.ID); got.State != api.TaskRunning || got.StartedAt.IsZero() {
		t.Fatalf("queued task after the first ended: %+v", got)
	}
	if got, _ := m.Get(a.ID); got.State != api.TaskSucceeded {
		t.Fatalf("first task: %s", got.State)
	}
	second.release <- nil
	other.release <- nil
	if err := m.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, j := range []*blockingJob{absorbed, dropped} {
		select {
		case <-j.started:
			t.Fatal("an absorbed or cancelled task's job ran")
		default:
		}
	}
	if ids := taskIDs(m.List()); len(ids) != 4 || ids[0] != d.ID || ids[3] != a.ID {
		t.Fatalf("List = %v, want 4 tasks, newest (%s) first", ids, d.ID)
	}
}

func taskIDs(ts []api.Task) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}

func TestManager_StartRefuses(t *testing.T) {
	m, _ := mustManager(t, managerOptions{})
	ok := func(context.Context, *TaskHandle) error { return nil }
	for _, tc := range []struct {
		kind   api.TaskKind
		target string
		run    RunFunc
	}{{"", "d", ok}, {api.KindSync, "", ok}, {api.KindSync, "d", nil}} {
		if _, err := m.Start(tc.kind, tc.target, tc.run); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("Start(%q, %q) = %v, want ErrInvalidArgument", tc.kind, tc.target, err)
		}
	}
	if _, err := m.Get("nope"); !errors.Is(err, wallet.ErrNotFound) {
		t.Errorf("Get(unknown) = %v", err)
	}
	if _, err := m.Cancel("nope"); !errors.Is(err, wallet.ErrNotFound) {
		t.Errorf("Cancel(unknown) = %v", err)
	}
	if _, err := m.Log("nope"); !errors.Is(err, wallet.ErrNotFound) {
		t.Errorf("Log(unknown) = %v", err)
	}
	if err := m.Shutdown(waitCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := m.Start(api.KindSync, "d", ok); !errors.Is(err, api.ErrClosed) {
		t.Errorf("Start after Shutdown = %v, want ErrClosed", err)
	}
}

func TestManager_ShutdownInterrupts(t *testing.T) {
	m, _ := mustManager(t, managerOptions{})
	running, queued := newBlockingJob(), newBlockingJob()
	r, _ := m.Start(api.KindSync, "d1", running.run)
	<-running.started
	q, _ := m.Start(api.KindBackup, "d1", queued.run)
	if err := m.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{r.ID, q.ID} {
		if got, _ := m.Get(id); got.State != api.TaskInterrupted || got.Error == "" || got.Hint == "" {
			t.Errorf("task %s after Shutdown: %s %q %q, want interrupted with an error and a hint", id, got.State, got.Error, got.Hint)
		}
	}
}

// A task that was running when the agent died shows as interrupted after a restart, with
// the log it had written.
func TestManager_RestartMarksInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() *stateDB {
		s, err := openState(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	before, _ := mustManager(t, managerOptions{State: open()})
	j := newBlockingJob()
	task, _ := before.Start(api.KindSync, "d1", func(ctx context.Context, h *TaskHandle) error {
		h.Logf("opened snapshot of %s", "wallet.sqlite")
		return j.run(ctx, h)
	})
	<-j.started
	if err := before.writeDirty(t.Context()); err != nil { // what the persister has done before the crash
		t.Fatal(err)
	}
	// The process dies here: before is never shut down. A new agent opens the database.
	for range 2 { // and again: the interrupted state itself was recorded
		after, _ := mustManager(t, managerOptions{State: open()})
		got, err := after.Get(task.ID)
		if err != nil || got.State != api.TaskInterrupted || got.Error == "" || !got.FinishedAt.IsZero() {
			t.Fatalf("after restart: %+v, %v; want interrupted, finish time unknown", got, err)
		}
		if log, _ := after.Log(task.ID); len(log) != 1 || log[0].Text != "opened snapshot of wallet.sqlite" {
			t.Fatalf("log after restart: %+v", log)
		}
	}
}

func TestManager_HistoryBounded(t *testing.T) {
	st := mustState(t)
	m, bus := mustManager(t, managerOptions{State: st, History: 3})
	sub := bus.Subscribe(0)
	var ids []string
	for i := range 5 {
		task, err := m.Start(api.KindSync, fmt.Sprintf("d%d", i), func(context.Context, *TaskHandle) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		nextTaskEvent(t, sub, task.ID, api.EventTaskFinished)
		ids = append(ids, task.ID)
	}
	want := []string{ids[4], ids[3], ids[2]}
	if got := taskIDs(m.List()); !slices.Equal(got, want) {
		t.Fatalf("List = %v, want the newest 3 %v", got, want)
	}
	if err := m.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	again, _ := mustManager(t, managerOptions{State: st, History: 3})
	if got := taskIDs(again.List()); !slices.Equal(got, want) {
		t.Fatalf("reloaded List = %v, want %v", got, want)
	}
}

func TestTaskHandle_LogBounded(t *testing.T) {
	m, bus := mustManager(t, managerOptions{LogLines: 3})
	sub := bus.Subscribe(0)
	task, _ := m.Start(api.KindSync, "d1", func(_ context.Context, h *TaskHandle) error {
		for i := range 5 {
			h.Logf("table %d done", i)
		}
		h.Logf("%s", strings.Repeat("é", maxLogLine)) // 2 bytes a rune: cut inside one
		return nil
	})
	nextTaskEvent(t, sub, task.ID, api.EventTaskFinished)
	log, _ := m.Log(task.ID)
	if len(log) != 3 || log[0].Text != "table 3 done" || log[1].Text != "table 4 done" {
		t.Fatalf("log = %+v, want the last 3 lines", log)
	}
	if long := log[2].Text; len(long) > maxLogLine || !utf8.ValidString(long) || len(long) < maxLogLine-4 {
		t.Fatalf("long line: %d bytes, valid UTF-8 %v", len(long), utf8.ValidString(long))
	}
	var logEvents int
	for _, ev := range bus.Since(0) {
		if l, ok := ev.Data.(api.TaskLog); ok && l.TaskID == task.ID {
			logEvents++
		}
	}
	if logEvents != 6 {
		t.Errorf("%d task.log events, want 6", logEvents)
	}
}

// The rate follows a sliding window: nothing before stats.RateMinSpan, exact under a steady
// speed, the new speed once a change is a window old, zero once the job stalls.
func TestTaskHandle_RateAndETA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := mustManager(t, managerOptions{})
		steps := make(chan func(*TaskHandle))
		task, _ := m.Start(api.KindSync, "d1", func(_ context.Context, h *TaskHandle) error {
			for f := range steps {
				f(h)
			}
			return nil
		})
		rows := int64(0)
		report := func(seconds int, perSecond int64) {
			for range seconds {
				time.Sleep(time.Second)
				rows += perSecond
				r := rows
				steps <- func(h *TaskHandle) { h.SetCounters(syncer.Counters{Rows: r, Bytes: 10 * r}) }
			}
			synctest.Wait()
		}
		check := func(when string, rowsPerSec float64, eta int64) {
			t.Helper()
			got, _ := m.Get(task.ID)
			if got.RowsPerSec != rowsPerSec || got.BytesPerSec != 10*rowsPerSec || got.ETASeconds != eta {
				t.Fatalf("%s: %.2f rows/s, %.2f bytes/s, ETA %d s; want %.2f, %.2f, %d",
					when, got.RowsPerSec, got.BytesPerSec, got.ETASeconds, rowsPerSec, 10*rowsPerSec, eta)
			}
		}
		steps <- func(h *TaskHandle) { h.SetTotal(100_000) }
		report(1, 100)
		check("after 1 s", 0, 0)
		report(9, 100)
		check("after 10 s at 100 rows/s", 100, (100_000-1_000)/100)
		report(40, 100)
		check("after 50 s at 100 rows/s", 100, (100_000-5_000)/100)
		report(32, 400)
		check("32 s after speeding up to 400 rows/s", 400, (100_000-17_800+399)/400)
		time.Sleep(stats.RateSpan + time.Second)
		check("a window after the last report", 0, 0)
		close(steps)
	})
}

// A burst of reports makes one progress event at once and one trailing event with the
// last counters, not one event each.
func TestTaskHandle_ProgressThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, bus := mustManager(t, managerOptions{})
		release := make(chan struct{})
		task, _ := m.Start(api.KindSync, "d1", func(_ context.Context, h *TaskHandle) error {
			for i := range 100 {
				h.SyncProgress(syncer.Progress{State: syncer.StateCommitting, Table: "outputs", Counters: syncer.Counters{Rows: int64(i + 1)}})
			}
			<-release
			return nil
		})
		synctest.Wait()
		time.Sleep(progressEvery)
		synctest.Wait()
		var progress []api.Task
		for _, ev := range bus.Since(0) {
			if ev.Type == api.EventTaskProgress {
				progress = append(progress, ev.Data.(api.Task))
			}
		}
		if len(progress) != 2 || progress[0].Counters.Rows != 1 || progress[1].Counters.Rows != 100 {
			t.Fatalf("progress events: %d, rows %v; want 2, [1 100]", len(progress), taskRows(progress))
		}
		if progress[1].Detail != "committing outputs" {
			t.Errorf("detail = %q", progress[1].Detail)
		}
		close(release)
		if got, _ := m.Get(task.ID); got.Counters.Rows != 100 {
			t.Errorf("snapshot rows = %d", got.Counters.Rows)
		}
	})
}

func taskRows(ts []api.Task) []int64 {
	var out []int64
	for _, t := range ts {
		out = append(out, t.Counters.Rows)
	}
	return out
}

// A password a job gets from the secrets file never reaches the task's log, detail, error,
// events, the agent's log or the state database, however the job formats it.
func TestManager_SecretNeverLeaks(t *testing.T) {
	const password = "correct-horse-battery-staple-7731"
	dir := t.TempDir()
	secrets := NewSecrets(filepath.Join(dir, "secrets.json"))
	if err := secrets.Set("backup", api.NewSecret(password)); err != nil {
		t.Fatal(err)
	}
	st, err := openState(t.Context(), filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger, logs := debugLogger()
	m, bus := mustManager(t, managerOptions{State: st, Redactor: secrets, Logger: logger})
	sub := bus.Subscribe(0)
	task, _ := m.Start(api.KindBackup, "folder-1", func(_ context.Context, h *TaskHandle) error {
		pw, err := secrets.Get("backup")
		if err != nil {
			return err
		}
		args := struct {
			Folder   string
			Password api.Secret
			hidden   api.Secret
		}{"/backups", pw, pw}
		h.Logf("args %v %+v %#v", args, args, args)
		h.Logf("password %v %s %q %x %X %d %#v", pw, pw, pw, pw, pw, pw, pw)
		h.Logf("revealed by mistake: %s", pw.Reveal())
		h.SetDetail("deriving key for " + pw.Reveal())
		return fmt.Errorf("decrypt with %q: %w", pw.Reveal(), wallet.ErrInvalidArgument)
	})
	end := nextTaskEvent(t, sub, task.ID, api.EventTaskFinished)
	if err := m.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(end.Error, api.Redacted) {
		t.Fatalf("error %q: the job's text should be there, scrubbed", end.Error)
	}
	var seen strings.Builder
	log, _ := m.Log(task.ID)
	events, _ := json.Marshal(bus.Since(0))
	got, _ := m.Get(task.ID)
	fmt.Fprintf(&seen, "%+v\n%+v\n%s\n%s\n", log, got, events, logs)
	for _, f := range []string{"state.db", "state.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		seen.Write(b)
	}
	assertNoSecret(t, seen.String(), password)
	if !strings.Contains(seen.String(), "args {/backups [redacted] {0x") {
		t.Errorf("expected the formatted args in the log:\n%+v", log)
	}
}

// assertNoSecret fails if text holds secret, in clear or hex.
func assertNoSecret(t testing.TB, text, secret string) {
	t.Helper()
	for _, form := range []string{secret, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret)))} {
		if i := strings.Index(text, form); i >= 0 {
			t.Fatalf("the secret leaked: ...%s...", text[max(0, i-80):min(len(text), i+len(form)+20)])
		}
	}
}
