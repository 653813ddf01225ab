package syncer_test

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// minSchedules is how many generated fault schedules TestRun_SurvivesFaultSchedules must run:
// the issue asks for at least 300, rapid's own default is 100 checks. Under the race
// detector, and in the quick tier (-short), it runs raceSchedules: under the race detector
// one schedule costs about half a second of CPU (the pure-Go SQLite under checkptr), and
// 300 of them were a third of CI's race stage. The test command runs the 300 without it
// (scripts/test.sh), so both are covered: the schedules' invariants 300 times, the
// session's concurrency under the race detector.
const minSchedules = 300

// raceSchedules is minSchedules under the race detector.
const raceSchedules = 60

// wantSchedules is how many schedules this build must run.
func wantSchedules() int {
	if raceDetector || testing.Short() {
		return raceSchedules
	}
	return minSchedules
}

// scheduleWorkers share the schedules, each in a parallel subtest with its own rapid.Check.
// Under the race detector one schedule costs about half a second of CPU, most of it SQLite
// parsing statements under checkptr, and one worker keeps one CPU busy.
const scheduleWorkers = 2

const (
	// viewRestarts is how often a session opens a new view after one ended under it before it
	// gives up (syncer's maxViewRestarts).
	viewRestarts = 3
	// scheduleRetries bounds commit retries in these tests: low, so that a generated run of
	// dropped requests can exhaust it.
	scheduleRetries = 2
	// linkName is the destination's name in the access queue; fences name it.
	linkName = "backup"
)

// rapidChecksGiven is true when -rapid.checks was on the command line; then it wins.
var rapidChecksGiven bool

// requireSchedules makes each worker's rapid.Check run its share of wantSchedules checks,
// unless the command line says how many.
func requireSchedules() {
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { rapidChecksGiven = rapidChecksGiven || f.Name == "rapid.checks" })
	if !rapidChecksGiven {
		per := (wantSchedules() + scheduleWorkers - 1) / scheduleWorkers
		if testing.Short() {
			per *= 5 // rapid runs a fifth of -rapid.checks under -short
		}
		if err := flag.Set("rapid.checks", strconv.Itoa(per)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// faultKind is one way the transport misbehaves.
type faultKind string

const (
	dropAck       faultKind = "drop-ack"         // the batch commits, its acknowledgement is lost
	dropRequest   faultKind = "drop-request"     // the batch is lost, and its next arg-1 retries
	delay         faultKind = "delay"            // the batch is held arg x 100 µs
	duplicate     faultKind = "duplicate"        // the batch is delivered twice
	reorder       faultKind = "reorder"          // after the batch, an older one is delivered again
	tamperSeq     faultKind = "tamper-seq"       // the acknowledgement names another sequence,
	tamperTable   faultKind = "tamper-table"     // another table position,
	tamperDone    faultKind = "tamper-done"      // the other done flag,
	tamperSession faultKind = "tamper-session"   // another session,
	tamperError   faultKind = "tamper-error"     // or carries an error
	fence         faultKind = "fence"            // after the commit, the destination is fenced
	cancelCommit  faultKind = "cancel-in-commit" // the context ends while the commit runs
	expire        faultKind = "expire"           // the view expires under a read
	cancelRead    faultKind = "cancel-in-read"   // the context ends during a read
)

var (
	commitFaults = []faultKind{dropAck, dropRequest, delay, duplicate, reorder, tamperSeq, tamperTable, tamperDone,
		tamperSession, tamperError, fence, cancelCommit}
	readFaults = []faultKind{expire, cancelRead}
)

// fault is what the transport does to one commit call.
type fault struct {
	kind faultKind
	arg  int // 1..scheduleRetries+1: attempts dropped, hundreds of µs held, batches back
}

// runPlan is the faults of one run, by call: the Nth Commit, the Nth ReadPage, from 0.
type runPlan struct {
	commits map[int]fault
	reads   map[int]faultKind
}

// drawPlan draws up to 4 commit faults over the first 21 commits (a run makes 13 to 17) and
// up to 5 read faults over the first 31 reads: enough to stack faults in one run and, rarely,
// to exhaust the retries or the view restarts, yet leave most runs long enough for the
// commit faults to fire.
func drawPlan(rt *rapid.T) runPlan {
	f := rapid.Custom(func(t *rapid.T) fault {
		return fault{kind: rapid.SampledFrom(commitFaults).Draw(t, "kind"), arg: rapid.IntRange(1, scheduleRetries+1).Draw(t, "arg")}
	})
	return runPlan{
		commits: rapid.MapOfN(rapid.IntRange(0, 20), f, 0, 4).Draw(rt, "commit faults"),
		reads:   rapid.MapOfN(rapid.IntRange(0, 30), rapid.SampledFrom(readFaults), 0, 5).Draw(rt, "read faults"),
	}
}

// event is what happened in a run that decides how it must end: a fault that fired, or one
// of the moments below.
type event string

const (
	committing       event = "committing"        // the engine reported it is about to commit a page
	retriesExhausted event = "retries-exhausted" // the last attempt the session makes was dropped
	cancelLastCommit event = "cancel-in-last-commit"
)

// outcome returns the error a run with these events must end with: nil when it completes,
// context.Canceled when it is cancelled. The first decisive event wins: a refused
// acknowledgement or a cancel stops the session at once, a fence at its next commit, the
// fourth expired view and the last dropped retry fail it. A cancel during the final commit
// decides nothing: no work is left, the run completes.
func outcome(events []event) error {
	fenced, expiries := false, 0
	for _, e := range events {
		switch e {
		case event(tamperSeq), event(tamperTable), event(tamperDone), event(tamperSession):
			return wallet.ErrAckMismatch
		case event(tamperError):
			return wallet.ErrDestinationFailed
		case event(cancelCommit), event(cancelRead):
			return context.Canceled
		case retriesExhausted:
			return errLinkDown
		case event(fence):
			fenced = true
		case committing:
			if fenced {
				return wallet.ErrStaleSession
			}
		case event(expire):
			if expiries++; expiries > viewRestarts {
				return wallet.ErrSnapshotExpired
			}
		}
	}
	return nil
}

// errLinkDown is the transport losing a batch or an acknowledgement.
var errLinkDown = errors.New("link down")

// link is the in-process transport of the fault tests: a session's Source and Destination
// both go through it to real stores, and it misbehaves as the run's plan says. It also
// watches the contract from the wire: every batch that lands moves the destination's
// sequence by exactly one, a duplicate or an older batch changes nothing, nothing reaches
// the destination after a fence, nothing is read after a refused acknowledgement.
type link struct {
	src   wallet.Source
	dst   *localstore.Store
	raw   *sql.DB // the destination file, for counting rows
	queue *scheduler.Queue
	runState

	// Across the runs of a schedule.
	seq        int64                                // the destination's sequence as the wire saw it move
	history    []wallet.Batch                       // every batch that landed, oldest first
	landed     map[wallet.TableName]map[string]bool // the rows of those batches, by source key
	violations []string
}

// runState is one run's plan and what happened in it.
type runState struct {
	plan           runPlan
	cancel         context.CancelFunc
	reads, commits int // calls so far
	dropping       int // further attempts of the current batch to drop
	dropped        int // attempts of the current batch dropped in a row
	events         []event
	fenced         bool
	refused        bool // an acknowledgement was tampered with
	readsAtRefusal int
}

var (
	_ wallet.Source      = (*link)(nil)
	_ wallet.Destination = (*link)(nil)
)

// run runs a session through the link with plan, under a new access-queue session: a fence
// earlier makes the previous one stale for good.
func (l *link) run(ctx context.Context, identity string, plan runPlan, opts syncer.Options) (syncer.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.runState = runState{plan: plan, cancel: cancel}
	opts.Grants = l.queue.NewSession(identity, linkName)
	return syncer.Run(ctx, l, l, identity, opts)
}

func (l *link) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// progress is the sessions' progress callback: it logs each commit the engine begins.
func (l *link) progress(p syncer.Progress) error {
	if p.State == syncer.StateCommitting {
		l.events = append(l.events, committing)
	}
	return nil
}

func (l *link) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	return l.src.Describe(ctx)
}

func (l *link) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	v, err := l.src.OpenView(ctx, lifetime)
	if err != nil {
		return nil, err
	}
	return linkView{View: v, link: l}, nil
}

// linkView sends a view's reads through the link.
type linkView struct {
	wallet.View
	link *link
}

func (v linkView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	l := v.link
	call := l.reads
	l.reads++
	if l.refused {
		l.violate("%s page read after a refused acknowledgement", req.Table)
	}
	switch kind := l.plan.reads[call]; kind {
	case expire:
		l.events = append(l.events, event(kind))
		return wallet.Page{}, fmt.Errorf("read page %s: %w", req.Table, wallet.ErrSnapshotExpired)
	case cancelRead:
		// A view ends with the context it was opened under, and the read in flight fails as
		// a localstore view's does when the view's end wins the race with the query.
		l.cancel()
		l.events = append(l.events, event(kind))
		return wallet.Page{}, fmt.Errorf("read page %s: %w", req.Table, wallet.ErrSnapshotClosed)
	}
	return v.View.ReadPage(ctx, req)
}

func (l *link) Begin(ctx context.Context, key wallet.SessionKey) (wallet.DestinationState, error) {
	return l.dst.Begin(ctx, key)
}

func (l *link) Checkpoint(ctx context.Context, key wallet.SessionKey) (wallet.Checkpoint, error) {
	return l.dst.Checkpoint(ctx, key)
}

func (l *link) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	call := l.commits
	l.commits++
	if l.fenced {
		l.violate("batch %d reached the destination after the fence", b.Checkpoint.Seq)
	}
	f := l.plan.commits[call]
	if f.kind == dropRequest && l.dropping == 0 {
		l.dropping = f.arg
		l.events = append(l.events, event(dropRequest))
	}
	if l.dropping > 0 {
		l.dropping--
		if l.dropped++; l.dropped > scheduleRetries {
			l.events = append(l.events, retriesExhausted)
		}
		return wallet.Ack{}, fmt.Errorf("send batch %d: %w", b.Checkpoint.Seq, errLinkDown)
	}
	l.dropped = 0
	ev := event(f.kind)
	switch f.kind {
	case delay:
		time.Sleep(time.Duration(f.arg) * 100 * time.Microsecond)
	case cancelCommit:
		l.cancel()
		if b.Checkpoint.Done {
			ev = cancelLastCommit
		}
	}
	ack, err := l.deliver(ctx, b)
	if err != nil || f.kind == "" {
		return ack, err
	}
	switch f.kind {
	case dropAck:
		err = fmt.Errorf("receive acknowledgement %d: %w", b.Checkpoint.Seq, errLinkDown)
		ack = wallet.Ack{}
	case duplicate:
		l.redeliver(ctx, b, true)
	case reorder:
		n := len(l.history)
		if n < 2 {
			return ack, nil // no older batch to deliver again
		}
		l.redeliver(ctx, l.history[n-2-(f.arg-1)%(n-1)], false)
	case fence:
		l.queue.Fence(linkName)
		l.fenced = true
	case tamperSeq, tamperTable, tamperDone, tamperSession, tamperError:
		ack = tamper(ack, f.kind)
		l.refused, l.readsAtRefusal = true, l.reads
	}
	l.events = append(l.events, ev)
	return ack, err
}

// deliver commits b at the destination and checks that the sequence moved by exactly one, or
// not at all when the destination says the batch is a duplicate.
func (l *link) deliver(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	ack, err := l.dst.Commit(ctx, b)
	if err != nil {
		return ack, err
	}
	want := l.seq + 1
	if ack.Duplicate {
		want = l.seq
	}
	if ack.Checkpoint.Seq != want {
		l.violate("the destination went from sequence %d to %d (duplicate %v)", l.seq, ack.Checkpoint.Seq, ack.Duplicate)
	}
	if ack.Duplicate {
		return ack, nil
	}
	l.seq = ack.Checkpoint.Seq
	l.history = append(l.history, b)
	if len(b.Page.Rows) > 0 {
		t, _ := wallet.LookupTable(b.Page.Table)
		if l.landed[t.Name] == nil {
			l.landed[t.Name] = map[string]bool{}
		}
		for _, r := range b.Page.Rows {
			l.landed[t.Name][fmt.Sprint(t.KeyOf(r))] = true
		}
	}
	return ack, nil
}

// redeliver sends b again after it (same) or a newer batch landed. The destination must
// answer a batch it committed last as a duplicate, refuse an older one with
// ErrCheckpointConflict or answer it as a duplicate, and change nothing either way.
func (l *link) redeliver(ctx context.Context, b wallet.Batch, same bool) {
	key := b.Checkpoint.Session
	before, err := l.dst.Checkpoint(ctx, key)
	if err != nil {
		l.violate("checkpoint: %v", err)
		return
	}
	ack, err := l.dst.Commit(ctx, b)
	switch {
	case err == nil && (!ack.Duplicate || ack.Inserts != 0 || ack.Updates != 0):
		l.violate("batch %d delivered again at sequence %d was applied: %+v", b.Checkpoint.Seq, before.Seq, ack)
	case err != nil && (same || !errors.Is(err, wallet.ErrCheckpointConflict)):
		l.violate("batch %d delivered again at sequence %d: %v", b.Checkpoint.Seq, before.Seq, err)
	}
	after, err := l.dst.Checkpoint(ctx, key)
	if err != nil || !after.UpdatedAt.Equal(before.UpdatedAt) {
		l.violate("batch %d delivered again moved the checkpoint: %+v, then %+v (%v)", b.Checkpoint.Seq, before, after, err)
		return
	}
	after.UpdatedAt = before.UpdatedAt
	if after != before {
		l.violate("batch %d delivered again moved the checkpoint: %+v, then %+v", b.Checkpoint.Seq, before, after)
	}
}

// tamper returns ack changed as kind says: every change is one Ack.Match must refuse.
func tamper(ack wallet.Ack, kind faultKind) wallet.Ack {
	cp := &ack.Checkpoint
	switch kind {
	case tamperSeq:
		cp.Seq++
	case tamperTable:
		cp.Table = (cp.Table + 1) % len(wallet.SyncOrder)
	case tamperDone:
		cp.Done = !cp.Done
	case tamperSession:
		cp.Session.IdentityKey = localstore.FixtureIdentity(99)
	case tamperError:
		ack.Error = "the destination failed after the commit"
	}
	return ack
}

// check checks a run that ended with res and err against what the link saw: no violation on
// the wire, the end its events imply, the durable checkpoint where the wire last moved it
// (never back) and, but for a refused acknowledgement, the one in the result; every row of
// every batch that landed, in this run or before, still at the destination.
func (l *link) check(ctx context.Context, res syncer.Result, err error) error {
	if len(l.violations) > 0 {
		return errors.New(strings.Join(l.violations, "\n"))
	}
	want, state := outcome(l.events), syncer.StateFailed
	switch {
	case want == nil:
		state = syncer.StateCompleted
	case errors.Is(want, context.Canceled):
		state = syncer.StateCancelled
	}
	if (want == nil) != (err == nil) || !errors.Is(err, want) || res.State != state {
		return fmt.Errorf("run with events %v ended %s: %v; want %s: %v", l.events, res.State, err, state, want)
	}
	durable, err := l.dst.Checkpoint(ctx, res.Checkpoint.Session)
	if err != nil {
		return err
	}
	accepted := durable.Seq
	if l.refused {
		accepted-- // the refused acknowledgement's batch landed, but the session must not advance on it
	}
	switch {
	case durable.Seq != l.seq:
		return fmt.Errorf("the destination holds sequence %d, the wire last saw %d", durable.Seq, l.seq)
	case res.Checkpoint.Seq != accepted:
		return fmt.Errorf("the result holds sequence %d, want %d (destination %d)", res.Checkpoint.Seq, accepted, durable.Seq)
	case want == nil && !durable.Done:
		return fmt.Errorf("completed run left an unfinished checkpoint: %+v", durable)
	case l.seq == 0:
		return nil // nothing landed yet
	}
	rows, err := tableRows(ctx, l.raw)
	if err != nil {
		return err
	}
	for t, keys := range l.landed {
		if rows[t] < int64(len(keys)) {
			return fmt.Errorf("%d %s rows landed, the destination holds %d", len(keys), t, rows[t])
		}
	}
	return nil
}

// failer is what the fault helpers need of a *testing.T and a *rapid.T alike.
type failer interface {
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// faultEnv is what a fault test shares between its runs: the template source opened read-only
// (no session writes to it, so every schedule reads the same wallet and its replica is read
// once; it refuses the journal acknowledgement, which only adds a warning to each result)
// and the empty destination template.
type faultEnv struct {
	templates
	src *localstore.Store
}

func newFaultEnv(t *testing.T, tp templates) faultEnv {
	env := faultEnv{templates: tp}
	var err error
	env.src, err = localstore.Open(context.Background(), filepath.Join(env.dir, "src.sqlite"), localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.src.Close() })
	return env
}

// newLink returns a link from the shared source to a fresh copy of the empty destination.
func (env faultEnv) newLink(f failer) *link {
	dir, err := os.MkdirTemp(env.dir, "dst-")
	if err != nil {
		f.Fatalf("%v", err)
	}
	path := filepath.Join(dir, "dst.sqlite")
	if err := copyStore(filepath.Join(env.dir, "dst.sqlite"), path); err != nil {
		f.Fatalf("%v", err)
	}
	dst, err := localstore.Open(context.Background(), path, localstore.Options{})
	if err != nil {
		f.Fatalf("%v", err)
	}
	raw, err := openRaw(path)
	if err != nil {
		f.Fatalf("%v", err)
	}
	f.Cleanup(func() {
		raw.Close()
		dst.Close()
		os.RemoveAll(dir)
	})
	caps, err := dst.Capabilities(context.Background())
	if err != nil {
		f.Fatalf("%v", err)
	}
	q, err := scheduler.New(caps, scheduler.Options{})
	if err != nil {
		f.Fatalf("%v", err)
	}
	return &link{src: env.src, dst: dst, raw: raw, queue: q, landed: map[wallet.TableName]map[string]bool{}}
}

// options are the options of a session over l: retries that do not sleep for long.
func (l *link) options(maxRows int) syncer.Options {
	return syncer.Options{MaxRows: maxRows, Active: wallet.KeepSourceActive, Retries: scheduleRetries,
		Backoff: time.Microsecond, Progress: l.progress}
}

// complete runs a session without faults, which must complete whatever earlier runs left,
// and checks the destination then equals the source.
func (env faultEnv) complete(f failer, l *link, opts syncer.Options) {
	ctx := context.Background()
	res, err := l.run(ctx, env.identity, runPlan{}, opts)
	if err == nil {
		err = l.check(ctx, res, err)
	}
	if err == nil {
		err = env.want.check(ctx, l.dst, env.identity)
	}
	if err != nil {
		f.Fatalf("run without faults: %v (result %+v)", err, res)
	}
}

// TestRun_SurvivesFaultSchedules runs generated schedules: one or two runs of a push through
// a transport that drops requests and acknowledgements, delays, duplicates and reorders
// batches, tampers with acknowledgements, fences the destination, expires the view and
// cancels, each run checked as link.check says; then a run without faults, which must
// complete with the destination equal to the source (row for row, count for count, no
// natural key twice, integrity clean) and the checkpoint done.
func TestRun_SurvivesFaultSchedules(t *testing.T) {
	t.Parallel()
	tp := newTemplates(t)
	var schedules atomic.Int64
	stats := make([]scheduleStats, scheduleWorkers)
	t.Run("workers", func(t *testing.T) {
		for w := range scheduleWorkers {
			t.Run(strconv.Itoa(w), func(t *testing.T) {
				t.Parallel()
				env := newFaultEnv(t, tp)
				stats[w] = scheduleStats{events: map[event]int{}, ends: map[string]int{}}
				rapid.Check(t, func(rt *rapid.T) {
					schedules.Add(1)
					env.schedule(rt, stats[w])
				})
			})
		}
	})
	all := scheduleStats{events: map[event]int{}, ends: map[string]int{}}
	for _, st := range stats {
		for e, n := range st.events {
			all.events[e] += n
		}
		for e, n := range st.ends {
			all.ends[e] += n
		}
	}
	n := schedules.Load()
	t.Logf("ran %d fault schedules; events: %v; faulty runs ended: %v", n, all.events, all.ends)
	if rapidChecksGiven {
		return
	}
	if want := wantSchedules(); n < int64(want) {
		t.Fatalf("ran %d fault schedules, want at least %d", n, want)
	}
	// A generator that stopped producing one of these would leave its invariant untested.
	// Some kinds are rare (about one in 300 schedules): the race build's 60 may miss them,
	// so the full run checks this.
	if raceDetector || testing.Short() {
		return
	}
	for _, k := range append(append([]faultKind{}, commitFaults...), readFaults...) {
		if all.events[event(k)] == 0 {
			t.Errorf("no %s fault fired in %d schedules", k, n)
		}
	}
}

// scheduleStats count what the schedules of one worker exercised: the events of their
// faulty runs and how those runs ended.
type scheduleStats struct {
	events map[event]int
	ends   map[string]int
}

// schedule runs one generated schedule against a fresh destination.
func (env faultEnv) schedule(rt *rapid.T, st scheduleStats) {
	ctx := context.Background()
	l := env.newLink(rt)
	opts := l.options(rapid.IntRange(6, 16).Draw(rt, "max rows"))
	for run := range rapid.IntRange(1, 2).Draw(rt, "faulty runs") {
		plan := drawPlan(rt)
		res, err := l.run(ctx, env.identity, plan, opts)
		if err := l.check(ctx, res, err); err != nil {
			rt.Fatalf("faulty run %d with %+v: %v", run, plan, err)
		}
		for _, e := range l.events {
			st.events[e]++
		}
		st.ends[fmt.Sprint(outcome(l.events))]++
	}
	env.complete(rt, l, opts)
}

// TestRun_RefusesMismatchedAcknowledgement: an acknowledgement that names another sequence,
// table position, done flag or session fails the session with wallet.ErrAckMismatch, one
// that carries an error with wallet.ErrDestinationFailed; either way before another page is
// read, and the session's checkpoint stays at the last acknowledgement that matched although
// the batch landed. A new session then resumes from the destination and completes.
func TestRun_RefusesMismatchedAcknowledgement(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, newTemplates(t))
	const at = 2 // the third commit: two acknowledgements matched before it
	for _, c := range []struct {
		kind faultKind
		want error
	}{
		{tamperSeq, wallet.ErrAckMismatch},
		{tamperTable, wallet.ErrAckMismatch},
		{tamperDone, wallet.ErrAckMismatch},
		{tamperSession, wallet.ErrAckMismatch},
		{tamperError, wallet.ErrDestinationFailed},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			ctx := context.Background()
			l := env.newLink(t)
			opts := l.options(6)
			res, err := l.run(ctx, env.identity, runPlan{commits: map[int]fault{at: {kind: c.kind}}}, opts)
			if !errors.Is(err, c.want) || res.State != syncer.StateFailed {
				t.Fatalf("run: %s, %v; want failed with %v", res.State, err, c.want)
			}
			if !l.refused || l.reads != l.readsAtRefusal {
				t.Fatalf("%d pages read after the refused acknowledgement (refused %v)", l.reads-l.readsAtRefusal, l.refused)
			}
			durable, err := l.dst.Checkpoint(ctx, res.Checkpoint.Session)
			if err != nil {
				t.Fatal(err)
			}
			if res.Checkpoint.Seq != at || durable.Seq != at+1 {
				t.Fatalf("session at sequence %d, destination at %d; want %d and %d", res.Checkpoint.Seq, durable.Seq, at, at+1)
			}
			env.complete(t, l, opts)
		})
	}
}

// TestRun_StaleSessionWritesNothing fences the destination (scheduler.Queue.Fence) when the
// engine is about to commit its first page, or a page in the middle: the session fails with
// wallet.ErrStaleSession, the page it read is never sent and nothing reaches the destination
// after the fence; fenced before the first commit, the destination does not even know the
// user. A session made after the fence completes.
func TestRun_StaleSessionWritesNothing(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, newTemplates(t))
	for _, c := range []struct {
		name    string
		fenceAt int // the commit the engine is about to make, from 1
	}{
		{"before the first commit", 1},
		{"mid-run", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l := env.newLink(t)
			opts := l.options(6)
			committing := 0
			fenced := opts
			fenced.Progress = func(p syncer.Progress) error {
				if p.State == syncer.StateCommitting {
					if committing++; committing == c.fenceAt {
						l.queue.Fence(linkName)
					}
				}
				return nil
			}
			res, err := l.run(ctx, env.identity, runPlan{}, fenced)
			if !errors.Is(err, wallet.ErrStaleSession) || res.State != syncer.StateFailed {
				t.Fatalf("run: %s, %v; want failed with %v", res.State, err, wallet.ErrStaleSession)
			}
			written := int64(c.fenceAt - 1)
			durable, err := l.dst.Checkpoint(ctx, res.Checkpoint.Session)
			if err != nil {
				t.Fatal(err)
			}
			if int64(l.commits) != written || durable.Seq != written || res.Checkpoint.Seq != written {
				t.Fatalf("%d commits sent, destination at sequence %d, session at %d; want %d before the fence and none after",
					l.commits, durable.Seq, res.Checkpoint.Seq, written)
			}
			if written == 0 {
				if _, err := l.dst.Summary(ctx, env.identity); !errors.Is(err, wallet.ErrNotFound) {
					t.Fatalf("fenced before the first commit, the destination knows the user: %v", err)
				}
			}
			env.complete(t, l, opts)
		})
	}
}
