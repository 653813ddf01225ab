package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// `walletsync bench scheduler` asks whether a background copy makes the wallet feel slow.
// A foreground workload (the reads and small writes of a wallet front end, one every
// couple of milliseconds) runs against a wallet while a background job copies another
// wallet of the same size into it, in three modes measured in the same run:
//
//   - idle: no background job;
//   - exclusive: the background job holds one grant for the whole copy (the old way: one
//     application-wide lock);
//   - paged: the background job takes one short grant per page commit, its pages sized by
//     the adaptive budget (this scheduler).

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
	// ForegroundBusy is the share of the foreground run during which a foreground grant was
	// held: the store time the foreground workload itself takes, which a background copy
	// cannot have while writers are exclusive.
	ForegroundBusy float64 `json:"foregroundBusy"`
	// Background completion time of the copy (0 when idle), and its pages.
	BackgroundSeconds float64 `json:"backgroundSeconds"`
	BackgroundPages   int64   `json:"backgroundPages"`
	// BackgroundHoldSeconds is the copy's time under its write grants: the whole copy when
	// exclusive, the page commits when paged.
	BackgroundHoldSeconds float64 `json:"backgroundHoldSeconds"`
	// Page commits of the copy: rows per page (the budget's choice when paged) and commit
	// time percentiles, in milliseconds. A foreground request waits for at most one commit.
	MeanPageRows float64 `json:"meanPageRows"`
	CommitP50ms  float64 `json:"commitP50ms"`
	CommitP95ms  float64 `json:"commitP95ms"`
	CommitMaxMs  float64 `json:"commitMaxMs"`
}

type schedulerBenchReport struct {
	Fixture   string         `json:"fixture"`
	Idle      schedulerPhase `json:"idle"`
	Exclusive schedulerPhase `json:"exclusive"`
	Paged     schedulerPhase `json:"paged"`
	// PagedOverIdleP95 is the foreground p95 with the paged copy over idle (goal <= 2).
	PagedOverIdleP95 float64 `json:"pagedOverIdleP95"`
	// ExclusiveOverPagedP95 is how much worse the old way is for the foreground.
	ExclusiveOverPagedP95 float64 `json:"exclusiveOverPagedP95"`
	// PagedOverExclusiveBackground is the copy's time paged over exclusive (goal <= 1.1).
	PagedOverExclusiveBackground float64 `json:"pagedOverExclusiveBackground"`
	// PagedCopyFloorOverExclusive is the least PagedOverExclusiveBackground can be while
	// writers are exclusive: the paged copy's commits need their hold time out of the store
	// time the foreground leaves (1 - its busy share when idle), over the exclusive copy's
	// time. Above 1.1 the copy goal cannot be met at this foreground load on this machine.
	PagedCopyFloorOverExclusive float64 `json:"pagedCopyFloorOverExclusive"`
}

func runBenchScheduler(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("bench scheduler", "[--fixture toolbox] [--dir D] [--interval 5ms] [--json]", out)
	setup := benchFlags(fs, "the wallets to use: toolbox, small or large")
	interval := fs.Duration("interval", 5*time.Millisecond, "the foreground workload's pause between operations")
	target := fs.Duration("target", 20*time.Millisecond, "the adaptive page budget's target commit time")
	if err := parse(fs, args); err != nil {
		return err
	}
	f, walletPath, identity, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "walletsync-bench-scheduler-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// The copied wallet is the same fixture under another identity and storage.
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

	rep := schedulerBenchReport{Fixture: string(f)}
	var opsTarget int
	for _, mode := range []string{"paged", "exclusive", "idle"} {
		fmt.Fprintf(progress, "measuring %s...\n", mode)
		local := filepath.Join(work, mode+".sqlite")
		if err := copyFile(walletPath, local); err != nil {
			return err
		}
		ph, err := schedulerRun(ctx, mode, local, identity, other, otherRes.IdentityKey, *interval, *target, opsTarget)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		if mode == "paged" {
			opsTarget = ph.Ops // idle and exclusive run at least as many operations
		}
		switch mode {
		case "idle":
			rep.Idle = ph
		case "exclusive":
			rep.Exclusive = ph
		case "paged":
			rep.Paged = ph
		}
	}
	rep.PagedOverIdleP95 = rep.Paged.P95ms / rep.Idle.P95ms
	rep.ExclusiveOverPagedP95 = rep.Exclusive.P95ms / rep.Paged.P95ms
	rep.PagedOverExclusiveBackground = rep.Paged.BackgroundSeconds / rep.Exclusive.BackgroundSeconds
	rep.PagedCopyFloorOverExclusive = rep.Paged.BackgroundHoldSeconds / (1 - rep.Idle.ForegroundBusy) / rep.Exclusive.BackgroundSeconds
	return report(out, *setup.asJSON, rep, func(w io.Writer) {
		fmt.Fprintf(w, "bench scheduler: %s fixture, one foreground operation every %s\n", f, *interval)
		fmt.Fprintf(w, "  %-10s %6s %9s %9s %9s %12s %8s %14s %7s %9s %9s %9s\n", "mode", "ops", "p50 ms", "p95 ms", "p99 ms", "max wait ms", "fg busy",
			"background s", "pages", "rows/page", "commit p50", "p95 ms")
		for _, p := range []schedulerPhase{rep.Idle, rep.Exclusive, rep.Paged} {
			fmt.Fprintf(w, "  %-10s %6d %9.2f %9.2f %9.2f %12.2f %7.0f%% %14.3f %7d %9.0f %9.2f %9.2f\n", p.Mode, p.Ops, p.P50ms, p.P95ms, p.P99ms, p.MaxWaitMs,
				100*p.ForegroundBusy, p.BackgroundSeconds, p.BackgroundPages, p.MeanPageRows, p.CommitP50ms, p.CommitP95ms)
		}
		fmt.Fprintf(w, "  foreground p95 paged / idle: %.2fx (goal <= 2x)\n", rep.PagedOverIdleP95)
		fmt.Fprintf(w, "  foreground p95 exclusive / paged: %.2fx\n", rep.ExclusiveOverPagedP95)
		fmt.Fprintf(w, "  background completion paged / exclusive: %.2fx (goal <= 1.1x)\n", rep.PagedOverExclusiveBackground)
		fmt.Fprintf(w, "  floor of that with writers exclusive: commits %.3f s / (1 - idle fg busy %.0f%%) = %.2fx\n",
			rep.Paged.BackgroundHoldSeconds, 100*rep.Idle.ForegroundBusy, rep.PagedCopyFloorOverExclusive)
	})
}

// noSnapshots hides a source's consistent views, which makes a session take one exclusive
// grant for its whole copy: the old way, for comparison.
type noSnapshots struct{ wallet.Source }

func (s noSnapshots) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	st, caps, err := s.Source.Describe(ctx)
	caps.Snapshots = false
	return st, caps, err
}

// schedulerRun measures one mode: the foreground workload on the wallet at localPath while
// (except when idle) other's user is copied into it.
func schedulerRun(ctx context.Context, mode, localPath, identity string, other *localstore.Store, otherIdentity string, interval, target time.Duration, minOps int) (schedulerPhase, error) {
	ph := schedulerPhase{Mode: mode}
	local, err := localstore.Open(ctx, localPath, localstore.Options{})
	if err != nil {
		return ph, err
	}
	defer local.Close()
	q, err := scheduler.New(scheduler.Capability{ConcurrentReads: localstore.MaxReaders}, scheduler.Options{})
	if err != nil {
		return ph, err
	}
	actions, err := local.ListActions(ctx, identity, wallet.ActionQuery{Limit: 1000})
	if err != nil {
		return ph, err
	}

	bgDone := make(chan error, 1)
	if mode == "idle" {
		close(bgDone)
	} else {
		var src wallet.Source = other
		opts := syncer.Options{Active: wallet.KeepDestinationActive, Grants: q.NewSession(otherIdentity, "local")}
		if mode == "exclusive" {
			src = noSnapshots{other}
		} else if opts.Budget, err = scheduler.NewBudget(scheduler.BudgetOptions{Target: target}); err != nil {
			return ph, err
		}
		var commits []float64 // milliseconds; the session reports one page at a time
		opts.Progress = func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				commits = append(commits, float64(p.Timings.Commit)/float64(time.Millisecond))
			}
			return nil
		}
		go func() {
			start := time.Now()
			res, err := syncer.Run(ctx, src, local, otherIdentity, opts)
			ph.BackgroundSeconds, ph.BackgroundPages = time.Since(start).Seconds(), res.Pages
			if res.Pages > 0 {
				ph.MeanPageRows = float64(res.Rows) / float64(res.Pages)
			}
			slices.Sort(commits)
			ph.CommitP50ms, ph.CommitP95ms = percentile(commits, 0.50), percentile(commits, 0.95)
			if len(commits) > 0 {
				ph.CommitMaxMs = commits[len(commits)-1]
			}
			bgDone <- err // sends after the writes above: the receiver may read them
		}()
	}

	// Open loop: operation i is due at start + i*interval whatever happened before, and its
	// latency counts from when it was due. A closed loop would issue fewer operations while
	// the store is blocked and hide exactly the waits this benchmark is about.
	fg := q.NewSession(identity, "local")
	rnd := rand.New(rand.NewPCG(7, 7))
	var latencies []float64
	var maxWait time.Duration
	start := time.Now()
	for i := 0; ; i++ {
		if bgDone != nil {
			select {
			case err, ok := <-bgDone:
				if ok && err != nil {
					return ph, fmt.Errorf("background copy: %w", err)
				}
				bgDone = nil
			default:
			}
		}
		if bgDone == nil && i >= max(minOps, 200) {
			break
		}
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wait, err := foregroundOp(ctx, fg, local, identity, actions, rnd)
		if err != nil {
			return ph, err
		}
		latencies = append(latencies, float64(time.Since(due))/float64(time.Millisecond))
		maxWait = max(maxWait, wait)
	}
	m := q.Metrics()
	ph.ForegroundBusy = m.Foreground.TotalHold.Seconds() / time.Since(start).Seconds()
	ph.BackgroundHoldSeconds = m.Background.TotalHold.Seconds()
	slices.Sort(latencies)
	ph.Ops = len(latencies)
	ph.P50ms, ph.P95ms, ph.P99ms = percentile(latencies, 0.50), percentile(latencies, 0.95), percentile(latencies, 0.99)
	ph.MaxWaitMs = float64(maxWait) / float64(time.Millisecond)
	return ph, nil
}

// foregroundOp runs one operation of a wallet front end under a foreground grant: mostly
// reads (newest actions, spendable outputs, certificates), sometimes a small write (a label).
func foregroundOp(ctx context.Context, s *scheduler.Session, st *localstore.Store, identity string, actions []wallet.Action, rnd *rand.Rand) (wait time.Duration, err error) {
	mode := scheduler.Read
	if rnd.IntN(10) < 3 {
		mode = scheduler.Write
	}
	asked := time.Now()
	g, err := s.Acquire(ctx, scheduler.Foreground, mode)
	if err != nil {
		return 0, err
	}
	wait = time.Since(asked)
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
		_, err = st.ListOutputs(ctx, identity, wallet.OutputQuery{Basket: "default", Limit: 25})
	}
	if rerr := s.Release(g); err == nil {
		err = rerr
	}
	return wait, err
}

// percentile returns the p-quantile of sorted values (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
