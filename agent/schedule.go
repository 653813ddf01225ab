package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"walletsync/agent/api"

	"github.com/fsnotify/fsnotify"

	"walletsync/wallet"
)

// drillID is the id under which the timetable runs the restore drill (Config.Drill). The
// dot keeps it out of the destination id alphabet, so it names no destination.
const drillID = ".drill"

// Timing of the timetable's loop.
const (
	// heartbeat is the longest the loop sleeps. Go's timers run on the monotonic clock,
	// which stops while a laptop sleeps (Linux, macOS): a timer set for 03:00 before an
	// 8-hour sleep would fire hours late. Waking at least once a minute and judging every
	// schedule by the wall clock bounds that to a minute after the machine wakes, for
	// 1,440 wakes a day that each cost a few map lookups.
	heartbeat = time.Minute
	// jumpTolerance is how far the wall clock may move apart from the monotonic one
	// between two wakes before the loop reports a jump: NTP steps a clock by seconds, a
	// sleep or a hand-set clock by minutes or more.
	jumpTolerance = 30 * time.Second
	// lateAfter separates a run on time from a missed one. On-time runs start within
	// milliseconds of their time (the loop's timer aims at it); a run a minute late was
	// held back by something.
	lateAfter = time.Minute
	// debounceCeiling bounds the wait of an on-change schedule at this many debounces
	// after the first unsaved write (5 minutes at the default 30 s): a wallet written every
	// few seconds for an hour never goes quiet for a whole debounce, yet must be backed up.
	debounceCeiling = 10
)

// timetableOptions configure a timetable. Run, LastRun and EditConfig are required.
type timetableOptions struct {
	// Run runs destination id's job (the restore drill for drillID) and returns when the
	// job has ended, or when ctx ends. The timetable never calls Run for an id whose
	// previous call has not returned: triggers in the meantime are coalesced into one
	// more call after it returns. ctx ends when the timetable stops.
	Run func(ctx context.Context, id string, reason api.Reason)
	// LastRun returns when id's last run started, zero if it never ran. It is asked once
	// per destination, when the timetable first sees it. Return the last run that
	// succeeded to have a failed or interrupted run retried once at start.
	LastRun func(id string) time.Time
	// EditConfig applies edit to the current config and saves it, returning edit's error
	// (and saving nothing) if edit fails. Pause and Resume change the config through it,
	// then apply the result themselves; calling Update with it as well is harmless.
	EditConfig func(ctx context.Context, edit func(*api.Config) error) error
	// Location is the time zone of daily schedules; default time.Local.
	Location *time.Location
	// Now reads the wall clock; default time.Now. Tests move it apart from the monotonic
	// clock to play a sleeping machine.
	Now func() time.Time
	// Logger receives clock jumps and file-watch failures (default: discarded).
	Logger *slog.Logger

	// events replaces the fsnotify watcher in tests.
	events fileEvents
}

// timetable decides when each destination, and the restore drill, runs: on an interval,
// daily at a local time, or when the wallet changes; by hand; never while paused; and once
// for any number of runs missed while the agent was stopped or the machine slept. (It is
// not package scheduler, which orders the reads and writes of one wallet.)
//
// Every schedule counts from the start of the destination's last run (LastRun at first,
// then the runs the timetable starts). A destination is due when its schedule's next time
// after that start has passed on the wall clock, so however many times passed meanwhile,
// it runs once, and its next time counts from that run. A destination that never ran is
// due at once.
//
// Daily times are local wall-clock times, as a person sets an alarm: "03:00" stays 03:00
// across a daylight-saving change. On the day the clock falls back over it, it runs once,
// at the first 03:00; on the day the clock springs forward over it, at the moment of the
// jump. Either way once per local date.
//
// On-change schedules watch the wallet file and its -wal: in WAL mode SQLite writes
// there, and the main file changes only at a checkpoint. The watch is on the wallet's
// folder, filtered by name, because the -wal file is created and removed as connections
// come and go, and a watch on a file dies with it. The -shm file is left out: readers
// write it too, and a read is no reason for a backup. A run starts a debounce after the
// last write, so a burst of writes makes one run.
//
// While a destination's run goes, no second one starts: whatever comes meanwhile (its
// time, writes, runs by hand) makes one more run when it returns. The task manager would
// queue a second task behind the first; coalescing here keeps it from queueing several.
// A run that starts more than lateAfter after its time says ReasonMissed.
//
// A timetable is safe for concurrent use. Run it once; it stops when Run's context ends.
type timetable struct {
	run        func(ctx context.Context, id string, reason api.Reason)
	lastRun    func(id string) time.Time
	editConfig func(ctx context.Context, edit func(*api.Config) error) error
	loc        *time.Location
	now        func() time.Time
	log        *slog.Logger
	events     fileEvents
	kick       chan struct{} // 1-buffered: a change waits for the loop's next look

	updateMu sync.Mutex      // one Update at a time; guards watched
	watched  map[string]bool // folders the watcher watches

	mu       sync.Mutex
	entries  map[string]*entry
	files    map[string]string // a wallet file or its -wal -> the wallet file
	ran      bool              // Run was called
	closed   bool              // Run has returned
	prevWall time.Time         // the wall and monotonic clocks at the loop's last look
	prevMono time.Time
}

// entry is the timetable's state of one destination or of the drill.
type entry struct {
	dest      api.Destination // a copy; the drill's has only its ID and Schedule
	wallet    string          // the wallet file an on-change schedule watches, "" when none
	last      time.Time       // when its last run started; zero: never
	changed   time.Time       // the first write since then; zero: none
	lastWrite time.Time       // the latest write since then
	manual    bool            // a run by hand is asked for
	running   bool            // Run has been called and has not returned
	removed   bool            // gone from the config while running; forgotten by the next Update
}

// fileEvents is what the timetable uses of an fsnotify watcher, so that tests can feed it
// events on fake time.
type fileEvents interface {
	Add(dir string) error
	Remove(dir string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// fsnotifyEvents adapts *fsnotify.Watcher, whose channels are fields, to fileEvents.
type fsnotifyEvents struct{ *fsnotify.Watcher }

func (w fsnotifyEvents) Events() <-chan fsnotify.Event { return w.Watcher.Events }
func (w fsnotifyEvents) Errors() <-chan error          { return w.Watcher.Errors }

// newTimetable returns a timetable with nothing to schedule, and starts its file watcher;
// Update gives it the config, Run runs it (and closes the watcher when it returns).
func newTimetable(opts timetableOptions) (*timetable, error) {
	if opts.Run == nil || opts.LastRun == nil || opts.EditConfig == nil {
		return nil, fmt.Errorf("new timetable: Run, LastRun and EditConfig are required: %w", wallet.ErrInvalidArgument)
	}
	s := &timetable{
		run:        opts.Run,
		lastRun:    opts.LastRun,
		editConfig: opts.EditConfig,
		loc:        opts.Location,
		now:        opts.Now,
		log:        opts.Logger,
		events:     opts.events,
		kick:       make(chan struct{}, 1),
		watched:    map[string]bool{},
		entries:    map[string]*entry{},
		files:      map[string]string{},
	}
	if s.loc == nil {
		s.loc = time.Local
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.events == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("new timetable: watch files: %w", err)
		}
		s.events = fsnotifyEvents{w}
	}
	return s, nil
}

// wall reads the wall clock without its monotonic reading, so that differences of the
// times it returns are wall-clock differences.
func (s *timetable) wall() time.Time { return s.now().Round(0) }

// Update applies cfg: destinations added, edited or removed, and the drill's schedule,
// without a restart. A new destination's last run comes from LastRun; an on-change one
// whose wallet was written after that (the agent was stopped) has a pending change. A
// removed destination's running run is left to finish. It refuses an invalid cfg
// (wallet.ErrInvalidArgument) and any cfg after Run has returned (ErrClosed). An error
// watching a wallet's folder is returned after the rest of cfg is applied: the other
// schedules keep running, and that wallet's on-change destinations still run at start.
func (s *timetable) Update(cfg api.Config) error {
	if err := validateConfig(cfg); err != nil {
		return fmt.Errorf("update schedules: %w", err)
	}
	s.updateMu.Lock()
	defer s.updateMu.Unlock()

	// Nothing is scheduled while no wallet is protected: a run could only fail (no wallet
	// configured) and a drill only find nothing. Once one is chosen, Update gives every
	// destination and the drill their entries, due at once when they never ran.
	dests := make([]entry, 0, len(cfg.Destinations)+1)
	scheduled := cfg.Destinations
	if len(cfg.Wallets) == 0 {
		scheduled = nil
	} else {
		dests = append(dests, entry{dest: api.Destination{ID: drillID, Schedule: cfg.Drill}})
	}
	for _, d := range scheduled {
		if d.Pause != nil {
			p := *d.Pause
			d.Pause = &p
		}
		e := entry{dest: d}
		if ref, err := walletOf(cfg, d); err == nil { // none: nothing to watch
			e.wallet = filepath.Clean(ref.Path)
		}
		dests = append(dests, e)
	}

	// Ask LastRun and the file system outside the lock: both may be slow.
	s.mu.Lock()
	closed := s.closed
	var fresh []*entry
	for i := range dests {
		if _, ok := s.entries[dests[i].dest.ID]; !ok {
			fresh = append(fresh, &dests[i])
		}
	}
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("update schedules: %w", api.ErrClosed)
	}
	for _, e := range fresh {
		e.last = s.lastRun(e.dest.ID).Round(0)
		if e.dest.Schedule.Kind == api.ScheduleChange && e.wallet != "" {
			if m := lastModified(e.wallet); m.After(e.last) {
				e.changed, e.lastWrite = m, m
			}
		}
	}

	// Only Update forgets entries, so every entry seen above is still there.
	s.mu.Lock()
	ids := map[string]bool{}
	files := map[string]string{}
	dirs := map[string]bool{}
	for i := range dests {
		n := &dests[i]
		ids[n.dest.ID] = true
		e, ok := s.entries[n.dest.ID]
		if !ok {
			e = n
			s.entries[n.dest.ID] = e
		}
		e.dest, e.wallet, e.removed = n.dest, n.wallet, false
		if e.dest.Schedule.Kind != api.ScheduleChange {
			e.changed, e.lastWrite = time.Time{}, time.Time{}
		}
		if e.dest.Schedule.Kind == api.ScheduleChange && e.wallet != "" {
			files[e.wallet], files[e.wallet+"-wal"] = e.wallet, e.wallet
			dirs[filepath.Dir(e.wallet)] = true
		}
	}
	for id, e := range s.entries {
		switch {
		case ids[id]:
		case e.running:
			// Kept, so that if it comes back before its run returns, it does not start
			// a second run beside the first.
			e.removed = true
		default:
			delete(s.entries, id)
		}
	}
	s.files = files
	s.mu.Unlock()

	err := s.watch(dirs)
	s.poke()
	if err != nil {
		return fmt.Errorf("update schedules: %w", err)
	}
	return nil
}

// lastModified returns when the wallet file or its -wal was last written, zero when
// neither can be read: then no write is known.
func lastModified(walletPath string) time.Time {
	var last time.Time
	for _, p := range []string{walletPath, walletPath + "-wal"} {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last
}

// watch makes the watcher watch exactly dirs. s.updateMu is held.
func (s *timetable) watch(dirs map[string]bool) error {
	var errs []error
	for dir := range dirs {
		if s.watched[dir] {
			continue
		}
		if err := s.events.Add(dir); err != nil {
			errs = append(errs, fmt.Errorf("watch wallet folder %s: %w", dir, err))
			continue
		}
		s.watched[dir] = true
	}
	for dir := range s.watched {
		if !dirs[dir] {
			// A folder that was deleted has lost its watch already: nothing to report.
			if err := s.events.Remove(dir); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
				s.log.Debug("unwatch wallet folder", "dir", dir, "err", err)
			}
			delete(s.watched, dir)
		}
	}
	return errors.Join(errs...)
}

// poke asks the loop to look at the schedules again.
func (s *timetable) poke() {
	select {
	case s.kick <- struct{}{}:
	default: // a look is already pending; it will see this change too
	}
}

// Run runs the schedules until ctx ends, then waits for the runs it started (their ctx
// is ctx) and closes the file watcher. Update, RunNow, Pause and Resume work before Run
// (they take effect when it starts) and during it, and refuse with ErrClosed after it.
// Run returns nil when ctx ends; it refuses a second call.
func (s *timetable) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return fmt.Errorf("run timetable: it already ran: %w", wallet.ErrInvalidArgument)
	}
	s.ran = true
	s.mu.Unlock()

	var runs sync.WaitGroup
	defer func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if err := s.events.Close(); err != nil {
			s.log.Debug("close file watcher", "err", err)
		}
		runs.Wait()
	}()
	events, errs := s.events.Events(), s.events.Errors()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.kick:
		case ev, ok := <-events:
			if !ok {
				events = nil
				break
			}
			s.noteEvent(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				break
			}
			s.noteWatchError(err)
		}
		timer.Reset(s.look(ctx, &runs))
	}
}

// noteEvent records a write to a watched wallet file or its -wal; other files in the
// folder, and changes of mode alone, are not the wallet's writes.
func (s *timetable) noteEvent(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
		return
	}
	now := s.wall()
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.files[filepath.Clean(ev.Name)]; ok {
		s.noteWriteLocked(now, func(e *entry) bool { return e.wallet == w })
	}
}

// noteWatchError logs a watcher error. An overflow means events were lost: every watched
// wallet is taken as written rather than a backup being missed.
func (s *timetable) noteWatchError(err error) {
	s.log.Error("watch wallet files", "err", err)
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		now := s.wall()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.noteWriteLocked(now, func(e *entry) bool { return e.wallet != "" })
	}
}

// noteWriteLocked records a write at now for the on-change entries that match.
func (s *timetable) noteWriteLocked(now time.Time, match func(*entry) bool) {
	for _, e := range s.entries {
		if e.dest.Schedule.Kind != api.ScheduleChange || !match(e) {
			continue
		}
		if e.changed.IsZero() {
			e.changed = now
		}
		e.lastWrite = now
	}
}

// look starts the runs that are due and returns how long the loop may sleep: until the
// next time due, at most a heartbeat.
func (s *timetable) look(ctx context.Context, runs *sync.WaitGroup) time.Duration {
	now, mono := s.wall(), time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.prevMono.IsZero() {
		if jump := now.Sub(s.prevWall) - mono.Sub(s.prevMono); jump > jumpTolerance || jump < -jumpTolerance {
			// Nothing more to do than say so: every schedule is judged on the wall
			// clock, just below, so what came due during the jump runs now, once.
			s.log.Info("wall clock jumped: the machine slept or the clock was set", "by", jump.Round(time.Second))
		}
	}
	s.prevWall, s.prevMono = now, mono

	wait := heartbeat
	for _, e := range s.entries {
		if e.running || e.removed { // a run's return brings the loop back here
			continue
		}
		if e.last.After(now) {
			// The clock was set back: a run "in the future" would hold the schedule back
			// by as much.
			e.last = now
		}
		at, why, ok := s.planLocked(e, now)
		switch {
		case !ok:
		case at.After(now):
			wait = min(wait, at.Sub(now))
		default:
			s.startLocked(ctx, runs, e, why, now)
		}
	}
	return wait
}

// startLocked starts e's run for reason why. The run sees every write made before it
// starts, so the pending change is done with; writes from now on make another.
func (s *timetable) startLocked(ctx context.Context, runs *sync.WaitGroup, e *entry, why api.Reason, now time.Time) {
	e.running, e.manual = true, false
	e.last, e.changed, e.lastWrite = now, time.Time{}, time.Time{}
	id := e.dest.ID
	runs.Go(func() {
		s.run(ctx, id, why)
		s.mu.Lock()
		e.running = false
		s.mu.Unlock()
		s.poke()
	})
}

// planLocked returns when e runs next, as of now, and why; ok is false when no run is
// coming: paused until resumed, or on change with nothing written since the last run. A
// time that has passed is returned as now.
func (s *timetable) planLocked(e *entry, now time.Time) (at time.Time, why api.Reason, ok bool) {
	if e.manual {
		return now, api.ReasonManual, true
	}
	due, ok := e.due(s.loc)
	if !ok {
		return time.Time{}, "", false
	}
	at = later(due, now)
	if e.dest.Paused(now) {
		if e.dest.Pause.Until.IsZero() {
			return time.Time{}, "", false
		}
		at = later(at, e.dest.Pause.Until)
	}
	if at.Sub(due) > lateAfter {
		return at, api.ReasonMissed, true
	}
	return at, api.Reason(e.dest.Schedule.Kind), true
}

// due returns when e's schedule next asks for a run; ok is false when it asks for none
// (on change, nothing written since the last run). A destination that never ran is due
// at the zero time: at once.
func (e *entry) due(loc *time.Location) (at time.Time, ok bool) {
	if e.last.IsZero() {
		return time.Time{}, true
	}
	s := e.dest.Schedule
	switch s.Kind {
	case api.ScheduleInterval:
		return e.last.Add(time.Duration(s.Every)), true
	case api.ScheduleDaily:
		return nextDaily(e.last, s.At, loc), true
	case api.ScheduleChange:
		if e.changed.IsZero() {
			return time.Time{}, false
		}
		d := time.Duration(s.Debounce)
		return earlier(e.lastWrite.Add(d), e.changed.Add(debounceCeiling*d)), true
	}
	return time.Time{}, false
}

// nextDaily returns the first time after last that a schedule daily at hhmm ("HH:MM",
// validated by Config.Validate) runs in loc: once per local date, at localTime.
func nextDaily(last time.Time, hhmm string, loc *time.Location) time.Time {
	clock, _ := time.Parse("15:04", hhmm)
	l := last.In(loc)
	for day := 0; ; day++ {
		if t := localTime(l.Year(), l.Month(), l.Day()+day, clock.Hour(), clock.Minute(), loc); t.After(last) {
			return t
		}
	}
}

// localTime returns the first instant of the local date y-mo-d (normalized as time.Date
// does) at which the clock in loc reads hh:mm or later. That is when it reads hh:mm,
// except across a daylight-saving change: when the clock falls back over hh:mm it reads
// it twice and this is the first; when it springs forward over it, it never does and
// this is the instant of the jump. time.Date leaves both cases unspecified.
func localTime(y int, mo time.Month, d, hh, mm int, loc *time.Location) time.Time {
	date := time.Date(y, mo, d, 12, 0, 0, 0, time.UTC) // normalize the date alone
	y, mo, d = date.Date()
	want := time.Date(y, mo, d, hh, mm, 0, 0, time.UTC)
	t := time.Date(y, mo, d, hh, mm, 0, 0, loc)
	start, end := t.ZoneBounds()
	switch read := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC); {
	case read.After(want): // hh:mm was skipped and t is past the gap: the jump began t's zone
		return start
	case read.Before(want): // hh:mm was skipped and t is before the gap: the jump ends t's zone
		return end
	}
	if start.IsZero() {
		return t
	}
	// If the clock fell back into t's zone, hh:mm may have been read in the zone before.
	name, off := start.Add(-time.Nanosecond).Zone()
	if first := time.Date(y, mo, d, hh, mm, 0, 0, time.FixedZone(name, off)); first.Before(start) {
		return first
	}
	return t
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Next returns when destination id (or the drill, drillID) runs next and why, for the
// dashboard: a time that has passed is returned as now (the run is about to start or is
// waiting for the current one). The time is zero when no run is coming: the destination
// is paused until resumed, or waits for the wallet to change. An unknown id is an error
// wrapping wallet.ErrNotFound.
func (s *timetable) Next(id string) (time.Time, api.Reason, error) {
	now := s.wall()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entryLocked(id)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("next run: %w", err)
	}
	at, why, _ := s.planLocked(e, now)
	return at, why, nil
}

func (s *timetable) entryLocked(id string) (*entry, error) {
	e, ok := s.entries[id]
	if !ok || e.removed {
		return nil, fmt.Errorf("destination %q: %w", id, wallet.ErrNotFound)
	}
	return e, nil
}

// RunNow asks for a run of destination id (or of the drill, drillID) at once, with
// ReasonManual, paused or not. If its run is going, the new one starts when it returns;
// asking again before then changes nothing. It refuses an unknown id
// (wallet.ErrNotFound) and any id after Run has returned (ErrClosed).
func (s *timetable) RunNow(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("run %s: %w", id, api.ErrClosed)
	}
	e, err := s.entryLocked(id)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	e.manual = true
	s.poke()
	return nil
}

// Ran records that destination id's job was started outside the timetable, now: a run by
// hand through the API, which starts its task at once to hand it back. The schedule then
// counts from this run, as from one the timetable starts, and writes made before it are
// done with; without this, the next resume or restart would take the destination for one
// that never ran and run it again at once. An unknown id is ignored.
func (s *timetable) Ran(id string) {
	now := s.wall()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok || !now.After(e.last) {
		return
	}
	e.last = now
	if !e.lastWrite.After(now) {
		e.changed, e.lastWrite = time.Time{}, time.Time{}
	}
	s.poke()
}

// Pause holds destination id's scheduled runs back for d, or until Resume when d is 0.
// A run by hand still runs; runs held back run once when the pause ends, by itself or by
// Resume. The pause is saved in the config through EditConfig. It refuses a negative d
// (wallet.ErrInvalidArgument) and an unknown id (wallet.ErrNotFound), changing nothing.
func (s *timetable) Pause(ctx context.Context, id string, d time.Duration) error {
	p, err := s.pauseFor(d)
	if err != nil {
		return fmt.Errorf("pause %s: %w", id, err)
	}
	return s.setPause(ctx, "pause "+id, id, false, p)
}

// PauseAll pauses every destination as Pause does. The drill is not paused: it only
// reads backup files, and a pause is for destinations.
func (s *timetable) PauseAll(ctx context.Context, d time.Duration) error {
	p, err := s.pauseFor(d)
	if err != nil {
		return fmt.Errorf("pause all: %w", err)
	}
	return s.setPause(ctx, "pause all", "", true, p)
}

// Resume ends destination id's pause; a run held back by it runs at once, once. It
// refuses an unknown id (wallet.ErrNotFound).
func (s *timetable) Resume(ctx context.Context, id string) error {
	return s.setPause(ctx, "resume "+id, id, false, nil)
}

// ResumeAll ends every destination's pause, as Resume does.
func (s *timetable) ResumeAll(ctx context.Context) error {
	return s.setPause(ctx, "resume all", "", true, nil)
}

func (s *timetable) pauseFor(d time.Duration) (*api.Pause, error) {
	switch {
	case d < 0:
		return nil, fmt.Errorf("pause for %s: %w", d, wallet.ErrInvalidArgument)
	case d == 0:
		return &api.Pause{}, nil
	}
	return &api.Pause{Until: s.wall().Add(d).UTC()}, nil
}

// setPause sets the pause of destination id, or of every destination, through
// EditConfig, and applies the saved config.
func (s *timetable) setPause(ctx context.Context, action, id string, all bool, p *api.Pause) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed { // refused before the config is saved, not after
		return fmt.Errorf("%s: %w", action, api.ErrClosed)
	}
	var saved api.Config
	err := s.editConfig(ctx, func(c *api.Config) error {
		found := false
		for i := range c.Destinations {
			if d := &c.Destinations[i]; all || d.ID == id {
				d.Pause, found = nil, true
				if p != nil {
					cp := *p
					d.Pause = &cp
				}
			}
		}
		if !found && !all {
			return fmt.Errorf("destination %q: %w", id, wallet.ErrNotFound)
		}
		saved = *c
		saved.Wallets, saved.Destinations = slices.Clone(c.Wallets), slices.Clone(c.Destinations)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := s.Update(saved); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return nil
}
