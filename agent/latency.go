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

// Directions of the background work a latency probe ran beside. The strings are a wire format.
const (
	// DirectionBackup: the wallet is read or copied out (syncs, backups, exports, drills).
	// A paged copy out takes no grant on the wallet.
	DirectionBackup = "backup"
	// DirectionRestore: rows are copied into the wallet (an import; a pull). Each page
	// commit holds a write grant on the wallet.
	DirectionRestore = "restore"
)

// directionOf returns the direction of a task kind: only an import (and the abandoning of
// one) writes into the wallet.
func directionOf(kind TaskKind) string {
	if kind == KindImport || kind == KindImportAbandon {
		return DirectionRestore
	}
	return DirectionBackup
}

// LatencyMetrics is the payload of a metrics event: how long a small foreground read of
// one wallet took, waiting in its access queue included, over its last probes made while
// background work of one direction ran. It is what a wallet front end would feel while
// that work runs, and what the dashboard's "does background work slow the wallet?" plot
// draws, one line per direction. A probe made while work of both directions ran counts
// for both.
type LatencyMetrics struct {
	Wallet     string         `json:"wallet"`
	Direction  string         `json:"direction"` // DirectionBackup or DirectionRestore
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
			if d := directionOf(task.Kind); (task.State == TaskRunning || task.State == TaskCancelling) && !slices.Contains(directions, d) {
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
				a.bus.Publish(EventMetrics, LatencyMetrics{Wallet: p, Direction: d, Foreground: summarize(w)})
			}
		}
	}
}
