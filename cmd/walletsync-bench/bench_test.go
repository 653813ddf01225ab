package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"walletsync/testkit/walletsynctest"
)

func TestBench_Store(t *testing.T) {
	var rep storeBenchReport
	walletsynctest.RunBenchJSON(t, "store", &rep)
	if rep.Scan.Rows == 0 || rep.Keyset.Rows != rep.Scan.Rows || rep.Keyset.Bytes != rep.Scan.Bytes || rep.TimeRatio <= 0 || rep.Keyset.PeakRSS == 0 {
		t.Fatalf("bench report %+v: keyset paging must read exactly what the scan reads", rep)
	}
}

// TestBench_Sync runs `bench sync` end to end on the small fixture and checks the report's
// structure and consistency; never its times.
func TestBench_Sync(t *testing.T) {
	var rep syncBenchReport
	walletsynctest.RunBenchJSON(t, "sync", &rep)
	full := rep.Full
	if rep.Floor.Rows == 0 || rep.ThroughGo.Rows != rep.Floor.Rows || full.Rows != rep.Floor.Rows || full.Pages == 0 || full.CommitSeconds <= 0 || full.ReadSeconds <= 0 {
		t.Errorf("full copy %+v against the floor's %d rows: the same rows, in pages, with their timings", full, rep.Floor.Rows)
	}
	if rep.Unchanged.Rows != 0 || rep.Unchanged.Pages != 0 || rep.Unchanged.Requests != 1 {
		t.Errorf("unchanged re-sync %+v: want 1 request and 0 pages", rep.Unchanged)
	}
	if rep.Incremental.Rows >= full.Rows || rep.Incremental.Requests == 0 {
		t.Errorf("incremental sync %+v after touching 1%% of %d rows: it must read only what changed", rep.Incremental, full.Rows)
	}
	if rep.FullRatio <= 0 || rep.ThroughGoRatio <= 0 || rep.IncrementalRatio <= 0 || rep.Idle.PeakRSS <= 0 {
		t.Errorf("ratios and idle RSS: %+v", rep)
	}
}

// TestBench_Scheduler runs `bench scheduler` on the small fixture and checks what each mode
// and direction did with the wallet's queue; never its times.
func TestBench_Scheduler(t *testing.T) {
	var out bytes.Buffer
	if err := RunScheduler(t.Context(), []string{"--fixture", "small", "--dir", t.TempDir(), "--interval", "1ms", "--repeat", "1", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var rep schedulerBenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bench output %q: %v", out.Bytes(), err)
	}
	if rep.Repeat != 1 || rep.Idle.Ops < 200 || rep.Idle.BackgroundPages != 0 || rep.Idle.BackgroundHoldSeconds != 0 {
		t.Fatalf("idle run: %+v", rep)
	}
	for _, sc := range []schedulerScenario{rep.Backup, rep.Restore} {
		for _, p := range []schedulerPhase{sc.Exclusive, sc.Paged, sc.Apart} {
			if p.Ops < 200 || p.BackgroundPages == 0 || p.MeanPageRows <= 0 || p.CommitSeconds <= 0 {
				t.Errorf("%s %s: %+v", sc.Direction, p.Mode, p)
			}
		}
		// The old way holds the wallet for the whole copy: its reads and its commits.
		if ex := sc.Exclusive; ex.BackgroundHoldSeconds < ex.CommitSeconds+ex.ReadSeconds {
			t.Errorf("%s exclusive: held the wallet %.6f s, but read and committed under it for %.6f s", sc.Direction, ex.BackgroundHoldSeconds, ex.CommitSeconds+ex.ReadSeconds)
		}
		// Apart, the copy takes no grant on the foreground's queue at all.
		if a := sc.Apart; a.BackgroundHoldSeconds != 0 || sc.ApartOverIdleP95 <= 0 {
			t.Errorf("%s apart shared the wallet's queue: %+v", sc.Direction, a)
		}
		if sc.PagedOverIdleP95 <= 0 || sc.ExclusiveOverPagedP95 <= 0 || sc.PagedOverExclusiveBackground <= 0 {
			t.Errorf("%s ratios: %+v", sc.Direction, sc)
		}
	}
	// Paged, a backup never takes a grant on the wallet; a restore takes one per commit.
	if p := rep.Backup.Paged; p.BackgroundHoldSeconds != 0 || p.QueueWaitSeconds != 0 || rep.Backup.PagedCopyFloorOverExclusive != 0 {
		t.Errorf("paged backup held the wallet: %+v", p)
	}
	if p := rep.Restore.Paged; p.BackgroundHoldSeconds <= 0 || p.BackgroundHoldSeconds > p.BackgroundSeconds || rep.Restore.PagedCopyFloorOverExclusive <= 0 {
		t.Errorf("paged restore: held the wallet %.6f s of a %.6f s copy", p.BackgroundHoldSeconds, p.BackgroundSeconds)
	}
	// The wallet is in WAL mode: its queue lets reads run beside a commit, and only the
	// foreground's writes count against the restore's floor.
	if !rep.ReadsBesideWriter || rep.Idle.ForegroundWriteBusy <= 0 || rep.Idle.ForegroundWriteBusy > rep.Idle.ForegroundBusy {
		t.Errorf("reads beside a commit %v, idle foreground busy %.3f, of it writing %.3f", rep.ReadsBesideWriter, rep.Idle.ForegroundBusy, rep.Idle.ForegroundWriteBusy)
	}
	// Each direction reports its own goals, and whether they are met.
	for _, tc := range []struct {
		sc        schedulerScenario
		p95, copy float64
	}{{rep.Backup, 2, 1.2}, {rep.Restore, 2, 1.3}} {
		sc := tc.sc
		if sc.P95Goal != tc.p95 || sc.CopyGoal != tc.copy || sc.P95Met != (sc.PagedOverIdleP95 <= tc.p95) || sc.CopyMet != (sc.PagedOverExclusiveBackground <= tc.copy) {
			t.Errorf("%s goals: %+v, want p95 <= %g, copy <= %g", sc.Direction, sc, tc.p95, tc.copy)
		}
	}
	// Where the foreground's time went: the slowest operations' parts add up to no more than
	// their latency, and the counters were read.
	for _, p := range []schedulerPhase{rep.Idle, rep.Backup.Paged, rep.Backup.Apart, rep.Restore.Paged, rep.Restore.Apart} {
		s := p.Slowest
		parts := s.BehindMs + s.WakeMs + s.WaitMs + s.StoreMs
		if s.Ops < 1 || s.Writes > s.Ops || s.MeanMs <= 0 || parts > s.MeanMs*1.0001 || s.BehindMs < 0 || s.WakeMs < 0 {
			t.Errorf("%s: slowest operations %+v (parts %.3f ms)", p.Mode, s, parts)
		}
		if p.ReadStoreP95ms <= 0 || p.WriteStoreP95ms <= 0 || p.Where.ProcessCPU <= 0 || p.Where.WALKiB < 0 || p.Where.PoolWaits < 0 {
			t.Errorf("%s: store times %.3f / %.3f ms, counters %+v", p.Mode, p.ReadStoreP95ms, p.WriteStoreP95ms, p.Where)
		}
	}
	// A restore commits into the wallet, through its WAL.
	if rep.Restore.Paged.Where.WALKiB <= 0 {
		t.Errorf("paged restore: WAL %v KiB", rep.Restore.Paged.Where.WALKiB)
	}
}
