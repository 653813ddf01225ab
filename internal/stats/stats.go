// Package stats holds the few summaries that walletsync computes from its own
// measurements, so that the agent, the command line and the benchmarks compute them the
// same way: the rate and ETA of a running copy (Rate, ETA) and the nearest-rank
// percentile of a set of samples (Percentile, Median).
//
// It is not vocabulary (package wallet): no type of it crosses an API. The agent publishes
// plain numbers (rows/s, seconds left, milliseconds), and how they were computed stays
// here, below every package that reports them.
package stats

import (
	"math"
	"slices"
	"time"
)

// A rate is measured over a sliding window, not since the start, so that the rate and the
// ETA follow the current speed. The numbers:
//
//   - RateSpan, 30 s. A sync commits a page every 5-50 ms to a local file and every
//     0.1-2 s to a remote provider; the adaptive page budget changes the page size by up to
//     2x per page, and a burst of foreground work may park background work for up to 1 s
//     (the access queue's aging bound). 30 s spans at least 15 remote commits and hundreds
//     of local ones, so one slow page or one parked second moves the rate by less than
//     10%, while a lasting change of speed (a remote that slows down) is fully reflected
//     30 s later.
//   - rateBucket, 2 s. A report less than 2 s after the sample before the newest replaces
//     the newest, so samples lie at least 2 s apart and a window holds at most
//     RateSpan/rateBucket + 2 = 17 of them however often a copy reports.
//   - RateMinSpan, 2 s. No rate before 2 s of data: the first page also pays for opening
//     the snapshot and the destination, and would make the first ETA wildly pessimistic.
//
// The window ends at the time of the question, not at the last report, so a stalled
// copy's rate decays to zero within RateSpan and its ETA disappears instead of freezing.
const (
	RateSpan    = 30 * time.Second
	rateBucket  = 2 * time.Second
	RateMinSpan = 2 * time.Second
)

type rateSample struct {
	at          time.Time
	rows, bytes int64
}

// Rate is the rows and bytes per second of a copy over the last RateSpan. Its zero value
// is ready; it is not safe for concurrent use.
type Rate struct {
	samples []rateSample // the last RateSpan, plus the newest older sample as the baseline
}

// Observe records the copy's cumulative counters at now. Times must not go backwards.
func (r *Rate) Observe(now time.Time, rows, bytes int64) {
	s := rateSample{at: now, rows: rows, bytes: bytes}
	if n := len(r.samples); n >= 2 && r.samples[n-1].at.Sub(r.samples[n-2].at) < rateBucket {
		r.samples[n-1] = s // the newest sample's bucket is still open
	} else {
		r.samples = append(r.samples, s)
	}
	r.prune(now)
}

func (r *Rate) prune(now time.Time) {
	cut := now.Add(-RateSpan)
	drop := 0
	for drop+1 < len(r.samples) && !r.samples[drop+1].at.After(cut) {
		drop++
	}
	r.samples = append(r.samples[:0], r.samples[drop:]...)
}

// PerSecond returns rows and bytes per second over the window ending at now; zero before
// RateMinSpan of data.
func (r *Rate) PerSecond(now time.Time) (rows, bytes float64) {
	r.prune(now)
	if len(r.samples) == 0 {
		return 0, 0
	}
	base, last := r.samples[0], r.samples[len(r.samples)-1]
	d := now.Sub(base.at)
	if d < RateMinSpan {
		return 0, 0
	}
	return float64(last.rows-base.rows) / d.Seconds(), float64(last.bytes-base.bytes) / d.Seconds()
}

// ETA is the time left to move total-done rows at rate rows/s, rounded up to whole
// seconds; 0 when unknown (no total, no rate) or nothing is left.
func ETA(total, done int64, rate float64) time.Duration {
	if total <= done || rate <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(float64(total-done)/rate)) * time.Second
}

// Percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted, which must be in
// ascending order: the smallest sample that at least a fraction p of the samples are less
// than or equal to, the sample of rank ceil(p*n). Of 20 samples the 95th percentile is
// the 19th: one outlier in 20 is beyond it. It is 0 for no samples.
func Percentile[T ~int64 | ~float64](sorted []T, p float64) T {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The tolerance keeps a product that floating point puts a hair above a whole number
	// (0.95*20 is not exactly 19 in binary) from climbing a rank.
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// Median returns the middle value of xs, the mean of the two middle ones for an even
// count; it sorts a copy. The benchmarks report the median of their repeated runs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
