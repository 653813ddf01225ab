package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"walletsync/cli/command"
	"walletsync/testkit/walletsynctest"
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
		// Each client's first request is its BRC-104 handshake; on the paged wire its sync
		// then asks the capabilities, begins, and moves at least one page of every table it
		// has rows of; on the toolbox wire it asks the server's settings and sync state, and
		// moves at least a chunk of rows and the last, empty one.
		l, pg := p.Latency, p.Pages
		minPages := 5
		if rep.Wire == "toolbox" {
			minPages = 2
		}
		if p.Requests != l.Count || l.Count < (small+big)*3 || pg.Count < (small+big)*minPages || pg.Count >= l.Count {
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

// checkMoved fails unless rep is a PostgreSQL run over two servers in which, phase by
// phase, the clients that move (every fourth from the second, every fourth from the
// fourth) had their pages answered by both servers, each having opened its BRC-104
// session again on the server it moved to. checkLoad has checked them exact.
func checkMoved(t *testing.T, rep loadReport, clients int) {
	t.Helper()
	if rep.Backend != "postgres" || rep.Servers != 2 || (rep.Wire != "toolbox" && rep.Wire != "walletsync") {
		t.Fatalf("backend %q, %d servers, wire %q", rep.Backend, rep.Servers, rep.Wire)
	}
	want := (clients+2)/4 + clients/4
	for _, p := range rep.Phases {
		if p.Moved != want || p.Rehandshakes < p.Moved {
			t.Errorf("%s: %d clients moved (%d sessions opened again), want %d", p.Name, p.Moved, p.Rehandshakes, want)
		}
	}
}

// TestBench_Load runs `walletsync bench load --db sqlite,postgres --clients 4 --big 1
// --json` as a child process: on each backend 4 clients push the small fixture while one
// pushes the toolbox fixture; on PostgreSQL (a throwaway cluster the command starts) to
// two `walletsync serve` processes of the binary, some clients moved between them
// mid-sync. The command exits non-zero on any error or difference; its report is checked
// too. Then the PostgreSQL run in this process, so that the race detector watches the
// clients moved between the two servers, pushing and pulling.
func TestBench_Load(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildLab(t, exe)
	dir := t.TempDir()
	t.Run("command", func(t *testing.T) {
		out := walletsynctest.RunBinary(t, exe, "load", "--db", "sqlite,postgres", "--clients", "4", "--big", "1", "--dir", dir, "--json")
		var cmp loadComparison
		if err := json.Unmarshal(out, &cmp); err != nil || len(cmp.Runs) != 2 {
			t.Fatalf("bench load output %q: %v", out, err)
		}
		if cmp.Runs[0].Backend != "" {
			t.Errorf("the SQLite run says backend %q", cmp.Runs[0].Backend)
		}
		for _, rep := range cmp.Runs {
			checkLoad(t, rep, 4, 1, "push")
		}
		checkMoved(t, cmp.Runs[1], 5)
	})
	t.Run("postgres in process", func(t *testing.T) {
		work := t.TempDir()
		rep, err := runLoad(t.Context(), loadConfig{Small: 4, Pull: true, Dir: dir, Work: work, Progress: io.Discard, Postgres: cluster.NewDatabase(t), Exe: exe})
		if err != nil {
			t.Fatal(err)
		}
		checkLoad(t, rep, 4, 0, "push", "pull")
		checkMoved(t, rep, 4)
	})
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
		{RunLoad, []string{"--db", "sqlite,mysql://x"}},
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
