package main

import (
	"testing"

	"walletsync/testkit/walletsynctest"
)

// TestBench_Remote runs `walletsync bench remote` on the small fixture against two real
// toolbox StorageServers: every side reports its time, requests and bytes, and walletsync's
// pull brought back every row it pushed.
func TestBench_Remote(t *testing.T) {
	var rep remoteBenchReport
	walletsynctest.RunBenchJSON(t, "remote", &rep)
	if rep.Fixture != "small" || rep.Rows < 60 || len(rep.Goals) != 3 {
		t.Fatalf("report: %+v", rep)
	}
	for name, s := range map[string]remoteSide{"walletsync push": rep.WalletsyncPush, "toolbox push": rep.ToolboxPush,
		"walletsync pull": rep.WalletsyncPull, "toolbox pull": rep.ToolboxPull} {
		if s.Seconds <= 0 || s.Requests < 2 || s.BytesSent <= 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if rep.WalletsyncPush.Rows != rep.Rows || rep.WalletsyncPull.Rows != rep.Rows {
		t.Errorf("walletsync moved %d rows out and %d back, of %d", rep.WalletsyncPush.Rows, rep.WalletsyncPull.Rows, rep.Rows)
	}
}
