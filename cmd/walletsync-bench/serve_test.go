package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/testkit/walletsynctest"
)

// TestBench_Serve runs `bench serve` end to end on the small fixture, both parts, and
// checks the report's structure and consistency; never its times. Then `bench serve --db
// postgres` (a throwaway cluster the command starts, walletsync serve a child process over
// it): part 2 measured the same way, and part 1 either measured or, while the servers offer
// no paged wire on PostgreSQL, said to need it, with no figure.
func TestBench_Serve(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildLab(t, exe)
	run := func(t *testing.T, args ...string) serveBenchReport {
		out := walletsynctest.RunBinary(t, exe, append([]string{"serve", "--fixture", "small", "--dir", t.TempDir(), "--json"}, args...)...)
		var rep serveBenchReport
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("bench serve output %q: %v", out, err)
		}
		met := true
		for _, g := range rep.Goals {
			met = met && g.Met
		}
		if met != rep.AllGoalsMet {
			t.Errorf("allGoalsMet %v, goals %+v", rep.AllGoalsMet, rep.Goals)
		}
		checkServeClients(t, rep.Client)
		return rep
	}
	t.Run("sqlite", func(t *testing.T) {
		rep := run(t)
		if rep.Fixture != "small" || rep.Backend != "" || len(rep.Goals) != 3 || rep.Paged == nil || rep.PagedNote != "" {
			t.Fatalf("report header: %+v", rep)
		}
		checkServePaged(t, rep.Paged, true)
	})
	t.Run("postgres", func(t *testing.T) {
		rep := run(t, "--db", "postgres")
		if rep.Fixture != "small" || rep.Backend != "postgres" {
			t.Fatalf("report header: %+v", rep)
		}
		switch {
		case rep.Paged == nil && strings.Contains(rep.PagedNote, "needs the paged wire on PostgreSQL") && len(rep.Goals) == 1:
		case rep.Paged != nil && rep.PagedNote == "" && len(rep.Goals) == 3:
			checkServePaged(t, rep.Paged, false)
		default:
			t.Fatalf("part 1 on PostgreSQL: note %q, report %+v, goals %+v", rep.PagedNote, rep.Paged, rep.Goals)
		}
	})
}

// checkServePaged checks part 1: the same rows, locally and over the wire, with the wire's
// clocks nested as they run (the page session's commit holds the HTTP request, which holds
// the server's handler, which holds the store's commit; the server's clocks only when it
// ran in the bench's process, serverClocks).
func checkServePaged(t *testing.T, p *servePagedReport, serverClocks bool) {
	t.Helper()
	if p.Repeat != 3 || len(p.Ratios) != 3 || p.Ratio <= 0 {
		t.Errorf("part 1 rounds: %+v", p)
	}
	if p.Local.Rows == 0 || p.Wire.Rows != p.Local.Rows || p.Wire.Pages != p.Local.Pages || p.Local.Requests != 0 {
		t.Errorf("part 1 moved different rows: local %+v, wire %+v", p.Local, p.Wire)
	}
	w := p.Wire
	if (serverClocks && w.ServerCommitSeconds <= 0) || (!serverClocks && w.ServerWireSeconds != 0) || w.ServerWireSeconds < w.ServerCommitSeconds || w.HTTPSeconds < w.ServerWireSeconds ||
		w.CommitSeconds < w.HTTPSeconds || w.Requests < int(w.Pages)+3 || w.BytesSent <= 0 {
		t.Errorf("part 1 wire clocks and counts: %+v", w)
	}
	// An unchanged wallet: one request (begin) by the client that pushed; a new client
	// adds its handshake and the capabilities request.
	if p.UnchangedRequests != 1 || p.UnchangedSyncRequests != 1 || p.UnchangedColdRequests != 3 {
		t.Errorf("unchanged re-sync: %d HTTP requests (%d by the session), %d by a new client; want 1, 1, 3", p.UnchangedRequests, p.UnchangedSyncRequests, p.UnchangedColdRequests)
	}
}

// checkServeClients checks part 2: the toolbox's client backed the same wallet up to both
// servers.
func checkServeClients(t *testing.T, c *serveClientReport) {
	t.Helper()
	if c == nil {
		t.Fatal("no part 2")
	}
	ws, tb := c.Walletsync, c.Toolbox
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
	if c.FirstRatio <= 0 || c.UnchangedRatio <= 0 {
		t.Errorf("ratios: %v %v", c.FirstRatio, c.UnchangedRatio)
	}
}
