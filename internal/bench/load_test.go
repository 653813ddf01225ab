package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"walletsync/internal/command"
	"walletsync/internal/walletsynctest"
)

// checkLoad fails unless rep is a clean run of small and big clients, phase by phase:
// nothing failed and nothing was refused but for busy answers the clients retried, every
// request was counted and timed, and every client's rows on the server (and in the wallet
// it pulled) equal its wallet's. Never its times.
func checkLoad(t *testing.T, rep loadReport, small, big int, phases ...string) {
	t.Helper()
	if rep.Errors != 0 || len(rep.ErrorSamples) != 0 {
		t.Errorf("%d errors: %q", rep.Errors, rep.ErrorSamples)
	}
	if rep.Verified != small+big || len(rep.Mismatches) != 0 {
		t.Errorf("%d of %d clients verified; differences: %q", rep.Verified, small+big, rep.Mismatches)
	}
	if len(rep.Phases) != len(phases) {
		t.Fatalf("phases %+v, want %q", rep.Phases, phases)
	}
	busy := 0
	for i, p := range rep.Phases {
		busy += p.Busy
		s, b := p.Classes[0], p.Classes[1]
		if p.Name != phases[i] || p.Errors != 0 || s.Clients != small || b.Clients != big || s.Rows < int64(small)*60 || (big > 0 && b.Rows < int64(big)*20000) {
			t.Errorf("phase %d: %+v", i, p)
		}
		// Each client's first request is its BRC-104 handshake; its sync then asks the
		// capabilities, begins, and moves at least one page of every table it has rows of.
		l, pg := p.Latency, p.Pages
		if p.Requests != l.Count || l.Count < (small+big)*3 || pg.Count < (small+big)*5 || pg.Count >= l.Count {
			t.Errorf("%s: %d requests, %d timed, %d pages", p.Name, p.Requests, l.Count, pg.Count)
		}
		if l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 || l.P99 > l.Max || pg.P50 <= 0 || pg.P99 > pg.Max {
			t.Errorf("%s: latency percentiles out of order: %+v, pages %+v", p.Name, l, pg)
		}
	}
	if busy != rep.Busy {
		t.Errorf("busy answers: %d in all, %d in the phases", rep.Busy, busy)
	}
}

// TestLoad_ConcurrentClients runs the load in this process, so that the race detector
// watches the server, the wire and the clients together: 4 clients, each its own
// identity, push the small fixture to one walletsync serve at once, then pull it back at
// once (one retained view at a time on a SQLite store: the others are told busy and
// retry). Under the race detector on a shared 2-core machine 8 clients took two minutes,
// and the toolbox fixture takes minutes on its own; TestBench_Load runs the command with
// 8 small clients and a toolbox one.
func TestLoad_ConcurrentClients(t *testing.T) {
	dir := t.TempDir()
	rep, err := runLoad(t.Context(), loadConfig{Small: 4, Pull: true, Dir: dir, Work: dir, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	checkLoad(t, rep, 4, 0, "push", "pull")
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
	checkLoad(t, rep, 8, 1, "push")
}

// TestBench_LoadAndServeUsage: flags out of range are refused as usage errors before any
// wallet is made or server started.
func TestBench_LoadAndServeUsage(t *testing.T) {
	for _, tc := range []struct {
		run  func(context.Context, []string, io.Writer) error
		args []string
	}{
		{RunLoad, []string{"--clients", "-1"}},
		{RunLoad, []string{"--clients", "0", "--big", "0"}},
		{RunServe, []string{"--part", "both"}},
		{RunServe, []string{"--repeat", "0"}},
	} {
		dir := t.TempDir()
		err := tc.run(t.Context(), append(tc.args, "--dir", dir), io.Discard)
		if !errors.Is(err, command.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", tc.args, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v left %d files in the bench folder", tc.args, len(entries))
		}
	}
}
