package bench

import (
	"testing"

	"walletsync/internal/walletsynctest"
)

// TestBench_Serve runs `bench serve` end to end on the small fixture, both parts, and
// checks the report's structure and consistency; never its times.
func TestBench_Serve(t *testing.T) {
	var rep serveBenchReport
	walletsynctest.RunBenchJSON(t, "serve", &rep)
	if rep.Fixture != "small" || len(rep.Goals) != 3 || rep.Paged == nil || rep.Client == nil {
		t.Fatalf("report header: %+v", rep)
	}
	met := true
	for _, g := range rep.Goals {
		met = met && g.Met
	}
	if met != rep.AllGoalsMet {
		t.Errorf("allGoalsMet %v, goals %+v", rep.AllGoalsMet, rep.Goals)
	}

	// Part 1: the same rows, locally and over the wire, with the wire's clocks nested as
	// they run (the page session's commit holds the HTTP request, which holds the server's
	// handler, which holds the store's commit).
	p := rep.Paged
	if p.Repeat != 3 || len(p.Ratios) != 3 || p.Ratio <= 0 {
		t.Errorf("part 1 rounds: %+v", p)
	}
	if p.Local.Rows == 0 || p.Wire.Rows != p.Local.Rows || p.Wire.Pages != p.Local.Pages || p.Local.Requests != 0 {
		t.Errorf("part 1 moved different rows: local %+v, wire %+v", p.Local, p.Wire)
	}
	w := p.Wire
	if w.ServerCommitSeconds <= 0 || w.ServerWireSeconds < w.ServerCommitSeconds || w.HTTPSeconds < w.ServerWireSeconds ||
		w.CommitSeconds < w.HTTPSeconds || w.Requests < int(w.Pages)+3 || w.BytesSent <= 0 {
		t.Errorf("part 1 wire clocks and counts: %+v", w)
	}
	// An unchanged wallet: one request (begin) by the client that pushed; a new client
	// adds its handshake and the capabilities request.
	if p.UnchangedRequests != 1 || p.UnchangedSyncRequests != 1 || p.UnchangedColdRequests != 3 {
		t.Errorf("unchanged re-sync: %d HTTP requests (%d by the session), %d by a new client; want 1, 1, 3", p.UnchangedRequests, p.UnchangedSyncRequests, p.UnchangedColdRequests)
	}

	// Part 2.
	ws, tb := rep.Client.Walletsync, rep.Client.Toolbox
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
	if rep.Client.FirstRatio <= 0 || rep.Client.UnchangedRatio <= 0 {
		t.Errorf("ratios: %v %v", rep.Client.FirstRatio, rep.Client.UnchangedRatio)
	}
}
