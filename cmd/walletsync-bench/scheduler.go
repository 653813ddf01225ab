package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"walletsync/brc40"
	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// `walletsync bench scheduler` asks whether a background copy makes the wallet feel slow.
// A foreground workload (the reads and small writes of a wallet front end, one every
// couple of milliseconds) runs against a wallet while a background job copies a wallet of the
// same size page by page, in three modes measured in the same run:
//
//   - idle: no background job;
//   - exclusive: the background job holds one grant on the wallet for the whole copy (the old
//     way: one application-wide lock);
//   - paged: this scheduler's way;
//   - apart: the same paged copy, on a second copy of the wallet with a queue of its own, so
//     that it shares nothing with the foreground but the machine (its cores and its disk).
//     Its foreground p95 over idle is the floor of the p95 goal: what no scheduling of the
//     wallet's own access can go below on this machine.
//
// and in both directions a copy can take:
//
//   - backup: the wallet is copied out, to another store. Paged, the copy reads the wallet
//     through snapshot views outside every grant and commits elsewhere, so it needs no grant on
//     the wallet at all; exclusive, its one grant spans the reads and the commits, as the old
//     application-wide lock did across a whole transfer.
//   - restore: another wallet is copied in. Paged, each page commit takes one short background
//     write grant, pages sized by the adaptive budget. The wallet is in WAL mode, so its queue
//     grants the foreground's reads beside a commit (wallet.Capabilities.ReadsBesideWriter):
//     only the foreground's writes and the copy's commits wait for each other.
//
// Each direction has its goals (issue 18), on the toolbox fixture at the default 20 ms
// target, median of 3 rounds: foreground p95 paged <= 2x idle in both; the copy paged <=
// 1.2x the exclusive copy for a backup, <= 1.3x for a restore.

// schedulerPhase is one mode's measurements.
type schedulerPhase struct {
	Mode string `json:"mode"`
	// Foreground latency of each operation, from when it was due to when it finished
	// (queue wait plus its work), in milliseconds.
	Ops       int     `json:"ops"`
	P50ms     float64 `json:"p50ms"`
	P95ms     float64 `json:"p95ms"`
	P99ms     float64 `json:"p99ms"`
	MaxWaitMs float64 `json:"maxQueueWaitMs"`
	// The same p95 of the reads and of the writes alone: where reads run beside a commit,
	// what is left of a copy's cost to the foreground is in the writes.
	ReadP95ms  float64 `json:"readP95ms"`
	WriteP95ms float64 `json:"writeP95ms"`
	// ForegroundBusy is the share of the foreground run during which a foreground grant was
	// held: the store time the foreground workload itself takes. ForegroundWriteBusy is the
	// part under write grants, the store time a background commit cannot have when readers
	// run beside a writer.
	ForegroundBusy      float64 `json:"foregroundBusy"`
	ForegroundWriteBusy float64 `json:"foregroundWriteBusy"`
	// Background completion time of the copy (0 when idle), and its pages.
	BackgroundSeconds float64 `json:"backgroundSeconds"`
	BackgroundPages   int64   `json:"backgroundPages"`
	// BackgroundHoldSeconds is the copy's time under grants on the wallet: the whole copy
	// when exclusive, the page commits of a paged restore, nothing for a paged backup.
	BackgroundHoldSeconds float64 `json:"backgroundHoldSeconds"`
	// Page commits of the copy: rows per page (the budget's choice for a paged restore) and
	// commit time percentiles, in milliseconds.
	MeanPageRows float64 `json:"meanPageRows"`
	CommitP50ms  float64 `json:"commitP50ms"`
	CommitP95ms  float64 `json:"commitP95ms"`
	CommitMaxMs  float64 `json:"commitMaxMs"`
	pageTimes
	// Where the foreground's time went: the slowest 5% of its operations split into late
	// start, grant wait and store time; the p95 of the store time alone of its reads and of
	// its writes; and the process's and the wallet's counters over the run.
	Slowest         opSplit        `json:"slowest"`
	ReadStoreP95ms  float64        `json:"readStoreP95ms"`
	WriteStoreP95ms float64        `json:"writeStoreP95ms"`
	Where           runAttribution `json:"where"`
}

// schedulerScenario is one copy direction: its exclusive and paged runs against the shared
// idle run, and the ratios the goals are stated in.
type schedulerScenario struct {
	Direction string         `json:"direction"`
	Exclusive schedulerPhase `json:"exclusive"`
	Paged     schedulerPhase `json:"paged"`
	Apart     schedulerPhase `json:"apart"`
	// PagedOverIdleP95 is the foreground p95 with the paged copy over idle (goal P95Goal).
	PagedOverIdleP95 float64 `json:"pagedOverIdleP95"`
	P95Goal          float64 `json:"p95Goal"`
	P95Met           bool    `json:"p95Met"`
	// ApartOverIdleP95 is the foreground p95 with the copy apart over idle: the cost of
	// sharing the machine alone, the floor of PagedOverIdleP95. Above P95Goal the p95 goal
	// cannot be met on this machine by any access scheduling.
	ApartOverIdleP95 float64 `json:"apartOverIdleP95"`
	// ExclusiveOverPagedP95 is how much worse the old way is for the foreground.
	ExclusiveOverPagedP95 float64 `json:"exclusiveOverPagedP95"`
	// PagedOverExclusiveBackground is the copy's time paged over exclusive (goal CopyGoal).
	PagedOverExclusiveBackground float64 `json:"pagedOverExclusiveBackground"`
	CopyGoal                     float64 `json:"copyGoal"`
	CopyMet                      bool    `json:"copyMet"`
	// PagedCopyFloorOverExclusive is the least PagedOverExclusiveBackground can be: the paged
	// copy's time under write grants, out of the store time the foreground leaves it (1 - the
	// idle foreground's write busy share where reads run beside a writer, 1 - its whole busy
	// share where they do not), over the exclusive copy's time. Above CopyGoal the copy goal
	// cannot be met at this foreground load on this machine. Zero for a backup, which takes
	// no grant on the wallet when paged.
	PagedCopyFloorOverExclusive float64 `json:"pagedCopyFloorOverExclusive"`
}

// Goals of each direction (issue 18): the foreground p95 paged over idle, and the copy paged
// over exclusive.
var schedulerGoals = map[string]struct{ p95, copy float64 }{
	directionBackup:  {p95: 2, copy: 1.2},
	directionRestore: {p95: 2, copy: 1.3},
}

// met says whether a ratio meets its goal, for the report.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

type schedulerBenchReport struct {
	Fixture string `json:"fixture"`
	// ReadsBesideWriter is what the wallet advertised to its queue (true in WAL mode).
	ReadsBesideWriter bool `json:"readsBesideWriter"`
	// Repeat is how many times each run was measured; each reported run is the median one
	// (by background completion time, or foreground p95 when idle).
	Repeat  int               `json:"repeat"`
	Idle    schedulerPhase    `json:"idle"`
	Backup  schedulerScenario `json:"backup"`
	Restore schedulerScenario `json:"restore"`
}

// Copy directions of `bench scheduler`.
const (
	directionBackup  = "backup"
	directionRestore = "restore"
)

// RunScheduler is `walletsync bench scheduler`: a foreground workload's latency while a
// background copy (backup or restore) runs, idle, with the copy holding the wallet
// exclusively, and paged through the scheduler.
func RunScheduler(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("scheduler", "[--fixture toolbox] [--dir D] [--interval 5ms] [--target 20ms] [--repeat 3] [--json]", out)
	fb := foregroundBenchFlags(fs, "the wallets to use: toolbox, small or large",
		"measurements of each run, in rounds; the median one is reported (a copy takes under a second on the toolbox fixture, and one run is at the mercy of a noisy machine)")
	target := fs.Duration("target", 20*time.Millisecond, "the adaptive page budget's target commit time")
	setup, interval, repeat := fb.setup, fb.interval, fb.repeat
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	f, walletPath, identity, progress, work, err := fb.prepare(ctx, out, "scheduler")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// The wallet a restore copies in is the same fixture under another identity and storage.
	otherPath := filepath.Join(work, "other.sqlite")
	other, err := localstore.Create(ctx, otherPath, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "other"}, localstore.Options{})
	if err != nil {
		return err
	}
	otherRes, err := localstore.Seed(ctx, other, f, localstore.SeedOptions{Seed: 2})
	if err != nil {
		other.Close()
		return err
	}
	defer other.Close()

	rep := schedulerBenchReport{Fixture: string(f), Repeat: *repeat, Backup: schedulerScenario{Direction: directionBackup}, Restore: schedulerScenario{Direction: directionRestore}}
	run := schedulerRun{work: work, walletPath: walletPath, identity: identity, other: other, otherIdentity: otherRes.IdentityKey, interval: *interval, target: *target}
	steps := []struct {
		mode      string
		direction string
		dst       *schedulerPhase
		runs      []schedulerPhase
	}{
		{mode: "paged", direction: directionRestore, dst: &rep.Restore.Paged},
		{mode: "exclusive", direction: directionRestore, dst: &rep.Restore.Exclusive},
		{mode: "apart", direction: directionRestore, dst: &rep.Restore.Apart},
		{mode: "paged", direction: directionBackup, dst: &rep.Backup.Paged},
		{mode: "exclusive", direction: directionBackup, dst: &rep.Backup.Exclusive},
		{mode: "apart", direction: directionBackup, dst: &rep.Backup.Apart},
		{mode: "idle", dst: &rep.Idle},
	}
	// Rounds, not one mode N times in a row, so that a slow spell of the machine spreads over
	// all the modes instead of landing on one.
	for round := 1; round <= *repeat; round++ {
		for i := range steps {
			step := &steps[i]
			name := strings.TrimSpace(step.direction + " " + step.mode)
			fmt.Fprintf(progress, "measuring %s (%d of %d)...\n", name, round, *repeat)
			ph, err := run.measure(ctx, step.mode, step.direction)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if step.mode == "paged" {
				run.minOps = max(run.minOps, ph.Ops) // the other modes run at least as many operations
			}
			step.runs = append(step.runs, ph)
		}
	}
	for _, step := range steps {
		*step.dst = medianPhase(step.runs)
	}
	rep.ReadsBesideWriter = run.readsBesideWriter
	fgBlocks := rep.Idle.ForegroundBusy // the idle foreground's store time a commit cannot have
	if rep.ReadsBesideWriter {
		fgBlocks = rep.Idle.ForegroundWriteBusy
	}
	for _, sc := range []*schedulerScenario{&rep.Backup, &rep.Restore} {
		goal := schedulerGoals[sc.Direction]
		sc.PagedOverIdleP95 = sc.Paged.P95ms / rep.Idle.P95ms
		sc.ApartOverIdleP95 = sc.Apart.P95ms / rep.Idle.P95ms
		sc.ExclusiveOverPagedP95 = sc.Exclusive.P95ms / sc.Paged.P95ms
		sc.PagedOverExclusiveBackground = sc.Paged.BackgroundSeconds / sc.Exclusive.BackgroundSeconds
		sc.PagedCopyFloorOverExclusive = sc.Paged.BackgroundHoldSeconds / (1 - fgBlocks) / sc.Exclusive.BackgroundSeconds
		sc.P95Goal, sc.P95Met = goal.p95, sc.PagedOverIdleP95 <= goal.p95
		sc.CopyGoal, sc.CopyMet = goal.copy, sc.PagedOverExclusiveBackground <= goal.copy
	}
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) {
		fmt.Fprintf(w, "bench scheduler: %s fixture, one foreground operation every %s, %s target, median of %d; reads beside a commit: %v\n",
			f, *interval, *target, *repeat, rep.ReadsBesideWriter)
		fmt.Fprintf(w, "  %-17s %6s %9s %9s %9s %12s %8s %14s %7s %9s %9s %9s\n", "mode", "ops", "p50 ms", "p95 ms", "p99 ms", "max wait ms", "fg busy",
			"background s", "pages", "rows/page", "commit p50", "p95 ms")
		line := func(name string, p schedulerPhase) {
			fmt.Fprintf(w, "  %-17s %6d %9.2f %9.2f %9.2f %12.2f %7.0f%% %14.3f %7d %9.0f %9.2f %9.2f\n", name, p.Ops, p.P50ms, p.P95ms, p.P99ms, p.MaxWaitMs,
				100*p.ForegroundBusy, p.BackgroundSeconds, p.BackgroundPages, p.MeanPageRows, p.CommitP50ms, p.CommitP95ms)
		}
		line("idle", rep.Idle)
		for _, sc := range []schedulerScenario{rep.Backup, rep.Restore} {
			line(sc.Direction+" exclusive", sc.Exclusive)
			line(sc.Direction+" paged", sc.Paged)
			line(sc.Direction+" apart", sc.Apart)
		}
		wherePhases := []schedulerPhase{rep.Idle, rep.Backup.Paged, rep.Backup.Apart, rep.Restore.Paged, rep.Restore.Apart}
		whereNames := []string{"idle", "backup paged", "backup apart", "restore paged", "restore apart"}
		fmt.Fprintf(w, "  where the foreground's time went: its slowest 5%% of operations, mean ms (latency = behind the one before + late wake + grant wait + store time),\n")
		fmt.Fprintf(w, "  and the p95 of its reads' and its writes' store time (under the grant)\n")
		fmt.Fprintf(w, "  %-17s %7s %7s %6s %6s %6s %7s %12s %12s\n", "mode", "slow 5%", "behind", "wake", "wait", "store", "writes", "rd store p95", "wr store p95")
		for i, p := range wherePhases {
			s := p.Slowest
			fmt.Fprintf(w, "  %-17s %7.2f %7.2f %6.2f %6.2f %6.2f %3d/%-3d %12.2f %12.2f\n", whereNames[i], s.MeanMs, s.BehindMs, s.WakeMs, s.WaitMs, s.StoreMs, s.Writes, s.Ops,
				p.ReadStoreP95ms, p.WriteStoreP95ms)
		}
		fmt.Fprintf(w, "  the run's counters: process CPU (cores), a goroutine's wait for a thread (p95), GC cycles, CPU, pauses and assists (ms), sync.Mutex wait (ms),\n")
		fmt.Fprintf(w, "  the wallet's reader pool (waits, connections opened), its WAL (KiB at the end; most frames a checkpoint had to leave to a reader)\n")
		fmt.Fprintf(w, "  %-17s %5s %9s %4s %6s %6s %6s %6s %5s %5s %8s %9s\n", "mode", "cpu", "sched p95", "gc", "gc cpu", "pauses", "assist", "mutex", "pool", "conns", "WAL KiB", "held back")
		for i, p := range wherePhases {
			a := p.Where
			fmt.Fprintf(w, "  %-17s %5.2f %7.0fus %4d %6.1f %6.1f %6.1f %6.1f %5d %5d %8.0f %9d\n", whereNames[i], a.ProcessCPU, a.SchedP95us, a.GCCycles, a.GCCPUms, a.GCPauseMs, a.GCAssistMs,
				a.MutexWaitMs, a.PoolWaits, a.ConnsOpened, a.WALKiB, a.HeldBackFrames)
		}
		for _, sc := range []schedulerScenario{rep.Backup, rep.Restore} {
			fmt.Fprintf(w, "  %s (%s):\n", sc.Direction, map[string]string{directionBackup: "the wallet copied out", directionRestore: "another wallet copied in"}[sc.Direction])
			for _, p := range []schedulerPhase{sc.Exclusive, sc.Paged} {
				fmt.Fprintf(w, "    %s copy: %s\n", p.Mode, p.summary())
			}
			fmt.Fprintf(w, "    foreground p95 of reads / writes: idle %.2f / %.2f ms, paged %.2f / %.2f ms\n",
				rep.Idle.ReadP95ms, rep.Idle.WriteP95ms, sc.Paged.ReadP95ms, sc.Paged.WriteP95ms)
			fmt.Fprintf(w, "    foreground p95 paged / idle: %.2fx (goal <= %gx: %s)\n", sc.PagedOverIdleP95, sc.P95Goal, met(sc.P95Met))
			fmt.Fprintf(w, "    floor of that: the same copy apart, sharing only the machine: %.2fx\n", sc.ApartOverIdleP95)
			fmt.Fprintf(w, "    foreground p95 exclusive / paged: %.2fx\n", sc.ExclusiveOverPagedP95)
			fmt.Fprintf(w, "    background completion paged / exclusive: %.2fx (goal <= %gx: %s)\n", sc.PagedOverExclusiveBackground, sc.CopyGoal, met(sc.CopyMet))
			if sc.Direction == directionRestore {
				fmt.Fprintf(w, "    floor of that: commits %.3f s / (1 - idle fg busy that excludes a commit %.0f%%) = %.2fx\n",
					sc.Paged.BackgroundHoldSeconds, 100*fgBlocks, sc.PagedCopyFloorOverExclusive)
			}
		}
	})
}

// noSnapshots hides a source's consistent views, which makes a session take one exclusive
// grant for its whole copy: the old way, for comparison.
type noSnapshots struct{ wallet.Source }

// Describe is the source's, without snapshots.
func (s noSnapshots) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	st, caps, err := s.Source.Describe(ctx)
	caps.Snapshots = false
	return st, caps, err
}

// schedulerRun is what every measured run of `bench scheduler` shares.
type schedulerRun struct {
	work          string            // a temporary folder for this run's files
	walletPath    string            // the fixture wallet; each run works on its own copy
	identity      string            // its user
	other         *localstore.Store // the wallet a restore copies in
	otherIdentity string
	interval      time.Duration // between foreground operations
	target        time.Duration // the adaptive budget's target commit time
	minOps        int           // foreground operations each run makes at least
	// readsBesideWriter is what the last measured wallet advertised to its queue.
	readsBesideWriter bool
}

// measure runs one mode in one direction: the foreground workload on a fresh copy of the
// wallet while (except when idle) the background copy runs.
func (r *schedulerRun) measure(ctx context.Context, mode, direction string) (schedulerPhase, error) {
	ph := schedulerPhase{Mode: mode}
	dir, err := os.MkdirTemp(r.work, "run-")
	if err != nil {
		return ph, err
	}
	defer os.RemoveAll(dir)
	localPath := filepath.Join(dir, "wallet.sqlite")
	if err := safefile.CopyNew(r.walletPath, localPath); err != nil {
		return ph, err
	}
	local, err := localstore.Open(ctx, localPath, localstore.Options{})
	if err != nil {
		return ph, err
	}
	defer local.Close()
	caps, err := local.Capabilities(ctx)
	if err != nil {
		return ph, err
	}
	r.readsBesideWriter = caps.ReadsBesideWriter
	q, err := scheduler.New(caps, scheduler.Options{})
	if err != nil {
		return ph, err
	}
	// The wallet the copy reads or writes, and its queue: the foreground's own, except apart.
	copyWallet, copyQueue := local, q
	if mode == "apart" {
		apartPath := filepath.Join(dir, "apart.sqlite")
		if err := safefile.CopyNew(r.walletPath, apartPath); err != nil {
			return ph, err
		}
		if copyWallet, err = localstore.Open(ctx, apartPath, localstore.Options{}); err != nil {
			return ph, err
		}
		defer copyWallet.Close()
		if copyQueue, err = scheduler.New(caps, scheduler.Options{}); err != nil {
			return ph, err
		}
	}
	identity := r.identity
	actions, err := local.ListActions(ctx, identity, wallet.ActionQuery{Limit: 1000})
	if err != nil {
		return ph, err
	}

	// An early return (a foreground error) stops the copy and waits for it before the stores
	// close.
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bgDone := make(chan error, 1)
	before := readProcessCounters(local)
	if mode == "idle" {
		close(bgDone)
	} else {
		// A restore copies the other wallet into this one, each commit under a grant on this
		// wallet's queue. A backup copies this wallet into a new store: paged, it needs no
		// grant here (snapshot reads, commits elsewhere); exclusive, its one grant is here.
		var src wallet.Source = r.other
		var dst wallet.Destination = copyWallet
		copied := r.otherIdentity
		opts := syncer.Options{Active: wallet.KeepDestinationActive, Grants: copyQueue.NewSession(copied, "local")}
		var backup *localstore.Store // a backup's destination; the copy's goroutine closes it
		if direction == directionBackup {
			backup, err = localstore.Create(ctx, filepath.Join(dir, "backup.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
			if err != nil {
				return ph, err
			}
			src, dst, copied = copyWallet, backup, identity
			opts = syncer.Options{Active: wallet.KeepSourceActive}
			if mode == "exclusive" {
				opts.Grants = q.NewSession(copied, "backup")
			}
		}
		switch {
		case mode == "exclusive":
			src = noSnapshots{src}
		case direction == directionRestore:
			if opts.Budget, err = scheduler.NewBudget(scheduler.BudgetOptions{Target: r.target}); err != nil {
				return ph, err
			}
		}
		var commits []float64 // milliseconds; the session reports one page at a time
		opts.Progress = func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				commits = append(commits, float64(p.Timings.Commit)/float64(time.Millisecond))
				ph.add(p.Timings)
			}
			return nil
		}
		bg.Go(func() {
			if backup != nil {
				defer backup.Close()
			}
			start := time.Now()
			res, err := syncer.Run(ctx, src, dst, copied, opts)
			ph.BackgroundSeconds, ph.BackgroundPages = time.Since(start).Seconds(), res.Pages
			if res.Pages > 0 {
				ph.MeanPageRows = float64(res.Rows) / float64(res.Pages)
			}
			slices.Sort(commits)
			ph.CommitP50ms, ph.CommitP95ms = stats.Percentile(commits, 0.50), stats.Percentile(commits, 0.95)
			if len(commits) > 0 {
				ph.CommitMaxMs = commits[len(commits)-1]
			}
			bgDone <- err // sends after the writes above: the receiver may read them
		})
	}

	fr, err := foregroundLoad(ctx, q.NewSession(identity, "local"), local, identity, actions, r.interval, max(r.minOps, 200), bgDone)
	if err != nil {
		return ph, err
	}
	ph.Where = attribute(before, readProcessCounters(local))
	ph.Slowest = slowest(fr.ops, 0.95)
	ph.ReadStoreP95ms, ph.WriteStoreP95ms = storeP95(fr.ops, scheduler.Read), storeP95(fr.ops, scheduler.Write)
	m := q.Metrics()
	ph.ForegroundBusy = m.Foreground.TotalHold.Seconds() / fr.elapsed.Seconds()
	ph.ForegroundWriteBusy = fr.writeHold.Seconds() / fr.elapsed.Seconds()
	ph.BackgroundHoldSeconds = m.Background.TotalHold.Seconds()
	lat := fr.latencies
	ph.Ops = len(lat)
	ph.P50ms, ph.P95ms, ph.P99ms = stats.Percentile(lat, 0.50), stats.Percentile(lat, 0.95), stats.Percentile(lat, 0.99)
	ph.ReadP95ms, ph.WriteP95ms = stats.Percentile(fr.byMode[scheduler.Read], 0.95), stats.Percentile(fr.byMode[scheduler.Write], 0.95)
	ph.MaxWaitMs = float64(fr.maxWait) / float64(time.Millisecond)
	return ph, nil
}

// foregroundResult is what foregroundLoad measured: every operation's latency in
// milliseconds, sorted, and the same split by the operation's mode; the longest queue wait;
// how long its writes held the store; and how long it ran.
type foregroundResult struct {
	latencies []float64
	byMode    map[scheduler.Mode][]float64
	maxWait   time.Duration
	writeHold time.Duration
	elapsed   time.Duration
	ops       []fgOpTimes // in the order they ran
}

// fgOpTimes is where one foreground operation's latency went: it started late (its
// goroutine woke after its due time, or the operation before it overran), waited for its
// grant, and held the grant while the store worked.
type fgOpTimes struct {
	mode scheduler.Mode
	// latency = behind + wake + wait + hold: behind the operation before (the loop is open,
	// so one slow operation delays the ones due during it), its goroutine waking after its
	// due time (a timer's and the CPU's delay), the grant wait, and the store's work.
	latency, behind, wake, wait, hold time.Duration
}

// foregroundBench holds the flags of the benchmarks that run foregroundLoad beside a
// background job (bench scheduler, bench bundle).
type foregroundBench struct {
	setup    benchSetup
	interval *time.Duration
	repeat   *int
}

// foregroundBenchFlags defines --fixture, --dir, --json, --interval and --repeat on fs.
func foregroundBenchFlags(fs *flag.FlagSet, fixtureUsage, repeatUsage string) foregroundBench {
	return foregroundBench{
		setup:    benchFlags(fs, fixtureUsage),
		interval: fs.Duration("interval", 5*time.Millisecond, "the foreground workload's pause between operations"),
		repeat:   fs.Int("repeat", 3, repeatUsage),
	}
}

// prepare checks the parsed flags, generates (or reuses) the fixture wallet, and makes a
// temporary work folder, which the caller removes.
func (b foregroundBench) prepare(ctx context.Context, out io.Writer, name string) (f localstore.Fixture, walletPath, identity string, progress io.Writer, work string, err error) {
	if *b.repeat < 1 {
		return f, "", "", nil, "", fmt.Errorf("%w: --repeat must be at least 1", command.ErrUsage)
	}
	if f, walletPath, identity, progress, err = b.setup.prepare(ctx, out); err != nil {
		return f, "", "", nil, "", err
	}
	work, err = os.MkdirTemp("", "walletsync-bench-"+name+"-")
	return f, walletPath, identity, progress, work, err
}

// foregroundLoad runs the foreground workload of a wallet front end on st, one foregroundOp
// every interval, until bgDone has delivered (a nil error, or closed) and at least minOps
// operations ran, and returns their latencies in milliseconds, sorted, and the longest queue
// wait. A background error received on bgDone ends it with that error.
//
// It is an open loop: operation i is due at start + i*interval whatever happened before, and
// its latency counts from when it was due. A closed loop would issue fewer operations while
// the store is blocked and hide exactly the waits the benchmarks are about.
func foregroundLoad(ctx context.Context, fg *scheduler.Session, st *localstore.Store, identity string, actions []wallet.Action, interval time.Duration, minOps int, bgDone <-chan error) (foregroundResult, error) {
	rnd := rand.New(rand.NewPCG(7, 7))
	var latencies []float64
	byMode := map[scheduler.Mode][]float64{}
	var maxWait, writeHold time.Duration
	var ops []fgOpTimes
	start := time.Now()
	prevEnd := start
	for i := 0; ; i++ {
		if bgDone != nil {
			select {
			case err, ok := <-bgDone:
				if ok && err != nil {
					return foregroundResult{}, fmt.Errorf("background copy: %w", err)
				}
				bgDone = nil
			default:
			}
		}
		if bgDone == nil && i >= minOps {
			break
		}
		due := start.Add(time.Duration(i) * interval)
		behind := max(0, prevEnd.Sub(due))
		time.Sleep(time.Until(due))
		wake := time.Since(due) - behind
		wait, hold, mode, err := foregroundOp(ctx, fg, st, identity, actions, rnd)
		if err != nil {
			return foregroundResult{}, err
		}
		if mode == scheduler.Write {
			writeHold += hold
		}
		prevEnd = time.Now()
		took := prevEnd.Sub(due)
		ops = append(ops, fgOpTimes{mode: mode, latency: took, behind: behind, wake: wake, wait: wait, hold: hold})
		latency := float64(took) / float64(time.Millisecond)
		latencies = append(latencies, latency)
		byMode[mode] = append(byMode[mode], latency)
		maxWait = max(maxWait, wait)
	}
	slices.Sort(latencies)
	for _, l := range byMode {
		slices.Sort(l)
	}
	return foregroundResult{latencies: latencies, byMode: byMode, maxWait: maxWait, writeHold: writeHold, elapsed: time.Since(start), ops: ops}, nil
}

// foregroundOp runs one operation of a wallet front end under a foreground grant: mostly
// reads (newest actions, spendable outputs, certificates), sometimes a small write (a label).
// It returns how long it waited for the grant, how long it held it, and in which mode.
func foregroundOp(ctx context.Context, s *scheduler.Session, st *localstore.Store, identity string, actions []wallet.Action, rnd *rand.Rand) (wait, hold time.Duration, mode scheduler.Mode, err error) {
	mode = scheduler.Read
	if rnd.IntN(10) < 3 {
		mode = scheduler.Write
	}
	asked := time.Now()
	g, err := s.Acquire(ctx, scheduler.Foreground, mode)
	if err != nil {
		return 0, 0, mode, err
	}
	granted := time.Now()
	wait = granted.Sub(asked)
	switch {
	case mode == scheduler.Write:
		a := actions[rnd.IntN(len(actions))]
		label := fmt.Sprintf("bench-%d", rnd.IntN(20))
		if rnd.IntN(2) == 0 {
			err = st.AddLabel(ctx, identity, a.TransactionID, label)
		} else if err = st.RemoveLabel(ctx, identity, a.TransactionID, label); err != nil {
			err = nil // removing a label the transaction lacks is a normal refusal here
		}
	case rnd.IntN(3) == 0:
		_, err = st.ListCertificates(ctx, identity)
	case rnd.IntN(2) == 0:
		_, err = st.ListActions(ctx, identity, wallet.ActionQuery{Limit: 25})
	default:
		_, err = st.ListOutputs(ctx, identity, wallet.OutputQuery{Basket: brc40.DefaultBasket, Limit: 25})
	}
	hold = time.Since(granted)
	if rerr := s.Release(g); err == nil {
		err = rerr
	}
	return wait, hold, mode, err
}

// medianPhase returns the median of one run's measurements: by background completion time, or
// by foreground p95 for idle runs, which have no background.
func medianPhase(runs []schedulerPhase) schedulerPhase {
	slices.SortFunc(runs, func(a, b schedulerPhase) int {
		if a.BackgroundSeconds != b.BackgroundSeconds {
			return cmp.Compare(a.BackgroundSeconds, b.BackgroundSeconds)
		}
		return cmp.Compare(a.P95ms, b.P95ms)
	})
	return runs[len(runs)/2]
}
