package stats

import (
	"testing"
	"time"
)

func TestPercentile_NearestRank(t *testing.T) {
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = 1
	}
	twenty[19] = 40
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"none", nil, 0.5, 0},
		{"one", []float64{7}, 0.95, 7},
		{"median of five", []float64{1, 3, 5, 7, 9}, 0.5, 5},
		{"median of four is the lower middle", []float64{1, 3, 5, 7}, 0.5, 3},
		{"p95 of five is the largest", []float64{1, 3, 5, 7, 9}, 0.95, 9},
		{"p95 of twenty leaves one outlier beyond it", twenty, 0.95, 1},
		{"p99 of twenty is the outlier", twenty, 0.99, 40},
		{"p100 is the largest", []float64{1, 2, 3}, 1, 3},
		{"a tiny p is the smallest", []float64{1, 2, 3}, 0.01, 1},
		{"p40 of three is the second", []float64{1, 2, 3}, 0.4, 2},
		{"p10 of ten is the first", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.1, 1},
		{"p90 of ten is the ninth", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Fatalf("Percentile(%v, %v) = %v; want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentile_Durations(t *testing.T) {
	ms := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if got := Percentile(ms, 0.5); got != 2*time.Millisecond {
		t.Fatalf("median of %v = %v", ms, got)
	}
}

func TestMedian_MiddleOrMeanOfMiddles(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"odd, unsorted", []float64{9, 1, 5}, 5},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			if got := Median(tt.xs); got != tt.want {
				t.Fatalf("Median(%v) = %v; want %v", tt.xs, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.xs[i] {
					t.Fatalf("Median sorted its argument: %v", tt.xs)
				}
			}
		})
	}
}

func TestETA_RoundsUpAndKnowsWhenItDoesNotKnow(t *testing.T) {
	tests := []struct {
		name        string
		total, done int64
		rate        float64
		want        time.Duration
	}{
		{"exact", 1000, 0, 100, 10 * time.Second},
		{"rounded up", 1000, 1, 100, 10 * time.Second},
		{"a fraction of a second is a second", 1000, 999, 100, time.Second},
		{"nothing left", 1000, 1000, 100, 0},
		{"more done than the total", 1000, 1200, 100, 0},
		{"no total", 0, 10, 100, 0},
		{"no rate", 1000, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ETA(tt.total, tt.done, tt.rate); got != tt.want {
				t.Fatalf("ETA(%d, %d, %v) = %v; want %v", tt.total, tt.done, tt.rate, got, tt.want)
			}
		})
	}
}

func TestRate_SlidingWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type obs struct {
		at          float64
		rows, bytes int64
	}
	tests := []struct {
		name      string
		observed  []obs
		askAt     float64
		rows, mbs float64
	}{
		{"nothing observed", nil, 10, 0, 0},
		{"no rate before two seconds of data", []obs{{0, 0, 0}, {1.5, 150, 1500}}, 1.9, 0, 0},
		{"steady", []obs{{0, 0, 0}, {2, 200, 2000}, {4, 400, 4000}}, 4, 100, 1000},
		{"reports within a bucket replace the newest", []obs{{0, 0, 0}, {2, 200, 0}, {2.5, 250, 0}, {3, 300, 0}, {4, 400, 0}}, 4, 100, 0},
		// 0-30 s at 10 rows/s, then 30-60 s at 100 rows/s: at 60 s only the fast half counts.
		{"follows a change of speed", []obs{{0, 0, 0}, {10, 100, 0}, {20, 200, 0}, {30, 300, 0}, {40, 1300, 0}, {50, 2300, 0}, {60, 3300, 0}}, 60, 100, 0},
		// Stalled after 10 s at 10 rows/s: at 40 s the window holds only the stall.
		{"a stall decays to zero", []obs{{0, 0, 0}, {5, 50, 0}, {10, 100, 0}}, 40, 0, 0},
		{"a stall lowers the rate", []obs{{0, 0, 0}, {5, 50, 0}, {10, 100, 0}}, 20, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Rate
			for _, o := range tt.observed {
				r.Observe(at(o.at), o.rows, o.bytes)
			}
			rows, bytes := r.PerSecond(at(tt.askAt))
			if rows != tt.rows || bytes != tt.mbs {
				t.Fatalf("PerSecond = %v rows/s, %v bytes/s; want %v, %v", rows, bytes, tt.rows, tt.mbs)
			}
		})
	}
}

func TestRate_WindowStaysBounded(t *testing.T) {
	var r Rate
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		r.Observe(t0.Add(time.Duration(i)*100*time.Millisecond), int64(i), 0)
	}
	if max := int(RateSpan/rateBucket) + 2; len(r.samples) > max {
		t.Fatalf("%d samples after 10,000 reports; want at most %d", len(r.samples), max)
	}
}
