package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"walletsync/bundle"
	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// `walletsync bench bundle` asks whether making a bundle makes the wallet feel slow, and what
// a bundle costs against the plainest copy there is. Each round, on a fresh copy of the
// fixture wallet, the foreground workload of `bench scheduler` (foregroundLoad) runs idle,
// then again while a bundle of the same wallet is made through the same access queue; then
// the wallet file is copied plainly (read, written, fsynced). Each figure is the median over
// the rounds.
type bundleBenchReport struct {
	Fixture string `json:"fixture"`
	Repeat  int    `json:"repeat"`
	// Foreground latency percentiles, milliseconds, idle and while the bundle is made.
	IdleP50ms   float64 `json:"idleP50ms"`
	IdleP95ms   float64 `json:"idleP95ms"`
	BundleP50ms float64 `json:"bundleP50ms"`
	BundleP95ms float64 `json:"bundleP95ms"`
	// BundleOverIdleP95 is the foreground p95 while bundling over idle (goal <= 2).
	BundleOverIdleP95 float64 `json:"bundleOverIdleP95"`
	// The p95 of the foreground's reads and of its writes (small commits, each an fsync of
	// the WAL), idle and while bundling: a bundle that costs the writes more than the reads
	// costs the disk's flushes more than the CPU.
	IdleReadP95ms    float64 `json:"idleReadP95ms"`
	IdleWriteP95ms   float64 `json:"idleWriteP95ms"`
	BundleReadP95ms  float64 `json:"bundleReadP95ms"`
	BundleWriteP95ms float64 `json:"bundleWriteP95ms"`
	// BundleMaxWaitMs is the longest a foreground operation waited in the access queue while
	// the bundle was made: the share of its latency that the bundle's grants caused (the rest
	// is the work itself and the CPU the machine had).
	BundleMaxWaitMs float64 `json:"bundleMaxWaitMs"`
	// The bundle's time and size, and the plain copy's.
	BundleSeconds float64 `json:"bundleSeconds"`
	BundleBytes   int64   `json:"bundleBytes"`
	CopySeconds   float64 `json:"copySeconds"`
	CopyBytes     int64   `json:"copyBytes"`
}

func RunBundle(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("bundle", "[--fixture toolbox] [--dir D] [--interval 5ms] [--repeat 3] [--json]", out)
	fb := foregroundBenchFlags(fs, "the wallet to bundle: toolbox, small or large", "rounds; each figure is the median one")
	setup, interval, repeat := fb.setup, fb.interval, fb.repeat
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	f, walletPath, identity, progress, work, err := fb.prepare(ctx, out, "bundle")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var idle50, idle95, b50, b95, bWait, bSecs, cSecs, iR, iW, bR, bW []float64
	rep := bundleBenchReport{Fixture: string(f), Repeat: *repeat}
	for round := 1; round <= *repeat; round++ {
		fmt.Fprintf(progress, "measuring round %d of %d...\n", round, *repeat)
		dir := filepath.Join(work, fmt.Sprint(round))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		r, err := benchBundleRound(ctx, dir, walletPath, identity, *interval)
		if err != nil {
			return err
		}
		idle50, idle95 = append(idle50, r.IdleP50ms), append(idle95, r.IdleP95ms)
		b50, b95, bWait = append(b50, r.BundleP50ms), append(b95, r.BundleP95ms), append(bWait, r.BundleMaxWaitMs)
		bSecs, cSecs = append(bSecs, r.BundleSeconds), append(cSecs, r.CopySeconds)
		iR, iW, bR, bW = append(iR, r.IdleReadP95ms), append(iW, r.IdleWriteP95ms), append(bR, r.BundleReadP95ms), append(bW, r.BundleWriteP95ms)
		rep.BundleBytes, rep.CopyBytes = r.BundleBytes, r.CopyBytes
		os.RemoveAll(dir)
	}
	rep.IdleP50ms, rep.IdleP95ms, rep.BundleP50ms, rep.BundleP95ms = stats.Median(idle50), stats.Median(idle95), stats.Median(b50), stats.Median(b95)
	rep.BundleSeconds, rep.CopySeconds, rep.BundleMaxWaitMs = stats.Median(bSecs), stats.Median(cSecs), stats.Median(bWait)
	rep.IdleReadP95ms, rep.IdleWriteP95ms, rep.BundleReadP95ms, rep.BundleWriteP95ms = stats.Median(iR), stats.Median(iW), stats.Median(bR), stats.Median(bW)
	rep.BundleOverIdleP95 = rep.BundleP95ms / rep.IdleP95ms
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) {
		fmt.Fprintf(w, "bench bundle: %s fixture, one foreground operation every %s, median of %d\n", f, *interval, *repeat)
		fmt.Fprintf(w, "  foreground p50 / p95 idle:          %6.2f / %6.2f ms\n", rep.IdleP50ms, rep.IdleP95ms)
		fmt.Fprintf(w, "  foreground p50 / p95 while bundling: %6.2f / %6.2f ms\n", rep.BundleP50ms, rep.BundleP95ms)
		fmt.Fprintf(w, "  foreground p95 bundling / idle: %.2fx (goal <= 2x); longest queue wait while bundling %.2f ms\n", rep.BundleOverIdleP95, rep.BundleMaxWaitMs)
		fmt.Fprintf(w, "  p95 of reads / of writes idle: %.2f / %.2f ms, while bundling: %.2f / %.2f ms\n",
			rep.IdleReadP95ms, rep.IdleWriteP95ms, rep.BundleReadP95ms, rep.BundleWriteP95ms)
		fmt.Fprintf(w, "  bundle:     %8.3f s  %10s (snapshot, zstd, manifest, fsyncs)\n", rep.BundleSeconds, command.HumanBytes(rep.BundleBytes))
		fmt.Fprintf(w, "  plain copy: %8.3f s  %10s (the wallet file, copied and fsynced)\n", rep.CopySeconds, command.HumanBytes(rep.CopyBytes))
		fmt.Fprintf(w, "  bundle / plain copy: %.2fx the time, %.2fx the size\n", rep.BundleSeconds/rep.CopySeconds, float64(rep.BundleBytes)/float64(rep.CopyBytes))
	})
}

// benchBundleRound measures one round of `bench bundle` in dir.
func benchBundleRound(ctx context.Context, dir, walletPath, identity string, interval time.Duration) (bundleBenchReport, error) {
	var r bundleBenchReport
	local := filepath.Join(dir, "wallet.sqlite")
	if err := safefile.CopyNew(walletPath, local); err != nil {
		return r, err
	}
	st, err := localstore.Open(ctx, local, localstore.Options{})
	if err != nil {
		return r, err
	}
	defer st.Close()
	caps, err := st.Capabilities(ctx)
	if err != nil {
		return r, err
	}
	q, err := scheduler.New(caps, scheduler.Options{})
	if err != nil {
		return r, err
	}
	actions, err := st.ListActions(ctx, identity, wallet.ActionQuery{Limit: 1000})
	if err != nil {
		return r, err
	}
	const minOps = 200
	idle := make(chan error)
	close(idle)
	fr, err := foregroundLoad(ctx, q.NewSession(identity, "local"), st, identity, actions, interval, minOps, idle)
	if err != nil {
		return r, err
	}
	r.IdleP50ms, r.IdleP95ms = stats.Percentile(fr.latencies, 0.50), stats.Percentile(fr.latencies, 0.95)
	r.IdleReadP95ms, r.IdleWriteP95ms = stats.Percentile(fr.byMode[scheduler.Read], 0.95), stats.Percentile(fr.byMode[scheduler.Write], 0.95)

	done := make(chan error, 1)
	var m bundle.Manifest
	go func() {
		start := time.Now()
		var err error
		m, err = bundle.Create(ctx, st, filepath.Join(dir, "bundle"), bundle.CreateOptions{Grants: q.NewSession(identity, "bundle")})
		r.BundleSeconds = time.Since(start).Seconds()
		done <- err // sends after the writes above: the receiver may read them
	}()
	fr, err = foregroundLoad(ctx, q.NewSession(identity, "local"), st, identity, actions, interval, minOps, done)
	if err != nil {
		return r, err
	}
	r.BundleMaxWaitMs = float64(fr.maxWait) / float64(time.Millisecond)
	// foregroundLoad returned nil, so it received the bundle's nil error: m and r are written.
	r.BundleP50ms, r.BundleP95ms = stats.Percentile(fr.latencies, 0.50), stats.Percentile(fr.latencies, 0.95)
	r.BundleReadP95ms, r.BundleWriteP95ms = stats.Percentile(fr.byMode[scheduler.Read], 0.95), stats.Percentile(fr.byMode[scheduler.Write], 0.95)
	r.BundleBytes = m.Files[0].SizeBytes
	if b, err := os.ReadFile(filepath.Join(dir, "bundle", bundle.ManifestName)); err == nil {
		r.BundleBytes += int64(len(b))
	}

	if err := st.Close(); err != nil {
		return r, err
	}
	start := time.Now()
	cp := filepath.Join(dir, "copy.sqlite")
	if err := safefile.CopyNew(local, cp); err != nil {
		return r, err
	}
	f, err := os.Open(cp) // fsynced, as the bundle's files are
	if err != nil {
		return r, err
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return r, err
	}
	r.CopySeconds = time.Since(start).Seconds()
	fi, err := os.Stat(cp)
	if err != nil {
		return r, err
	}
	r.CopyBytes = fi.Size()
	return r, nil
}
