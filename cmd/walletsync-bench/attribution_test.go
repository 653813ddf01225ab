package main

import (
	"math"
	"testing"
	"time"

	"walletsync/scheduler"
)

func TestHist_PercentileAndSum(t *testing.T) {
	h := hist{buckets: []float64{math.Inf(-1), 1, 2, 4, math.Inf(1)}, counts: []uint64{0, 90, 8, 2}}
	for _, tc := range []struct{ p, want float64 }{{0.5, 2}, {0.9, 2}, {0.95, 4}, {0.99, 4}, {1, 4}} {
		if got := h.percentile(tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got, want := h.sum(), 90*1.5+8*3+2*4.0; got != want {
		t.Errorf("sum = %v, want %v", got, want)
	}
	if got := (hist{buckets: h.buckets, counts: make([]uint64, 4)}).percentile(0.95); got != 0 {
		t.Errorf("empty percentile = %v", got)
	}
}

func TestSlowest_SplitsTheTail(t *testing.T) {
	ms := time.Millisecond
	var ops []fgOpTimes
	for range 19 {
		ops = append(ops, fgOpTimes{mode: scheduler.Read, latency: ms, hold: ms})
	}
	// One slow write and the read that waited behind it make the tail.
	ops = append(ops, fgOpTimes{mode: scheduler.Write, latency: 30 * ms, wait: 10 * ms, hold: 20 * ms},
		fgOpTimes{mode: scheduler.Read, latency: 26 * ms, behind: 25 * ms, hold: ms})
	s := slowest(ops, 0.95)
	want := opSplit{Ops: 2, Writes: 1, MeanMs: 28, BehindMs: 12.5, WaitMs: 5, StoreMs: 10.5}
	if s != want {
		t.Errorf("slowest = %+v, want %+v", s, want)
	}
	if got := storeP95(ops, scheduler.Write); got != 20 {
		t.Errorf("write store p95 = %v, want 20", got)
	}
}
