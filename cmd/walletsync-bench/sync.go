package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/syncer"
)

// syncBenchReport is the result of `walletsync bench sync`.
type syncBenchReport struct {
	Fixture     string      `json:"fixture"`
	Wallet      string      `json:"wallet"`
	Idle        phaseResult `json:"idle"`
	Floor       phaseResult `json:"floor"`
	ThroughGo   phaseResult `json:"throughGo"`
	Full        phaseResult `json:"full"`
	Unchanged   phaseResult `json:"unchanged"`
	Incremental phaseResult `json:"incremental"`
	// FullRatio is the full copy's time over the raw SQLite floor (goal <= 1.3).
	FullRatio float64 `json:"fullRatio"`
	// ThroughGoRatio is the floor through Go over the raw floor: the least FullRatio can be
	// for a sync whose rows travel as Go values, with this driver.
	ThroughGoRatio float64 `json:"throughGoRatio"`
	// IncrementalRatio is the 1%-changed incremental sync's time over the full copy's.
	IncrementalRatio float64 `json:"incrementalRatio"`
	// RSSGrowth is the full copy's peak RSS above an idle process (goal <= 64 MiB).
	RSSGrowth int64 `json:"rssGrowthBytes"`
}

// RunSync is `walletsync bench sync`: a full, an unchanged and an incremental sync of a
// wallet to a backup wallet, each in a child process, against the raw SQLite copy floor.
func RunSync(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("sync", "[--fixture toolbox|large] [--dir D] [--json]", out)
	setup := benchFlags(fs, "the wallet to sync: toolbox, large (about 1 GB, generated once) or small")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	f, path, _, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "walletsync-bench-sync-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	rep := syncBenchReport{Fixture: string(f), Wallet: path}
	err = runPhases(ctx, progress, func(mode string) []string {
		return []string{"sync-child", "--src", path, "--work", filepath.Join(work, mode), "--mode", mode}
	}, phase{"idle", &rep.Idle}, phase{"floor", &rep.Floor}, phase{"through-go", &rep.ThroughGo}, phase{"full", &rep.Full}, phase{"unchanged", &rep.Unchanged}, phase{"incremental", &rep.Incremental})
	if err != nil {
		return err
	}
	rep.FullRatio = rep.Full.Seconds / rep.Floor.Seconds
	rep.ThroughGoRatio = rep.ThroughGo.Seconds / rep.Floor.Seconds
	rep.IncrementalRatio = rep.Incremental.Seconds / rep.Full.Seconds
	rep.RSSGrowth = rep.Full.PeakRSS - rep.Idle.PeakRSS
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) {
		fmt.Fprintf(w, "bench sync: %s fixture (%s)\n", f, path)
		for _, p := range []phaseResult{rep.Floor, rep.ThroughGo, rep.Full, rep.Unchanged, rep.Incremental} {
			fmt.Fprintf(w, "  %-12s %8d rows %6d pages %6d requests %8.3f s %9.0f rows/s  peak RSS %s\n",
				p.Mode, p.Rows, p.Pages, p.Requests, p.Seconds, float64(p.Rows)/max(p.Seconds, 1e-9), command.HumanBytes(p.PeakRSS))
		}
		fmt.Fprintf(w, "  full copy: %s\n", rep.Full.summary())
		fmt.Fprintf(w, "  full copy / raw SQLite floor: %.2fx (goal <= 1.3x)\n", rep.FullRatio)
		fmt.Fprintf(w, "  floor through Go / raw SQLite floor: %.2fx (the least a sync whose rows travel as Go values can be)\n", rep.ThroughGoRatio)
		fmt.Fprintf(w, "  unchanged re-sync: %d request(s), %d pages, %.3f s (goal: 1 request, 0 pages)\n", rep.Unchanged.Requests, rep.Unchanged.Pages, rep.Unchanged.Seconds)
		fmt.Fprintf(w, "  incremental (1%% of rows changed) / full copy: %.3fx\n", rep.IncrementalRatio)
		fmt.Fprintf(w, "  full copy RSS above an idle process: %s (goal <= 64 MiB)\n", command.HumanBytes(rep.RSSGrowth))
	})
}

// RunSyncChild measures one phase of `bench sync` in this process. Each phase works on
// fresh files in --work; only the measured step is timed.
func RunSyncChild(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("sync-child", "", out)
	srcPath := fs.String("src", "", "")
	work := fs.String("work", "", "")
	mode := fs.String("mode", "", "idle, floor, through-go, full, unchanged or incremental")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := os.MkdirAll(*work, 0o700); err != nil {
		return err
	}
	if *mode == "incremental" {
		// The incremental phase changes its source: work on a copy of the bench wallet.
		cp := filepath.Join(*work, "source.sqlite")
		if err := safefile.CopyNew(*srcPath, cp); err != nil {
			return err
		}
		*srcPath = cp
	}
	src, err := localstore.Open(ctx, *srcPath, localstore.Options{ReadOnly: *mode != "incremental"})
	if err != nil {
		return err
	}
	defer src.Close()
	identity := localstore.FixtureIdentity(1)
	settings, err := src.Settings(ctx)
	if err != nil {
		return err
	}
	res := phaseResult{Mode: *mode}
	if *mode == "idle" {
		res.PeakRSS = peakRSS()
		return json.NewEncoder(out).Encode(res)
	}
	dst, err := localstore.Create(ctx, filepath.Join(*work, "destination.sqlite"), localstore.CreateOptions{Chain: settings.Chain}, localstore.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	opts := benchPushOptions()
	measured := false // only the measured sync's pages count in the breakdown
	opts.Progress = func(p syncer.Progress) error {
		if measured && p.State == syncer.StateCommitted {
			res.add(p.Timings)
		}
		return nil
	}
	sync := func() (syncer.Result, error) { return syncer.Run(ctx, src, dst, identity, opts) }
	measure := func(step func() error) error {
		measured = true
		start := time.Now()
		err := step()
		res.Seconds = time.Since(start).Seconds()
		return err
	}
	record := func(r syncer.Result) {
		res.Rows, res.Bytes, res.Pages, res.Requests, res.Kind = r.Rows, r.Bytes, r.Pages, r.Requests, string(r.Kind)
	}
	switch *mode {
	case "floor":
		err = measure(func() error { res.Rows, err = dst.CopyRawFrom(ctx, *srcPath); return err })
	case "through-go":
		err = measure(func() error { res.Rows, err = dst.CopyThroughGo(ctx, *srcPath); return err })
	case "full":
		err = measure(func() error { r, err := sync(); record(r); return err })
	case "unchanged", "incremental":
		if _, err = sync(); err != nil {
			return err
		}
		if *mode == "incremental" {
			if _, err = src.TouchFraction(ctx, identity, 0.01); err != nil {
				return err
			}
		}
		err = measure(func() error { r, err := sync(); record(r); return err })
	default:
		err = fmt.Errorf("%w: unknown mode %q", command.ErrUsage, *mode)
	}
	if err != nil {
		return err
	}
	res.PeakRSS = peakRSS()
	return json.NewEncoder(out).Encode(res)
}
