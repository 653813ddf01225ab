package main

import (
	"math"
	"runtime/metrics"
	"slices"
	"syscall"
	"time"

	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/scheduler"
)

// Where a foreground operation's time goes while a background copy shares the process and,
// in some modes, the wallet. Latencies alone cannot tell a slow queue from a slow disk or a
// busy CPU on a noisy machine; these counters can, and they are compared between runs of one
// bench invocation (paged against apart: the same copy, on the same wallet file or on a copy
// of it).

// processCounters is a reading of the process's own counters, taken before and after a run.
type processCounters struct {
	at      time.Time
	samples []metrics.Sample
	cpu     time.Duration // user + system time of the whole process
	store   localstore.Stats
}

// The runtime metrics a run reads, in the order of processCounters.samples.
var attributionMetrics = []string{
	"/sched/latencies:seconds",                // runnable goroutines waiting for a thread: CPU contention inside the process
	"/sched/pauses/total/gc:seconds",          // stop-the-world pauses of the GC
	"/gc/cycles/total:gc-cycles",              // GC cycles
	"/cpu/classes/gc/mark/assist:cpu-seconds", // GC work charged to allocating goroutines
	"/cpu/classes/gc/total:cpu-seconds",       // all GC work
	"/sync/mutex/wait/total:seconds",          // time goroutines spent blocked on sync.Mutex and friends
}

func readProcessCounters(st *localstore.Store) processCounters {
	c := processCounters{at: time.Now(), samples: make([]metrics.Sample, len(attributionMetrics)), store: st.Stats()}
	for i, name := range attributionMetrics {
		c.samples[i].Name = name
	}
	metrics.Read(c.samples)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}

// runAttribution is what a run's process and wallet counters say about where time went.
type runAttribution struct {
	// ProcessCPU is the process's CPU time over the run's wall time (2 = two cores busy).
	ProcessCPU float64 `json:"processCPU"`
	// SchedP95us and SchedP99us are percentiles of how long a runnable goroutine waited for
	// a thread, in microseconds: the CPU the process's own goroutines compete for.
	SchedP95us float64 `json:"schedP95us"`
	SchedP99us float64 `json:"schedP99us"`
	// GC: cycles, stop-the-world pause total, assist CPU (GC work charged to the goroutine
	// that allocates, the foreground's included) and all GC CPU, in milliseconds.
	GCCycles    uint64  `json:"gcCycles"`
	GCPauseMs   float64 `json:"gcPauseMs"`
	GCAssistMs  float64 `json:"gcAssistMs"`
	GCCPUms     float64 `json:"gcCPUms"`
	MutexWaitMs float64 `json:"mutexWaitMs"`
	// The foreground wallet's reader pool: reads that waited for a connection and how long,
	// and connections opened during the run (a new connection parses the schema again).
	PoolWaits     int64   `json:"poolWaits"`
	PoolWaitMs    float64 `json:"poolWaitMs"`
	ConnsOpened   int64   `json:"connsOpened"`
	WALKiB        float64 `json:"walKiB"`
	CheckpointRun int64   `json:"checkpoints"`
	// HeldBackFrames is the most WAL frames a checkpoint could not copy because a reader
	// still needed them.
	HeldBackFrames int64 `json:"heldBackFrames"`
}

// attribute compares two readings taken around a run.
func attribute(before, after processCounters) runAttribution {
	var a runAttribution
	wall := after.at.Sub(before.at)
	if wall > 0 {
		a.ProcessCPU = float64(after.cpu-before.cpu) / float64(wall)
	}
	sched := histDelta(before.samples[0].Value.Float64Histogram(), after.samples[0].Value.Float64Histogram())
	a.SchedP95us, a.SchedP99us = 1e6*sched.percentile(0.95), 1e6*sched.percentile(0.99)
	a.GCPauseMs = 1e3 * histDelta(before.samples[1].Value.Float64Histogram(), after.samples[1].Value.Float64Histogram()).sum()
	a.GCCycles = after.samples[2].Value.Uint64() - before.samples[2].Value.Uint64()
	a.GCAssistMs = 1e3 * (after.samples[3].Value.Float64() - before.samples[3].Value.Float64())
	a.GCCPUms = 1e3 * (after.samples[4].Value.Float64() - before.samples[4].Value.Float64())
	a.MutexWaitMs = 1e3 * (after.samples[5].Value.Float64() - before.samples[5].Value.Float64())
	b, e := before.store.ReadPool, after.store.ReadPool
	a.PoolWaits, a.PoolWaitMs = e.WaitCount-b.WaitCount, float64(e.WaitDuration-b.WaitDuration)/float64(time.Millisecond)
	opened := func(s localstore.Stats) int64 {
		p := s.ReadPool
		return int64(p.OpenConnections) + p.MaxIdleClosed + p.MaxIdleTimeClosed + p.MaxLifetimeClosed
	}
	a.ConnsOpened = opened(after.store) - opened(before.store)
	a.WALKiB = float64(after.store.WALBytes) / 1024
	a.CheckpointRun = after.store.Checkpoints - before.store.Checkpoints
	a.HeldBackFrames = after.store.CheckpointHeldBack
	return a
}

// hist is the difference of two readings of one runtime histogram.
type hist struct {
	counts  []uint64
	buckets []float64
}

func histDelta(before, after *metrics.Float64Histogram) hist {
	h := hist{counts: make([]uint64, len(after.Counts)), buckets: after.Buckets}
	for i := range after.Counts {
		h.counts[i] = after.Counts[i] - before.Counts[i]
	}
	return h
}

// bucketValue is a representative value of bucket i: its middle, or its finite edge.
func (h hist) bucketValue(i int) float64 {
	lo, hi := h.buckets[i], h.buckets[i+1]
	switch {
	case math.IsInf(lo, -1):
		return hi
	case math.IsInf(hi, 1):
		return lo
	}
	return (lo + hi) / 2
}

// percentile returns the upper edge of the bucket holding the p-th sample (0 when empty).
func (h hist) percentile(p float64) float64 {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(total)))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			if math.IsInf(h.buckets[i+1], 1) {
				return h.buckets[i]
			}
			return h.buckets[i+1]
		}
	}
	return 0
}

// sum estimates the total of the samples from bucket values.
func (h hist) sum() float64 {
	var s float64
	for i, c := range h.counts {
		s += float64(c) * h.bucketValue(i)
	}
	return s
}

// opSplit is where the time of a set of foreground operations went, as means in
// milliseconds (see fgOpTimes).
type opSplit struct {
	Ops      int     `json:"ops"`
	Writes   int     `json:"writes"`
	MeanMs   float64 `json:"meanMs"`
	BehindMs float64 `json:"behindMs"`
	WakeMs   float64 `json:"wakeMs"`
	WaitMs   float64 `json:"waitMs"`
	StoreMs  float64 `json:"storeMs"`
}

// slowest splits the operations at or above the p-th percentile of latency: what makes a
// p95.
func slowest(ops []fgOpTimes, p float64) opSplit {
	lat := make([]float64, len(ops))
	for i, o := range ops {
		lat[i] = float64(o.latency)
	}
	slices.Sort(lat)
	cut := time.Duration(stats.Percentile(lat, p))
	var s opSplit
	var sum fgOpTimes
	for _, o := range ops {
		if o.latency < cut {
			continue
		}
		s.Ops++
		if o.mode == scheduler.Write {
			s.Writes++
		}
		sum.latency, sum.behind, sum.wake, sum.wait, sum.hold = sum.latency+o.latency, sum.behind+o.behind, sum.wake+o.wake, sum.wait+o.wait, sum.hold+o.hold
	}
	if s.Ops > 0 {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(s.Ops) }
		s.MeanMs, s.BehindMs, s.WakeMs, s.WaitMs, s.StoreMs = ms(sum.latency), ms(sum.behind), ms(sum.wake), ms(sum.wait), ms(sum.hold)
	}
	return s
}

// storeP95 returns the p95 of the store time (under the grant) of the operations of mode m,
// in milliseconds.
func storeP95(ops []fgOpTimes, m scheduler.Mode) float64 {
	var hold []float64
	for _, o := range ops {
		if o.mode == m {
			hold = append(hold, float64(o.hold)/float64(time.Millisecond))
		}
	}
	slices.Sort(hold)
	return stats.Percentile(hold, 0.95)
}
