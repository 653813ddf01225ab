package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata" // the daylight-saving tests need zones whatever the machine has
	"walletsync/agent/api"

	"github.com/fsnotify/fsnotify"

	"walletsync/wallet"
)

// schedRun is one call of the timetable's Run, at the harness's wall clock.
type schedRun struct {
	ID     string
	Reason api.Reason
	At     time.Time
}

// fakeEvents stands in for fsnotify, so that a test sends file events on fake time.
type fakeEvents struct {
	events chan fsnotify.Event
	errs   chan error
	mu     sync.Mutex
	dirs   map[string]bool
}

func (f *fakeEvents) Add(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs[dir] = true
	return nil
}

func (f *fakeEvents) Remove(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.dirs, dir)
	return nil
}

func (f *fakeEvents) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeEvents) Errors() <-chan error          { return f.errs }
func (f *fakeEvents) Close() error                  { return nil }

func (f *fakeEvents) watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for d := range f.dirs {
			if !yield(d) {
				return
			}
		}
	})
}

// schedOptions set up a schedHarness.
type schedOptions struct {
	start  time.Time            // the wall clock when the test begins; default 2026-11-25T12:00Z
	wallet string               // the wallet file; default /wallets/wallet.db (never read)
	dests  []api.Destination    // the config's destinations
	last   map[string]time.Time // LastRun by id; an id left out ran at start
	loc    *time.Location       // daily schedules' zone; default UTC
	gated  bool                 // runs wait for release (or the timetable's end) before returning
}

// schedHarness runs a timetable in a synctest bubble: on fake time, with fake file events,
// a wall clock that a test can move apart from the monotonic one, and an in-memory config.
type schedHarness struct {
	t      *testing.T
	s      *timetable
	events *fakeEvents
	start  time.Time
	skew   atomic.Int64 // the wall clock minus the bubble's clock
	gate   chan struct{}
	logs   *bytes.Buffer // the timetable's log; read after synctest.Wait

	mu         sync.Mutex
	cfg        api.Config
	runs       []schedRun
	running    map[string]int
	concurrent int // the most runs of one id at once
}

// newSchedHarness builds a scheduler inside the current bubble and applies the config;
// startRun runs it.
func newSchedHarness(t *testing.T, o schedOptions) *schedHarness {
	t.Helper()
	if o.start.IsZero() {
		o.start = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	}
	if o.wallet == "" {
		o.wallet = "/wallets/wallet.db"
	}
	if o.loc == nil {
		o.loc = time.UTC
	}
	h := &schedHarness{
		t:       t,
		events:  &fakeEvents{events: make(chan fsnotify.Event), errs: make(chan error), dirs: map[string]bool{}},
		start:   o.start,
		logs:    &bytes.Buffer{},
		running: map[string]int{},
		cfg:     DefaultConfig(),
	}
	h.skew.Store(int64(time.Until(o.start)))
	if o.gated {
		h.gate = make(chan struct{})
	}
	h.cfg.Wallets = []api.WalletRef{{Path: o.wallet}}
	h.cfg.Destinations = o.dests
	var err error
	h.s, err = newTimetable(timetableOptions{
		Run: h.run,
		LastRun: func(id string) time.Time {
			if last, ok := o.last[id]; ok {
				return last
			}
			return o.start
		},
		EditConfig: h.editConfig,
		Location:   o.loc,
		Now:        h.now,
		Logger:     slog.New(slog.NewTextHandler(h.logs, nil)),
		events:     h.events,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.s.Update(h.config()); err != nil {
		t.Fatal(err)
	}
	return h
}

// startRun runs the timetable until the test ends, and lets it take its first look.
func (h *schedHarness) startRun() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.s.Run(ctx); err != nil {
			h.t.Error(err)
		}
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
	synctest.Wait()
}

func (h *schedHarness) now() time.Time { return time.Now().Add(time.Duration(h.skew.Load())) }

// sleep lets d pass on both clocks, then waits for the timetable to settle.
func (h *schedHarness) sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// jump moves the wall clock d ahead of the monotonic one, as a sleeping laptop does.
func (h *schedHarness) jump(d time.Duration) { h.skew.Add(int64(d)) }

// send delivers a file event and waits for the timetable to settle.
func (h *schedHarness) send(name string, op fsnotify.Op) {
	h.events.events <- fsnotify.Event{Name: name, Op: op}
	synctest.Wait()
}

// release lets one gated run return.
func (h *schedHarness) release() {
	h.gate <- struct{}{}
	synctest.Wait()
}

func (h *schedHarness) run(ctx context.Context, id string, reason api.Reason) {
	h.mu.Lock()
	h.runs = append(h.runs, schedRun{ID: id, Reason: reason, At: h.now()})
	h.running[id]++
	h.concurrent = max(h.concurrent, h.running[id])
	h.mu.Unlock()
	if h.gate != nil {
		select {
		case <-h.gate:
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	h.running[id]--
	h.mu.Unlock()
}

func (h *schedHarness) editConfig(_ context.Context, edit func(*api.Config) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cfg
	c.Destinations = slices.Clone(h.cfg.Destinations)
	if err := edit(&c); err != nil {
		return err
	}
	if err := validateConfig(c); err != nil {
		return err
	}
	h.cfg = c
	return nil
}

func (h *schedHarness) config() api.Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cfg
	c.Destinations = slices.Clone(h.cfg.Destinations)
	return c
}

// update edits the config and applies it, as the agent does when a person edits it.
func (h *schedHarness) update(edit func(*api.Config)) {
	h.t.Helper()
	h.mu.Lock()
	h.cfg.Destinations = slices.Clone(h.cfg.Destinations)
	edit(&h.cfg)
	h.mu.Unlock()
	if err := h.s.Update(h.config()); err != nil {
		h.t.Fatal(err)
	}
	synctest.Wait()
}

// runsOf returns the runs of id so far.
func (h *schedHarness) runsOf(id string) []schedRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []schedRun
	for _, r := range h.runs {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// at returns the wall-clock time d after the start.
func (h *schedHarness) at(d time.Duration) time.Time { return h.start.Add(d) }

// wantRuns checks id's runs so far: their reasons and wall-clock times.
func (h *schedHarness) wantRuns(id string, want ...schedRun) {
	h.t.Helper()
	got := h.runsOf(id)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Reason == want[i].Reason && got[i].At.Equal(want[i].At)
	}
	if !ok {
		h.t.Fatalf("runs of %s:\n got %s\nwant %s", id, fmtRuns(got), fmtRuns(want))
	}
}

// wantNext checks what Next says of id.
func (h *schedHarness) wantNext(id string, at time.Time, why api.Reason) {
	h.t.Helper()
	gotAt, gotWhy, err := h.s.Next(id)
	if err != nil || !gotAt.Equal(at) || gotWhy != why {
		h.t.Fatalf("Next(%s) = %s, %q, %v; want %s, %q", id, gotAt.UTC().Format(time.RFC3339), gotWhy, err, at.UTC().Format(time.RFC3339), why)
	}
}

func fmtRuns(runs []schedRun) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range runs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(string(r.Reason) + "@" + r.At.UTC().Format(time.RFC3339))
	}
	return b.String() + "]"
}

func ranAt(why api.Reason, at time.Time) schedRun { return schedRun{Reason: why, At: at} }

func intervalOf(d time.Duration) api.Schedule {
	return api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(d)}
}
func dailySchedule(at string) api.Schedule { return api.Schedule{Kind: api.ScheduleDaily, At: at} }
func changeSchedule() api.Schedule {
	return api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}
}

func folderDest(id string, s api.Schedule) api.Destination {
	return api.Destination{ID: id, Name: id, Kind: api.DestinationFolder, Path: "/backups/" + id, Schedule: s}
}

// An interval schedule runs every interval after the last run, not after the start.
// TestTimetable_NothingBeforeAWallet: while the config protects no wallet, neither its
// destinations nor the drill are scheduled (a run could only fail, a drill find nothing);
// once a wallet is chosen, both run at once, as ones that never ran.
func TestTimetable_NothingBeforeAWallet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))},
			last: map[string]time.Time{"d1": {}, drillID: {}}})
		wallets := h.config().Wallets
		h.update(func(c *api.Config) { c.Wallets = nil })
		h.startRun()
		h.sleep(3 * time.Hour)
		for _, id := range []string{"d1", drillID} {
			if runs := h.runsOf(id); len(runs) != 0 {
				t.Fatalf("%s ran while no wallet was protected: %+v", id, runs)
			}
		}
		h.update(func(c *api.Config) { c.Wallets = wallets })
		h.sleep(time.Minute)
		for _, id := range []string{"d1", drillID} {
			if runs := h.runsOf(id); len(runs) != 1 || !runs[0].At.Equal(h.at(3*time.Hour)) {
				t.Fatalf("%s after the wallet was chosen: %+v, want one run at once", id, runs)
			}
		}
	})
}

func TestTimetable_Interval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{
			dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))},
			last:  map[string]time.Time{"d1": time.Date(2026, 11, 25, 11, 50, 0, 0, time.UTC)},
		})
		h.startRun()
		h.wantNext("d1", h.at(50*time.Minute), api.ReasonInterval)
		h.sleep(3 * time.Hour)
		h.wantRuns("d1",
			ranAt(api.ReasonInterval, h.at(50*time.Minute)),
			ranAt(api.ReasonInterval, h.at(110*time.Minute)),
			ranAt(api.ReasonInterval, h.at(170*time.Minute)))
		h.wantNext("d1", h.at(230*time.Minute), api.ReasonInterval)
	})
}

// A daily schedule keeps its local time across daylight-saving changes and runs once per
// local date: at the first of two 01:30s when the clock falls back, at the jump when the
// clock springs forward over 02:30.
func TestTimetable_DailyAcrossDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		start string
		at    string
		days  int
		want  []string
	}{
		{"fall back", "2026-10-30T16:00:00Z", "01:30", 4, []string{
			"2026-10-31T05:30:00Z", // 01:30 EDT
			"2026-11-01T05:30:00Z", // the first 01:30, EDT; not again at 01:30 EST
			"2026-11-02T06:30:00Z", // 01:30 EST
			"2026-11-03T06:30:00Z",
		}},
		{"spring forward", "2026-03-06T17:00:00Z", "02:30", 3, []string{
			"2026-03-07T07:30:00Z", // 02:30 EST
			"2026-03-08T07:00:00Z", // 02:00 EST became 03:00 EDT: no 02:30 that day
			"2026-03-09T06:30:00Z", // 02:30 EDT
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newSchedHarness(t, schedOptions{start: utc(tt.start), loc: ny, dests: []api.Destination{folderDest("d1", dailySchedule(tt.at))}})
				h.startRun()
				h.sleep(time.Duration(tt.days) * 24 * time.Hour)
				var want []schedRun
				for _, w := range tt.want {
					want = append(want, ranAt(api.ReasonDaily, utc(w)))
				}
				h.wantRuns("d1", want...)
			})
		})
	}
}

// localTime picks the first reading of a repeated time and the jump over a skipped one,
// whichever instant time.Date happens to choose, for whole- and half-hour shifts.
func TestLocalTime_DaylightSaving(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	ny, lordHowe := load("America/New_York"), load("Australia/Lord_Howe")
	tests := []struct {
		name   string
		loc    *time.Location
		y      int
		m      time.Month
		d      int
		hh, mm int
		want   string
	}{
		{"ordinary day", ny, 2026, 6, 1, 3, 0, "2026-06-01T07:00:00Z"},
		{"before the spring gap", ny, 2026, 3, 8, 1, 30, "2026-03-08T06:30:00Z"},
		{"in the spring gap", ny, 2026, 3, 8, 2, 30, "2026-03-08T07:00:00Z"},
		{"after the spring gap", ny, 2026, 3, 8, 3, 30, "2026-03-08T07:30:00Z"},
		{"repeated in the fall", ny, 2026, 11, 1, 1, 30, "2026-11-01T05:30:00Z"},
		{"after the fall repeat", ny, 2026, 11, 1, 2, 30, "2026-11-01T07:30:00Z"},
		{"half-hour repeat", lordHowe, 2026, 4, 5, 1, 45, "2026-04-04T14:45:00Z"},
		{"half-hour gap", lordHowe, 2026, 10, 4, 2, 15, "2026-10-03T15:30:00Z"},
		{"a day past the month's end", time.UTC, 2026, 11, 31, 3, 0, "2026-12-01T03:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := localTime(tt.y, tt.m, tt.d, tt.hh, tt.mm, tt.loc)
			if got.UTC().Format(time.RFC3339) != tt.want {
				t.Errorf("localTime(%d-%02d-%02d %02d:%02d) = %s, want %s", tt.y, tt.m, tt.d, tt.hh, tt.mm,
					got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
}

// An on-change schedule runs once, a debounce after the last write to the wallet or its
// -wal; writes to other files, to the -shm, and changes of mode alone are not writes.
func TestTimetable_ChangeDebounce(t *testing.T) {
	const w = "/wallets/wallet.db"
	burst := func(names ...string) []fsnotify.Event {
		var evs []fsnotify.Event
		for i := range 100 {
			evs = append(evs, fsnotify.Event{Name: names[i%len(names)], Op: fsnotify.Write})
		}
		return evs
	}
	noise := []fsnotify.Event{
		{Name: w + "-shm", Op: fsnotify.Write},
		{Name: "/wallets/other.db", Op: fsnotify.Write},
		{Name: "/wallets/wallet.db-journal", Op: fsnotify.Create},
		{Name: "/elsewhere/wallet.db", Op: fsnotify.Write},
		{Name: w, Op: fsnotify.Chmod},
	}
	tests := []struct {
		name   string
		events []fsnotify.Event // sent 100 ms apart
		// lastWrite is the index of the last event that is a wallet write; -1: none.
		lastWrite int
	}{
		{"a burst of 100 writes to the wallet and its -wal", append(burst(w, w+"-wal"), noise...), 99},
		{"the -wal created, then removed", []fsnotify.Event{{Name: w + "-wal", Op: fsnotify.Create}, {Name: w + "-wal", Op: fsnotify.Remove}}, 1},
		{"a rename onto the wallet", []fsnotify.Event{{Name: w, Op: fsnotify.Rename}}, 0},
		{"other files, the -shm, a change of mode", noise, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newSchedHarness(t, schedOptions{wallet: w, dests: []api.Destination{folderDest("d1", changeSchedule())}})
				h.startRun()
				h.wantNext("d1", time.Time{}, "")
				for i, ev := range tt.events {
					if i > 0 {
						h.sleep(100 * time.Millisecond)
					}
					h.send(ev.Name, ev.Op)
				}
				if tt.lastWrite < 0 {
					h.sleep(time.Hour)
					h.wantRuns("d1")
					return
				}
				written := h.at(time.Duration(tt.lastWrite) * 100 * time.Millisecond)
				h.wantNext("d1", written.Add(api.DefaultDebounce), api.ReasonChange)
				h.sleep(time.Hour)
				h.wantRuns("d1", ranAt(api.ReasonChange, written.Add(api.DefaultDebounce)))
				h.wantNext("d1", time.Time{}, "")
			})
		})
	}
}

// A wallet written every 7 s never goes quiet for a debounce, yet gets a run every
// debounceCeiling debounces, and one more a debounce after the last write.
func TestTimetable_ChangeDebounceHasACeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const w = "/wallets/wallet.db"
		h := newSchedHarness(t, schedOptions{wallet: w, dests: []api.Destination{folderDest("d1", changeSchedule())}})
		h.startRun()
		for i := range 100 { // writes at 0 s, 7 s, ... 693 s; never at a run's instant
			if i > 0 {
				h.sleep(7 * time.Second)
			}
			h.send(w+"-wal", fsnotify.Write)
		}
		h.sleep(time.Hour)
		ceiling := debounceCeiling * api.DefaultDebounce
		h.wantRuns("d1",
			ranAt(api.ReasonChange, h.at(ceiling)),                             // 300 s: the first write + the ceiling
			ranAt(api.ReasonChange, h.at(301*time.Second+ceiling)),             // the first write after it + the ceiling
			ranAt(api.ReasonChange, h.at(693*time.Second+api.DefaultDebounce))) // quiet after the last write
	})
}

// When the watcher lost events, every watched wallet counts as written: a backup too many
// rather than one missed.
func TestTimetable_LostEventsCountAsAWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", changeSchedule())}})
		h.startRun()
		h.events.errs <- fsnotify.ErrEventOverflow
		h.sleep(time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonChange, h.at(api.DefaultDebounce)))
	})
}

// With the real fsnotify, a -wal file that did not exist when the watch began is seen,
// and a burst of writes to it makes a run.
func TestTimetable_ChangeWithFsnotify(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "wallet.db")
	if err := os.WriteFile(w, []byte("wallet"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(w, old, old); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Wallets = []api.WalletRef{{Path: w}}
	cfg.Destinations = []api.Destination{folderDest("d1", api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(time.Second)})}
	runs := make(chan api.Reason, 10)
	started := time.Now()
	s, err := newTimetable(timetableOptions{
		Run: func(_ context.Context, id string, why api.Reason) {
			if id == "d1" {
				runs <- why
			}
		},
		LastRun:    func(string) time.Time { return started },
		EditConfig: func(context.Context, func(*api.Config) error) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	f, err := os.OpenFile(w+"-wal", os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := f.Write([]byte("page")); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case why := <-runs:
		if why != api.ReasonChange {
			t.Fatalf("run for %q, want %q", why, api.ReasonChange)
		}
	case <-waitCtx(t).Done():
		t.Fatal("no run after writes to the -wal")
	}
}

// A pause for a while holds scheduled runs back and ends by itself; what was held back
// runs once when it ends, and the schedule goes on from there. The pause is saved.
func TestTimetable_PauseForResumesByItself(t *testing.T) {
	tests := []struct {
		name  string
		pause func(context.Context, *timetable) error
	}{
		{"one", func(ctx context.Context, s *timetable) error { return s.Pause(ctx, "d1", 2*time.Hour) }},
		{"all", func(ctx context.Context, s *timetable) error { return s.PauseAll(ctx, 2*time.Hour) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newSchedHarness(t, schedOptions{
					dests: []api.Destination{folderDest("d1", intervalOf(time.Hour)), folderDest("d2", intervalOf(time.Hour))},
					last:  map[string]time.Time{"d1": time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC), "d2": time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC)},
				})
				h.startRun()
				if err := tt.pause(t.Context(), h.s); err != nil {
					t.Fatal(err)
				}
				if p := h.config().Destinations[0].Pause; p == nil || !p.Until.Equal(h.at(2*time.Hour)) {
					t.Fatalf("saved pause = %+v, want until %s", p, h.at(2*time.Hour))
				}
				h.wantNext("d1", h.at(2*time.Hour), api.ReasonMissed)
				h.sleep(150 * time.Minute)
				h.wantRuns("d1", ranAt(api.ReasonMissed, h.at(2*time.Hour)))
				h.sleep(time.Hour)
				h.wantRuns("d1", ranAt(api.ReasonMissed, h.at(2*time.Hour)), ranAt(api.ReasonInterval, h.at(3*time.Hour)))
				if tt.name == "all" {
					h.wantRuns("d2", ranAt(api.ReasonMissed, h.at(2*time.Hour)), ranAt(api.ReasonInterval, h.at(3*time.Hour)))
				} else {
					h.wantRuns("d2", ranAt(api.ReasonInterval, h.at(30*time.Minute)), ranAt(api.ReasonInterval, h.at(90*time.Minute)),
						ranAt(api.ReasonInterval, h.at(150*time.Minute)), ranAt(api.ReasonInterval, h.at(210*time.Minute)))
				}
			})
		})
	}
}

// A pause until resumed holds every scheduled run back, however long; Resume runs what
// was held back once, at once.
func TestTimetable_PauseUntilResumed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))}})
		h.startRun()
		if err := h.s.Pause(t.Context(), "d1", 0); err != nil {
			t.Fatal(err)
		}
		h.wantNext("d1", time.Time{}, "")
		h.sleep(5 * 24 * time.Hour)
		h.wantRuns("d1")
		if err := h.s.Resume(t.Context(), "d1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if p := h.config().Destinations[0].Pause; p != nil {
			t.Fatalf("saved pause after Resume = %+v", p)
		}
		h.sleep(time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonMissed, h.at(5*24*time.Hour)), ranAt(api.ReasonInterval, h.at(5*24*time.Hour+time.Hour)))
	})
}

// A run asked for by hand runs at once, paused or not, and counts as the last run.
func TestTimetable_RunNowWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))}})
		h.startRun()
		if err := h.s.PauseAll(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		h.sleep(10 * time.Minute)
		for _, id := range []string{"d1", drillID} {
			if err := h.s.RunNow(id); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		h.wantRuns("d1", ranAt(api.ReasonManual, h.at(10*time.Minute)))
		h.wantRuns(drillID, ranAt(api.ReasonManual, h.at(10*time.Minute)))
		if err := h.s.ResumeAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		h.wantNext("d1", h.at(70*time.Minute), api.ReasonInterval)
	})
}

// A run started by hand outside the timetable (the API starts its task itself) counts as
// the last run when the timetable is told: a destination paused since it was added is not
// taken, on resume, for one that never ran.
func TestTimetable_RanOutsideCountsAsTheLastRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		paused := folderDest("d1", intervalOf(time.Hour))
		paused.Pause = &api.Pause{}
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{paused}})
		h.startRun()
		h.sleep(10 * time.Minute)
		h.s.Ran("d1")
		h.s.Ran("gone") // a destination removed meanwhile: ignored
		if err := h.s.ResumeAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.wantRuns("d1")
		h.wantNext("d1", h.at(70*time.Minute), api.ReasonInterval)
	})
}

// Runs missed while the agent was stopped run once at start, whatever their number.
func TestTimetable_MissedWhileStoppedRunOnce(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule api.Schedule
		last     time.Time // zero: never ran
		modified time.Time // the wallet file's modification time
		want     []schedRun
	}{
		{"interval, stopped for 3 days", intervalOf(12 * time.Hour), start.Add(-72 * time.Hour), time.Time{},
			[]schedRun{ranAt(api.ReasonMissed, start), ranAt(api.ReasonInterval, start.Add(12*time.Hour))}},
		{"daily, stopped for 3 days", dailySchedule("03:00"), start.Add(-72 * time.Hour), time.Time{},
			[]schedRun{ranAt(api.ReasonMissed, start), ranAt(api.ReasonDaily, start.Add(15*time.Hour))}},
		{"never ran", dailySchedule("03:00"), time.Time{}, time.Time{},
			[]schedRun{ranAt(api.ReasonMissed, start), ranAt(api.ReasonDaily, start.Add(15*time.Hour))}},
		{"on change, written while stopped", changeSchedule(), start.Add(-2 * time.Hour), start.Add(-time.Hour),
			[]schedRun{ranAt(api.ReasonMissed, start)}},
		{"on change, not written since", changeSchedule(), start.Add(-2 * time.Hour), start.Add(-3 * time.Hour), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := filepath.Join(t.TempDir(), "wallet.db")
				if err := os.WriteFile(w, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				mod := orTime(tt.modified, start.Add(-100*time.Hour))
				if err := os.Chtimes(w, mod, mod); err != nil {
					t.Fatal(err)
				}
				h := newSchedHarness(t, schedOptions{
					start: start, wallet: w,
					dests: []api.Destination{folderDest("d1", tt.schedule)},
					last:  map[string]time.Time{"d1": tt.last},
				})
				h.startRun()
				h.sleep(20 * time.Hour)
				h.wantRuns("d1", tt.want...)
			})
		})
	}
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// After the machine sleeps through scheduled times, the timetable notices the wall
// clock's jump within a heartbeat of waking and runs what it missed once.
func TestTimetable_MissedWhileAsleepRunOnce(t *testing.T) {
	tests := []struct {
		name     string
		schedule api.Schedule
		sleep    time.Duration
		want     []time.Duration // after the start, on the wall clock
	}{
		{"interval, asleep for 5 hours", intervalOf(time.Hour), 5 * time.Hour, []time.Duration{
			5*time.Hour + 31*time.Minute, // missed: 30 min awake + 5 h asleep + the heartbeat
			6*time.Hour + 31*time.Minute, // interval
		}},
		{"daily at 03:00, asleep for 20 hours", dailySchedule("03:00"), 20 * time.Hour, []time.Duration{
			20*time.Hour + 31*time.Minute, // missed the 03:00 of the next day
			39 * time.Hour,                // daily, the day after
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", tt.schedule)}})
				h.startRun()
				h.sleep(30 * time.Minute)
				h.jump(tt.sleep)
				h.sleep(heartbeat)
				if !strings.Contains(h.logs.String(), "wall clock jumped") {
					t.Errorf("no clock jump logged; log:\n%s", h.logs)
				}
				h.sleep(tt.want[1] - tt.want[0])
				want := []schedRun{ranAt(api.ReasonMissed, h.at(tt.want[0]))}
				want = append(want, ranAt(api.Reason(tt.schedule.Kind), h.at(tt.want[1])))
				h.wantRuns("d1", want...)
			})
		})
	}
}

// A wall clock set back does not hold a schedule back by as much: the last run, now "in
// the future", counts as just now.
func TestTimetable_ClockSetBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))}})
		h.startRun()
		h.sleep(30 * time.Minute)
		h.jump(-24 * time.Hour)
		h.sleep(heartbeat) // the loop sees the clock at -23h29m and the last run ahead of it
		h.sleep(time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonInterval, h.at(-23*time.Hour+31*time.Minute)))
	})
}

// While a destination's run goes, no second one starts: triggers in the meantime (its
// time passing, runs by hand, writes, the destination removed and added again) make one
// more run when it returns, and writes during that one make one more after it.
func TestTimetable_NoConcurrentRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const w = "/wallets/wallet.db"
		d1 := folderDest("d1", changeSchedule())
		h := newSchedHarness(t, schedOptions{wallet: w, dests: []api.Destination{d1}, gated: true})
		h.startRun()
		h.send(w, fsnotify.Write)
		h.sleep(api.DefaultDebounce)
		h.wantRuns("d1", ranAt(api.ReasonChange, h.at(api.DefaultDebounce)))

		for range 5 {
			if err := h.s.RunNow("d1"); err != nil {
				t.Fatal(err)
			}
			h.send(w+"-wal", fsnotify.Write)
		}
		h.update(func(c *api.Config) { c.Destinations = nil })
		h.update(func(c *api.Config) { c.Destinations = []api.Destination{d1} })
		if err := h.s.RunNow("d1"); err != nil {
			t.Fatal(err)
		}
		h.sleep(3 * time.Hour)
		if got := h.runsOf("d1"); len(got) != 1 {
			t.Fatalf("runs while the first one goes: %s", fmtRuns(got))
		}

		h.release()
		second := h.at(api.DefaultDebounce + 3*time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonChange, h.at(api.DefaultDebounce)), ranAt(api.ReasonManual, second))
		h.send(w+"-wal", fsnotify.Write) // during the second run: not in its snapshot
		h.sleep(time.Hour)
		h.release()
		h.sleep(time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonChange, h.at(api.DefaultDebounce)), ranAt(api.ReasonManual, second),
			ranAt(api.ReasonMissed, second.Add(time.Hour))) // the write's debounce passed while the run went
		h.release()
		h.sleep(time.Hour)
		if got := len(h.runsOf("d1")); got != 3 || h.concurrent != 1 {
			t.Fatalf("%d runs, at most %d at once; want 3 and 1", got, h.concurrent)
		}
	})
}

// Update applies added, edited and removed destinations, and their watches, at once.
func TestTimetable_UpdateWithoutRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{
			wallet: "/wallets/wallet.db",
			dests:  []api.Destination{folderDest("d1", intervalOf(time.Hour))},
			last:   map[string]time.Time{"d2": {}},
		})
		h.startRun()
		if got := h.events.watched(); len(got) != 0 {
			t.Fatalf("watching %v with no on-change schedule", got)
		}
		h.sleep(10 * time.Minute)
		h.update(func(c *api.Config) {
			c.Destinations[0].Schedule = intervalOf(15 * time.Minute)
			c.Destinations = append(c.Destinations, folderDest("d2", changeSchedule()))
		})
		if got := h.events.watched(); !slices.Equal(got, []string{"/wallets"}) {
			t.Fatalf("watching %v, want [/wallets]", got)
		}
		h.sleep(10 * time.Minute)
		h.wantRuns("d1", ranAt(api.ReasonInterval, h.at(15*time.Minute)))
		h.wantRuns("d2", ranAt(api.ReasonMissed, h.at(10*time.Minute))) // it never ran

		h.update(func(c *api.Config) { c.Destinations = c.Destinations[1:] })
		if _, _, err := h.s.Next("d1"); !errors.Is(err, wallet.ErrNotFound) {
			t.Fatalf("Next of a removed destination: %v", err)
		}
		h.update(func(c *api.Config) { c.Destinations[0].Schedule = dailySchedule("03:00") })
		if got := h.events.watched(); len(got) != 0 {
			t.Fatalf("still watching %v", got)
		}
		h.sleep(24 * time.Hour)
		h.wantRuns("d1", ranAt(api.ReasonInterval, h.at(15*time.Minute)))
		h.wantRuns("d2", ranAt(api.ReasonMissed, h.at(10*time.Minute)), ranAt(api.ReasonDaily, h.at(15*time.Hour)))
	})
}

// The timetable refuses unknown destinations, bad pauses, invalid configs and work after
// it stopped, and a refused pause changes nothing.
func TestTimetable_Refuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSchedHarness(t, schedOptions{dests: []api.Destination{folderDest("d1", intervalOf(time.Hour))}})
		ctx := t.Context()
		bad := h.config()
		bad.Destinations[0].Schedule = intervalOf(time.Second)
		tests := []struct {
			name string
			call func() error
			want error
		}{
			{"run an unknown destination", func() error { return h.s.RunNow("nope") }, wallet.ErrNotFound},
			{"next of an unknown destination", func() error { _, _, err := h.s.Next("nope"); return err }, wallet.ErrNotFound},
			{"pause an unknown destination", func() error { return h.s.Pause(ctx, "nope", time.Hour) }, wallet.ErrNotFound},
			{"pause no destination", func() error { return h.s.Pause(ctx, "", time.Hour) }, wallet.ErrNotFound},
			{"pause the drill", func() error { return h.s.Pause(ctx, drillID, time.Hour) }, wallet.ErrNotFound},
			{"pause for a negative time", func() error { return h.s.Pause(ctx, "d1", -time.Hour) }, wallet.ErrInvalidArgument},
			{"resume an unknown destination", func() error { return h.s.Resume(ctx, "nope") }, wallet.ErrNotFound},
			{"an invalid config", func() error { return h.s.Update(bad) }, wallet.ErrInvalidArgument},
			{"no Run", func() error { _, err := newTimetable(timetableOptions{}); return err }, wallet.ErrInvalidArgument},
		}
		for _, tt := range tests {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
			}
		}
		for _, d := range h.config().Destinations {
			if d.Pause != nil {
				t.Errorf("a refused pause was saved on %s", d.ID)
			}
		}

		runCtx, cancel := context.WithCancel(ctx)
		cancel()
		if err := h.s.Run(runCtx); err != nil {
			t.Fatal(err)
		}
		after := []struct {
			name string
			call func() error
			want error
		}{
			{"run again", func() error { return h.s.Run(ctx) }, wallet.ErrInvalidArgument},
			{"run now after the end", func() error { return h.s.RunNow("d1") }, api.ErrClosed},
			{"update after the end", func() error { return h.s.Update(h.config()) }, api.ErrClosed},
			{"pause after the end", func() error { return h.s.PauseAll(ctx, time.Hour) }, api.ErrClosed},
		}
		for _, tt := range after {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
			}
		}
	})
}
