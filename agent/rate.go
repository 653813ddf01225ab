package agent

import (
	"math"
	"time"
)

// A task's rate is measured over a sliding window, not since its start, so that the rate
// and the ETA follow the current speed. The numbers:
//
//   - rateSpan, 30 s. A sync commits a page every 5-50 ms to a local file and every
//     0.1-2 s to a remote provider; the adaptive page budget changes the page size by up to
//     2x per page, and a burst of foreground work may park background work for up to 1 s
//     (the access queue's aging bound). 30 s spans at least 15 remote commits and hundreds
//     of local ones, so one slow page or one parked second moves the rate by less than
//     10%, while a lasting change of speed (a remote that slows down) is fully reflected
//     30 s later.
//   - rateBucket, 2 s. A report less than 2 s after the sample before the newest replaces
//     the newest, so samples lie at least 2 s apart and a window holds at most
//     rateSpan/rateBucket + 2 = 17 of them however often a job reports.
//   - rateMinSpan, 2 s. No rate before 2 s of data: the first page also pays for opening
//     the snapshot and the destination, and would make the first ETA wildly pessimistic.
//
// The window ends at the time of the question, not at the last report, so a stalled task's
// rate decays to zero within rateSpan and its ETA disappears instead of freezing.
const (
	rateSpan    = 30 * time.Second
	rateBucket  = 2 * time.Second
	rateMinSpan = 2 * time.Second
)

type rateSample struct {
	at          time.Time
	rows, bytes int64
}

// rateWindow holds the counters of the last rateSpan, plus the newest sample older than
// that as the baseline.
type rateWindow struct {
	samples []rateSample
}

// observe records cumulative counters at now.
func (w *rateWindow) observe(now time.Time, rows, bytes int64) {
	s := rateSample{at: now, rows: rows, bytes: bytes}
	if n := len(w.samples); n >= 2 && w.samples[n-1].at.Sub(w.samples[n-2].at) < rateBucket {
		w.samples[n-1] = s // the newest sample's bucket is still open
	} else {
		w.samples = append(w.samples, s)
	}
	w.prune(now)
}

func (w *rateWindow) prune(now time.Time) {
	cut := now.Add(-rateSpan)
	drop := 0
	for drop+1 < len(w.samples) && !w.samples[drop+1].at.After(cut) {
		drop++
	}
	w.samples = append(w.samples[:0], w.samples[drop:]...)
}

// rates returns rows and bytes per second over the window ending at now; zero before
// rateMinSpan of data.
func (w *rateWindow) rates(now time.Time) (rows, bytes float64) {
	w.prune(now)
	if len(w.samples) == 0 {
		return 0, 0
	}
	base, last := w.samples[0], w.samples[len(w.samples)-1]
	d := now.Sub(base.at)
	if d < rateMinSpan {
		return 0, 0
	}
	return float64(last.rows-base.rows) / d.Seconds(), float64(last.bytes-base.bytes) / d.Seconds()
}

// etaSeconds is the whole seconds left to move total-done rows at rate rows/s, rounded up;
// 0 when unknown (no total, no rate) or nothing is left.
func etaSeconds(total, done int64, rate float64) int64 {
	if total <= done || rate <= 0 {
		return 0
	}
	return int64(math.Ceil(float64(total-done) / rate))
}
