package main

import (
	"testing"

	"walletsync/testkit/walletsynctest"
)

// TestBench_Portable runs `bench portable` end to end on the small fixture, the toolbox
// included, and checks the report's structure and consistency; never its times.
func TestBench_Portable(t *testing.T) {
	var rep portableBenchReport
	walletsynctest.RunBenchJSON(t, "portable", &rep)
	if rep.Fixture != "small" || rep.Large != nil || rep.Repeat != 1 || rep.KDF.MemoryKiB != 131072 {
		t.Fatalf("report header: %+v", rep)
	}
	for _, s := range []portableSide{rep.Walletsync, rep.Toolbox} {
		if s.Fixture != "small" || s.Idle.PeakRSS <= 0 {
			t.Errorf("%s: %+v", s.Side, s)
		}
		for _, p := range []portablePhase{s.Export, s.Import} {
			// Argon2id runs in every phase, inside the phase's time.
			if p.Runs != 1 || p.FileBytes <= p.DocumentBytes || p.DocumentBytes <= 0 || p.Argon2Seconds <= 0 ||
				p.Seconds < p.Argon2Seconds || p.PeakRSS <= 0 || p.RSSGrowth != p.PeakRSS-s.Idle.PeakRSS {
				t.Errorf("%s %s: %+v", s.Side, p.Mode, p)
			}
		}
	}
	ws, tb := rep.Walletsync, rep.Toolbox
	// The same wallet: the same rows both ways, and documents of the same length (walletsync's
	// BRC-38 is byte for byte the toolbox's).
	if ws.Export.Rows == 0 || ws.Import.Rows != ws.Export.Rows || tb.Import.Rows != ws.Export.Rows {
		t.Errorf("rows: walletsync exported %d, restored %d; the toolbox restored %d", ws.Export.Rows, ws.Import.Rows, tb.Import.Rows)
	}
	if ws.Export.DocumentBytes != tb.Export.DocumentBytes || ws.Import.DocumentBytes != ws.Export.DocumentBytes {
		t.Errorf("document bytes: walletsync %d/%d, toolbox %d", ws.Export.DocumentBytes, ws.Import.DocumentBytes, tb.Export.DocumentBytes)
	}
	if rep.ExportRatio <= 0 || rep.ImportRatio <= 0 {
		t.Errorf("ratios: %v %v", rep.ExportRatio, rep.ImportRatio)
	}
	if len(rep.Goals) != 4 {
		t.Fatalf("goals: %+v", rep.Goals)
	}
	met := true
	for i, g := range rep.Goals {
		wantUnit := "x"
		if i >= 2 {
			wantUnit = "MiB"
		}
		if g.Unit != wantUnit || g.Name == "" || g.Limit <= 0 || g.Met != (g.Value <= g.Limit) {
			t.Errorf("goal %d: %+v", i, g)
		}
		met = met && g.Met
	}
	if rep.AllGoalsMet != met {
		t.Errorf("allGoalsMet %v, goals %+v", rep.AllGoalsMet, rep.Goals)
	}
}
