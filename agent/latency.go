package agent

import (
	"context"
	"slices"
	"time"
	"walletsync/agent/api"

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

// directionOf returns the direction of a task kind: only an import (and the abandoning of
// one) writes into the wallet.
func directionOf(kind api.TaskKind) string {
	if kind == api.KindImport || kind == api.KindImportAbandon {
		return api.DirectionRestore
	}
	return api.DirectionBackup
}

// summarize returns the percentiles of samples (stats.Percentile, nearest rank); it sorts
// a copy.
func summarize(samples []time.Duration) api.LatencySummary {
	s := slices.Clone(samples)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return api.LatencySummary{P50Ms: ms(stats.Percentile(s, 0.50)), P95Ms: ms(stats.Percentile(s, 0.95)), Samples: len(s)}
}

// probeLatency reads every open wallet once every probeEvery under a foreground grant, and
// publishes a metrics event per wallet and direction of the running tasks, until ctx ends.
// It only probes while a task runs: that is when the answer matters, and an idle agent does
// no work for it.
func (a *Agent) probeLatency(ctx context.Context) {
	ticks, stop := ticksOr(a.opts.probeTicks, probeEvery)
	defer stop()
	type window struct{ wallet, direction string }
	windows := map[window][]time.Duration{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		var directions []string
		for _, task := range a.tasks.List() {
			if d := directionOf(task.Kind); (task.State == api.TaskRunning || task.State == api.TaskCancelling) && !slices.Contains(directions, d) {
				directions = append(directions, d)
			}
		}
		if len(directions) == 0 {
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
			took := time.Since(start)
			for _, d := range directions {
				key := window{p, d}
				w := append(windows[key], took)
				if len(w) > probeWindow {
					w = w[len(w)-probeWindow:]
				}
				windows[key] = w
				a.bus.Publish(api.EventMetrics, api.LatencyMetrics{Wallet: p, Direction: d, Foreground: summarize(w)})
			}
		}
	}
}
