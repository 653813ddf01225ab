package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"walletsync/agent/api"

	"walletsync/internal/stats"
	"walletsync/syncer"
	"walletsync/wallet"
)

// RunFunc is a task's job. It runs in its own goroutine and reports through h. It must
// return soon after ctx is cancelled, at its next safe point, with an error wrapping
// ctx.Err(); that is what makes the task cancelled (or interrupted) rather than failed.
// Returning nil means the work is done, even if a cancel came too late to stop it.
type RunFunc func(ctx context.Context, h *TaskHandle) error

// redactor scrubs secret values out of a text before it is stored or published.
// *Secrets is one.
type redactor interface {
	Redact(text string) string
}

// Defaults of managerOptions.
const (
	defaultHistory  = 500
	defaultLogLines = 200
)

// progressEvery bounds task.progress events to 4 a second per task: a local sync reports
// hundreds of page states a second, which would turn the 1,000-event ring over in a second
// and make every reconnecting client miss events. The last report is never lost: a
// trailing event follows the quiet period.
const progressEvery = 250 * time.Millisecond

// maxLogLine bounds one log line, in bytes.
const maxLogLine = 1024

// managerOptions configure a Manager.
type managerOptions struct {
	// Bus receives every change of every task. Required.
	Bus *Bus
	// State persists the task history; nil keeps it in memory only.
	State *stateDB
	// History is how many ended tasks are kept (default 500); older ones are forgotten,
	// in memory and in State.
	History int
	// LogLines is how many lines each task's log keeps (default 200); older lines drop out.
	LogLines int
	// redactor, when set, scrubs every log line, detail and error text.
	Redactor redactor
	// Logger receives task starts and ends (default: discarded).
	Logger *slog.Logger
}

// Manager runs every long job of the agent as a task, after Kopia's uitask: a state,
// counters, a rate and ETA, a bounded log and a cancel action, every change published on
// the bus and the history persisted.
//
// At most one task runs per target. A Start for a target that is busy queues the task
// behind the running one (first come, first served), except that a queued task of the
// same kind absorbs it: a second "sync D" while one is queued would do the same work,
// so Start returns the queued one. Queueing rather than refusing lets a schedule fire
// while a run is in progress and still get a run that sees the latest changes.
//
// The creator calls Shutdown.
type Manager struct {
	bus      *Bus
	state    *stateDB
	log      *slog.Logger
	redactor redactor
	history  int
	logLines int

	mu     sync.Mutex
	tasks  map[string]*task
	ord    uint64 // creation order of the newest task
	closed bool
	// dirty holds the tasks changed since the last write to state, including ones the
	// history bound has since dropped, whose end must still reach state.
	dirty map[string]*task

	jobs        sync.WaitGroup
	kick        chan struct{} // 1-buffered: a write to state is pending
	persistMu   sync.Mutex    // one write to state at a time, in order
	stopPersist context.CancelFunc
	persistDone chan struct{}
}

type task struct {
	snap    api.Task
	ord     uint64
	log     []api.LogLine
	run     RunFunc
	cancel  context.CancelCauseFunc
	rate    stats.Rate
	emitted time.Time   // when the last task.progress event went out
	pending *time.Timer // the trailing task.progress event, if one is due
}

// Causes of a running task's cancellation.
var (
	errCancelRequested = errors.New("cancel requested")
	errShutdown        = errors.New("agent shutting down")
)

// newManager returns a manager, loading the history from opts.State: tasks that were
// still queued or running there (the agent died under them) are recorded as interrupted.
func newManager(ctx context.Context, opts managerOptions) (*Manager, error) {
	if opts.Bus == nil {
		return nil, fmt.Errorf("new task manager: no bus: %w", wallet.ErrInvalidArgument)
	}
	m := &Manager{
		bus:         opts.Bus,
		state:       opts.State,
		log:         opts.Logger,
		redactor:    opts.Redactor,
		history:     positiveOr(opts.History, defaultHistory),
		logLines:    positiveOr(opts.LogLines, defaultLogLines),
		tasks:       map[string]*task{},
		dirty:       map[string]*task{},
		kick:        make(chan struct{}, 1),
		persistDone: make(chan struct{}),
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.state == nil {
		close(m.persistDone)
		m.stopPersist = func() {}
		return m, nil
	}
	recs, err := m.state.loadTasks(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		t := &task{snap: r.Task, ord: r.ord, log: r.log}
		if !t.snap.State.Terminal() {
			// FinishedAt stays zero: when the agent died is unknown.
			setInterrupted(&t.snap)
			t.snap.RowsPerSec, t.snap.BytesPerSec, t.snap.ETASeconds = 0, 0, 0
			m.dirty[t.snap.ID] = t
		}
		m.tasks[t.snap.ID] = t
		m.ord = max(m.ord, t.ord)
	}
	if err := m.writeDirty(ctx); err != nil {
		return nil, err
	}
	pctx, stop := context.WithCancel(context.Background())
	m.stopPersist = stop
	go m.persistLoop(pctx)
	return m, nil
}

// positiveOr returns v, or def when v is not positive.
func positiveOr[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Start creates a task of kind on target whose job is run, and returns its snapshot: a
// running task, a queued one when another task runs on target, or the already queued task
// of the same kind on target (see Manager). It refuses an empty kind or target or a nil
// run (wallet.ErrInvalidArgument), and any task after Shutdown (ErrClosed).
func (m *Manager) Start(kind api.TaskKind, target string, run RunFunc) (api.Task, error) {
	if kind == "" || target == "" || run == nil {
		return api.Task{}, fmt.Errorf("start task: kind, target and job are required: %w", wallet.ErrInvalidArgument)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return api.Task{}, fmt.Errorf("start %s task: %w", kind, api.ErrClosed)
	}
	now := time.Now()
	busy := false
	for _, t := range m.tasks {
		if t.snap.Target != target || t.snap.State.Terminal() {
			continue
		}
		if t.snap.State == api.TaskQueued && t.snap.Kind == kind {
			return m.snapshotLocked(t, now), nil
		}
		busy = busy || t.snap.State != api.TaskQueued
	}
	m.ord++
	t := &task{ord: m.ord, run: run, snap: api.Task{ID: newTaskID(), Kind: kind, Target: target, State: api.TaskQueued, QueuedAt: now}}
	m.tasks[t.snap.ID] = t
	if busy {
		m.publishLocked(api.EventTaskQueued, t, now)
	} else {
		m.startLocked(t, now)
	}
	return m.snapshotLocked(t, now), nil
}

// setInterrupted records on s that the agent stopped under it.
func setInterrupted(s *api.Task) {
	s.State = api.TaskInterrupted
	s.Error = "the agent stopped before the task finished"
	s.Hint = "Run it again: work that was acknowledged is kept."
}

func newTaskID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func (m *Manager) startLocked(t *task, now time.Time) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.cancel = cancel
	t.snap.State, t.snap.StartedAt = api.TaskRunning, now
	t.rate.Observe(now, 0, 0)
	m.publishLocked(api.EventTaskStarted, t, now)
	m.log.Info("task started", "id", t.snap.ID, "kind", t.snap.Kind, "target", t.snap.Target)
	run := t.run
	t.run = nil // the history need not keep what the job's closure holds
	h := &TaskHandle{m: m, t: t}
	ctx = context.WithValue(ctx, taskKey{}, h)
	m.jobs.Go(func() {
		err := run(ctx, h)
		state := api.TaskSucceeded
		switch {
		case err == nil:
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			state = api.TaskCancelled
			if errors.Is(context.Cause(ctx), errShutdown) {
				state = api.TaskInterrupted
			}
		default:
			state = api.TaskFailed
		}
		cancel(nil)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.endLocked(t, state, err, time.Now())
		if m.closed {
			return
		}
		if next := m.nextQueuedLocked(t.snap.Target); next != nil {
			m.startLocked(next, time.Now())
		}
	})
}

// nextQueuedLocked returns the oldest queued task on target.
func (m *Manager) nextQueuedLocked(target string) *task {
	var next *task
	for _, t := range m.tasks {
		if t.snap.Target == target && t.snap.State == api.TaskQueued && (next == nil || t.ord < next.ord) {
			next = t
		}
	}
	return next
}

// endLocked moves t to a terminal state and forgets the oldest ended tasks beyond the
// history bound.
func (m *Manager) endLocked(t *task, state api.TaskState, err error, now time.Time) {
	if t.pending != nil {
		t.pending.Stop()
		t.pending = nil
	}
	t.run = nil // a queued task cancelled or interrupted never ran
	t.snap.State, t.snap.FinishedAt = state, now
	// The step the job was on is over: an ended task shows how it ended, never its last step.
	t.snap.Detail = ""
	switch state {
	case api.TaskFailed:
		ex := api.Explain(err)
		t.snap.Error, t.snap.Message, t.snap.Path, t.snap.Hint = m.redact(err.Error()), m.redact(ex.Message), ex.Path, ex.Hint
		// The technical text stays in the log too, beside the plain words the task shows.
		m.appendLogLocked(t, api.LogLine{Time: now, Text: m.redact("failed: " + err.Error())})
	case api.TaskInterrupted:
		setInterrupted(&t.snap)
	}
	m.publishLocked(api.EventTaskFinished, t, now)
	m.log.Info("task finished", "id", t.snap.ID, "kind", t.snap.Kind, "target", t.snap.Target,
		"state", state, "error", t.snap.Error)

	var ended []*task
	for _, o := range m.tasks {
		if o.snap.State.Terminal() {
			ended = append(ended, o)
		}
	}
	if excess := len(ended) - m.history; excess > 0 {
		slices.SortFunc(ended, func(a, b *task) int { return cmp.Compare(a.ord, b.ord) })
		for _, o := range ended[:excess] {
			delete(m.tasks, o.snap.ID)
		}
	}
}

// Cancel asks task id to stop. A queued task is cancelled at once and its job never runs;
// a running one moves to cancelling and its job's ctx is cancelled, and it ends when the
// job returns. Cancelling an ended task changes nothing. It returns the task's snapshot,
// or an error wrapping wallet.ErrNotFound.
func (m *Manager) Cancel(id string) (api.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.taskLocked(id)
	if err != nil {
		return api.Task{}, err
	}
	now := time.Now()
	switch t.snap.State {
	case api.TaskQueued:
		m.endLocked(t, api.TaskCancelled, nil, now)
	case api.TaskRunning:
		t.snap.State = api.TaskCancelling
		t.cancel(errCancelRequested)
		m.emitProgressLocked(t, now)
	}
	return m.snapshotLocked(t, now), nil
}

// AdoptPlaces gives every task that names no place the place placeOf returns for it ("" to
// leave it), and writes the changed tasks to the state database before it returns.
func (m *Manager) AdoptPlaces(ctx context.Context, placeOf func(api.Task) string) error {
	m.mu.Lock()
	for _, t := range m.tasks {
		if t.snap.Place != "" {
			continue
		}
		if p := placeOf(t.snap); p != "" {
			t.snap.Place = p
			m.dirty[t.snap.ID] = t
		}
	}
	m.mu.Unlock()
	return m.writeDirty(ctx)
}

// List returns every known task, newest first.
func (m *Manager) List() []api.Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := make([]*task, 0, len(m.tasks))
	for _, t := range m.tasks {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *task) int { return cmp.Compare(b.ord, a.ord) })
	now := time.Now()
	out := make([]api.Task, len(ts))
	for i, t := range ts {
		out[i] = m.snapshotLocked(t, now)
	}
	return out
}

// Busy reports whether any task is running (or cancelling).
func (m *Manager) Busy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if st := t.snap.State; st == api.TaskRunning || st == api.TaskCancelling {
			return true
		}
	}
	return false
}

// Get returns task id's snapshot, or an error wrapping wallet.ErrNotFound.
func (m *Manager) Get(id string) (api.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.taskLocked(id)
	if err != nil {
		return api.Task{}, err
	}
	return m.snapshotLocked(t, time.Now()), nil
}

// Wait returns task id once it has ended, or ctx's error when ctx ends first. It watches
// the bus rather than the job, so it also sees a queued task cancelled before it ran.
func (m *Manager) Wait(ctx context.Context, id string) (api.Task, error) {
	sub := m.bus.Subscribe(m.bus.Last())
	for {
		// Checked after subscribing, so that an end published in between is not missed.
		t, err := m.Get(id)
		if err != nil || t.State.Terminal() {
			return t, err
		}
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return t, err
			}
			if ev.Type == api.EventMissed {
				break // the end may be among what was missed: look again
			}
			if done, ok := ev.Data.(api.Task); ok && ev.Type == api.EventTaskFinished && done.ID == id {
				return done, nil
			}
		}
	}
}

// Log returns a copy of task id's log, oldest line first, or an error wrapping
// wallet.ErrNotFound.
func (m *Manager) Log(id string) ([]api.LogLine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.taskLocked(id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(t.log), nil
}

func (m *Manager) taskLocked(id string) (*task, error) {
	t, ok := m.tasks[id]
	if !ok {
		return nil, fmt.Errorf("task %q: %w", id, wallet.ErrNotFound)
	}
	return t, nil
}

// Shutdown stops the manager: Start refuses from now on, queued tasks end as interrupted
// without running, running ones are cancelled and end as interrupted once their jobs
// return at a safe point. It waits for the jobs and the last write of the history until
// ctx ends; a job still running then is recorded as interrupted at the next start.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		now := time.Now()
		for _, t := range m.tasks {
			switch t.snap.State {
			case api.TaskQueued:
				m.endLocked(t, api.TaskInterrupted, nil, now)
			case api.TaskRunning, api.TaskCancelling:
				t.cancel(errShutdown)
			}
		}
	}
	m.mu.Unlock()

	done := make(chan struct{})
	go func() {
		m.jobs.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("shut down tasks: %w", ctx.Err())
	}
	m.stopPersist()
	<-m.persistDone
	return err
}

// snapshotLocked returns t's snapshot with its rate and ETA as of now.
func (m *Manager) snapshotLocked(t *task, now time.Time) api.Task {
	s := t.snap
	switch {
	case s.State == api.TaskRunning || s.State == api.TaskCancelling:
		s.RowsPerSec, s.BytesPerSec = t.rate.PerSecond(now)
		s.ETASeconds = int64(stats.ETA(s.Total, s.Counters.Rows, s.RowsPerSec) / time.Second)
	case s.State.Terminal() && !s.StartedAt.IsZero() && s.FinishedAt.After(s.StartedAt):
		d := s.FinishedAt.Sub(s.StartedAt).Seconds()
		s.RowsPerSec, s.BytesPerSec = float64(s.Counters.Rows)/d, float64(s.Counters.Bytes)/d
	}
	return s
}

// publishLocked publishes t's snapshot and schedules it for the state database.
func (m *Manager) publishLocked(typ api.EventType, t *task, now time.Time) {
	m.bus.Publish(typ, m.snapshotLocked(t, now))
	m.markDirtyLocked(t)
}

// progressLocked publishes a task.progress event now, or once progressEvery has passed
// since the last one.
func (m *Manager) progressLocked(t *task, now time.Time) {
	wait := t.emitted.Add(progressEvery).Sub(now)
	if wait <= 0 {
		m.emitProgressLocked(t, now)
		return
	}
	if t.pending == nil {
		t.pending = time.AfterFunc(wait, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			t.pending = nil
			if !t.snap.State.Terminal() {
				m.emitProgressLocked(t, time.Now())
			}
		})
	}
}

func (m *Manager) emitProgressLocked(t *task, now time.Time) {
	if t.pending != nil {
		t.pending.Stop()
		t.pending = nil
	}
	t.emitted = now
	m.publishLocked(api.EventTaskProgress, t, now)
}

func (m *Manager) redact(s string) string {
	if m.redactor == nil {
		return s
	}
	return m.redactor.Redact(s)
}

func (m *Manager) markDirtyLocked(t *task) {
	if m.state == nil {
		return
	}
	m.dirty[t.snap.ID] = t
	select {
	case m.kick <- struct{}{}:
	default: // a write is already pending; it will take this change too
	}
}

// persistLoop writes changed tasks to the state database, coalescing changes that arrive
// while a write is in progress, so a job never waits for an fsync. It makes a last write
// when ctx ends. Writes themselves are not cancelled: each is one short transaction.
func (m *Manager) persistLoop(ctx context.Context) {
	defer close(m.persistDone)
	for {
		select {
		case <-m.kick:
		case <-ctx.Done():
		}
		// Read before writing: a stop during this write leaves changes for one more.
		stopping := ctx.Err() != nil
		if err := m.writeDirty(context.WithoutCancel(ctx)); err != nil {
			m.log.Error("save task history", "err", err)
		}
		if stopping {
			return
		}
	}
}

// writeDirty writes the tasks changed since the last write. After a failed write they
// stay changed, for the next one.
func (m *Manager) writeDirty(ctx context.Context) error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.Lock()
	batch := m.dirty
	m.dirty = map[string]*task{}
	recs := make([]taskRecord, 0, len(batch))
	now := time.Now()
	for _, t := range batch {
		recs = append(recs, taskRecord{Task: m.snapshotLocked(t, now), ord: t.ord, log: slices.Clone(t.log)})
	}
	m.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	err := m.state.saveTasks(ctx, recs, m.history)
	if err != nil {
		m.mu.Lock()
		maps.Copy(m.dirty, batch)
		m.mu.Unlock()
	}
	return err
}

// TaskHandle is a running job's side of its task. Its methods are safe for concurrent use
// and do nothing once the task has ended.
type TaskHandle struct {
	m *Manager
	t *task
}

// ID returns the task's id.
func (h *TaskHandle) ID() string { return h.t.snap.ID }

// taskKey is the context key of the running task's handle.
type taskKey struct{}

// taskOf returns the handle of the task whose context ctx is (or derives from), or nil, so
// that shared machinery deep in a job (the key-derivation gate) can tell its task what it is
// waiting for.
func taskOf(ctx context.Context) *TaskHandle {
	h, _ := ctx.Value(taskKey{}).(*TaskHandle)
	return h
}

// update applies f to the running task and publishes the change (throttled).
func (h *TaskHandle) update(f func(t *task, now time.Time)) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.t.snap.State.Terminal() {
		return
	}
	now := time.Now()
	f(h.t, now)
	h.m.progressLocked(h.t, now)
}

// SetCounters records the job's cumulative counters; they also feed the rate and ETA.
func (h *TaskHandle) SetCounters(c syncer.Counters) {
	h.update(func(t *task, now time.Time) {
		t.snap.Counters = c
		t.rate.Observe(now, c.Rows, c.Bytes)
	})
}

// SetResult records what the job produced; v is marshalled to JSON and, like every text a
// task publishes, scrubbed by the redactor. A value that does not marshal is recorded as an
// error text instead, so that a result is never silently lost.
func (h *TaskHandle) SetResult(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "result not recordable: " + err.Error()})
	}
	b = []byte(h.m.redact(string(b)))
	h.update(func(t *task, _ time.Time) { t.snap.Result = b })
}

// SetPlace records the fingerprint of the place the job works on (see Task.Place).
func (h *TaskHandle) SetPlace(place string) {
	h.update(func(t *task, _ time.Time) { t.snap.Place = place })
}

// SetTotal records how many rows the job expects to move in all; 0 means unknown.
func (h *TaskHandle) SetTotal(rows int64) {
	h.update(func(t *task, _ time.Time) { t.snap.Total = rows })
}

// SetDetail records where the job is, in a word or two ("committing outputs"). Like log
// lines, the detail is built from fixed words and values the agent computed, never from a
// secret; it is scrubbed by the redactor all the same.
func (h *TaskHandle) SetDetail(detail string) {
	detail = h.m.redact(detail)
	h.update(func(t *task, _ time.Time) { t.snap.Detail = detail })
}

// SyncProgress records a sync session's progress: its counters, and its state and table
// as the detail.
func (h *TaskHandle) SyncProgress(p syncer.Progress) {
	detail := string(p.State)
	if p.Table != "" {
		detail += " " + string(p.Table)
	}
	h.update(func(t *task, now time.Time) {
		t.snap.Counters, t.snap.Detail = p.Counters, detail
		t.rate.Observe(now, p.Rows, p.Bytes)
	})
}

// Logf appends a line to the task's log (the oldest line drops out beyond the bound) and
// publishes it.
//
// The redaction rule: format is a constant and args are values the agent computed
// (counts, ids, paths, durations); a secret travels only as a Secret, which formats as
// [redacted] under every verb. As a second line of defence every line passes through the
// manager's redactor, which replaces the stored secret values. Lines are for milestones
// (a table done, a file renamed); per-page progress belongs in SetCounters.
func (h *TaskHandle) Logf(format string, args ...any) {
	text := h.m.redact(fmt.Sprintf(format, args...))
	m, t := h.m, h.t
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.snap.State.Terminal() {
		return
	}
	m.appendLogLocked(t, api.LogLine{Time: time.Now(), Text: text})
}

// appendLogLocked appends line to t's log (the oldest line drops out beyond the bound) and
// publishes it.
func (m *Manager) appendLogLocked(t *task, line api.LogLine) {
	if len(line.Text) > maxLogLine {
		line.Text = strings.ToValidUTF8(line.Text[:maxLogLine], "")
	}
	t.log = append(t.log, line)
	if over := len(t.log) - m.logLines; over > 0 {
		t.log = slices.Delete(t.log, 0, over)
	}
	m.bus.Publish(api.EventTaskLog, api.TaskLog{TaskID: t.snap.ID, Line: line})
	m.markDirtyLocked(t)
	m.log.Debug("task log", "id", t.snap.ID, "text", line.Text)
}
