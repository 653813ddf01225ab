package bench

import (
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"walletsync/internal/walletsynctest"
)

// checkLoad fails unless rep is a clean run of small and big clients: nothing failed and
// nothing was refused but for busy answers the clients retried, every request was counted
// and timed, and every client's rows on the server equal its wallet's. Never its times.
func checkLoad(t *testing.T, rep loadReport, small, big int) {
	t.Helper()
	if rep.Errors != 0 || len(rep.ErrorSamples) != 0 {
		t.Errorf("%d errors: %q", rep.Errors, rep.ErrorSamples)
	}
	if rep.Verified != small+big || len(rep.Mismatches) != 0 {
		t.Errorf("%d of %d clients verified; differences: %q", rep.Verified, small+big, rep.Mismatches)
	}
	s, b := rep.Classes[0], rep.Classes[1]
	if s.Clients != small || b.Clients != big || s.Rows < int64(small)*60 || (big > 0 && b.Rows < int64(big)*20000) {
		t.Errorf("classes: %+v", rep.Classes)
	}
	// Each client's first request is its BRC-104 handshake, its sync begins and commits
	// at least one page of every table it has rows of.
	l, c := rep.Latency, rep.Commit
	if rep.Requests != l.Count || l.Count < (small+big)*3 || c.Count < (small+big)*5 || c.Count >= l.Count {
		t.Errorf("%d requests, %d timed, %d commits", rep.Requests, l.Count, c.Count)
	}
	if l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 || l.P99 > l.Max || c.P50 <= 0 || c.P99 > c.Max {
		t.Errorf("latency percentiles out of order: %+v, commits %+v", l, c)
	}
}

// TestLoad_ConcurrentClients runs the load in this process, so that the race detector
// watches the server, the wire and the clients together: 8 clients, each its own
// identity, push the small fixture to one walletsync serve at once. (The toolbox fixture
// takes minutes under the race detector; TestBench_Load adds a client of it.)
func TestLoad_ConcurrentClients(t *testing.T) {
	dir := t.TempDir()
	rep, err := runLoad(t.Context(), loadConfig{Small: 8, Dir: dir, Work: dir, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	checkLoad(t, rep, 8, 0)
}

// TestBench_Load runs `walletsync bench load --clients 8 --big 1 --json` as a child
// process: 8 clients push the small fixture while one pushes the toolbox fixture. The
// command exits non-zero on any error or difference; its report is checked too.
func TestBench_Load(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildSelf(t, exe)
	out := walletsynctest.RunBinary(t, exe, "bench", "load", "--clients", "8", "--big", "1", "--dir", t.TempDir(), "--json")
	var rep loadReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench load output %q: %v", out, err)
	}
	checkLoad(t, rep, 8, 1)
}
