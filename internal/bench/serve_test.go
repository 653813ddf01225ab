package bench

import (
	"testing"

	"walletsync/internal/walletsynctest"
)

// TestBench_Serve runs `bench serve` end to end on the small fixture, against both servers,
// and checks the report's structure and consistency; never its times.
func TestBench_Serve(t *testing.T) {
	var rep serveBenchReport
	walletsynctest.RunBenchJSON(t, "serve", &rep)
	if rep.Fixture != "small" || len(rep.Goals) != 1 {
		t.Fatalf("report header: %+v", rep)
	}
	ws, tb := rep.Walletsync, rep.Toolbox
	for _, s := range []serveBackup{ws, tb} {
		// The same wallet to a new store: every row goes in the first backup, none in the
		// unchanged one.
		if s.First.Inserts == 0 || s.First.Requests == 0 || s.First.Seconds <= 0 ||
			s.Unchanged.Inserts != 0 || s.Unchanged.Updates != 0 || s.Unchanged.Requests == 0 {
			t.Errorf("%s: %+v", s.Server, s)
		}
	}
	if ws.First.Inserts != tb.First.Inserts || ws.First.Requests != tb.First.Requests || ws.Unchanged.Requests != tb.Unchanged.Requests {
		t.Errorf("the two servers saw different backups:\n%+v\n%+v", ws, tb)
	}
	if rep.FirstRatio <= 0 || rep.UnchangedRatio <= 0 {
		t.Errorf("ratios: %v %v", rep.FirstRatio, rep.UnchangedRatio)
	}
}
