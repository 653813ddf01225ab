package agent

import (
	"context"
	"slices"
	"time"

	"walletsync/internal/stats"
)

// Timing of the wallet latency probe.
const (
	// probeEvery is how often, while a task runs, the probe reads each open wallet.
	probeEvery = time.Second
	// probeWindow is how many probes of a wallet the published percentiles cover: the last
	// minute at probeEvery.
	probeWindow = 60
)

// LatencyMetrics is the payload of a metrics event: how long a small foreground read of
// one wallet took, waiting in its access queue included, over its last probes. It is what
// a wallet front end would feel while background work runs, and what the dashboard's
// "does background work slow the wallet?" plot draws.
type LatencyMetrics struct {
	Wallet     string         `json:"wallet"`
	Foreground LatencySummary `json:"foreground"`
}

// LatencySummary is the median and 95th percentile of a set of durations, in milliseconds.
type LatencySummary struct {
	P50Ms   float64 `json:"p50Ms"`
	P95Ms   float64 `json:"p95Ms"`
	Samples int     `json:"samples"`
}

// summarize returns the percentiles of samples (stats.Percentile, nearest rank); it sorts
// a copy.
func summarize(samples []time.Duration) LatencySummary {
	s := slices.Clone(samples)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return LatencySummary{P50Ms: ms(stats.Percentile(s, 0.50)), P95Ms: ms(stats.Percentile(s, 0.95)), Samples: len(s)}
}

// probeLatency reads every open wallet once every probeEvery under a foreground grant, and
// publishes a metrics event per wallet, until ctx ends. It only probes while a task runs:
// that is when the answer matters, and an idle agent does no work for it.
func (a *Agent) probeLatency(ctx context.Context) {
	ticks := a.opts.probeTicks
	if ticks == nil {
		t := time.NewTicker(probeEvery)
		defer t.Stop()
		ticks = t.C
	}
	windows := map[string][]time.Duration{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		if !a.tasks.Busy() {
			continue
		}
		a.mu.Lock()
		paths := make([]string, 0, len(a.wallets))
		for p := range a.wallets {
			paths = append(paths, p)
		}
		a.mu.Unlock()
		for _, p := range paths {
			start := time.Now()
			err := a.foreground(ctx, p, func(w *walletHandle) error {
				_, err := w.store.Settings(ctx)
				return err
			})
			if err != nil {
				continue // a wallet being closed or gone: nothing to measure
			}
			w := append(windows[p], time.Since(start))
			if len(w) > probeWindow {
				w = w[len(w)-probeWindow:]
			}
			windows[p] = w
			a.bus.Publish(EventMetrics, LatencyMetrics{Wallet: p, Foreground: summarize(w)})
		}
	}
}
