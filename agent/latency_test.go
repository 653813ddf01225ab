package agent

import (
	"context"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
)

func TestDirectionOf(t *testing.T) {
	for kind, want := range map[api.TaskKind]string{
		api.KindImport: api.DirectionRestore, api.KindImportAbandon: api.DirectionRestore, api.KindSync: api.DirectionBackup, api.KindBackup: api.DirectionBackup,
		api.KindExport: api.DirectionBackup, api.KindDrill: api.DirectionBackup,
	} {
		if got := directionOf(kind); got != want {
			t.Errorf("directionOf(%q) = %q, want %q", kind, got, want)
		}
	}
}

func TestSummarize_Percentiles(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    api.LatencySummary
	}{
		{"none", nil, api.LatencySummary{}},
		{"one", ms(7), api.LatencySummary{P50Ms: 7, P95Ms: 7, Samples: 1}},
		{"unsorted", ms(9, 1, 5, 3, 7), api.LatencySummary{P50Ms: 5, P95Ms: 9, Samples: 5}},
		// Nearest rank: the 95th percentile of 20 is the 19th sample, so one slow probe in
		// 20 is beyond it and two are not.
		{"one outlier in twenty", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 40), api.LatencySummary{P50Ms: 1, P95Ms: 1, Samples: 20}},
		{"a tail", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 40, 40), api.LatencySummary{P50Ms: 1, P95Ms: 40, Samples: 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.samples...)
			if got := summarize(tc.samples); got != tc.want {
				t.Fatalf("summarize = %+v, want %+v", got, tc.want)
			}
			for i := range in {
				if in[i] != tc.samples[i] {
					t.Fatal("summarize reordered its input")
				}
			}
		})
	}
}

// While a task runs, the agent publishes the wallet's foreground latency (the dashboard's
// live plot); once nothing runs, it stops probing. The test holds the probe's ticker and a
// task that runs until released, so that the probe looks exactly while a task runs, and
// again after it ended, however slow the machine.
func TestAgent_PublishesWalletLatencyWhileATaskRuns(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	ticks := make(chan time.Time)
	e.opts.probeTicks = ticks
	a := launchAgent(t, e.opts)
	if _, err := a.wallet(waitCtx(t), e.wallet); err != nil { // a task opens its wallet
		t.Fatal(err)
	}
	// The restore drill has never run, so the agent's timetable starts one at once; it must
	// be over before the test's own task, or the probe would see it running.
	waitForDrill(t, a)
	tick := func() {
		t.Helper()
		select {
		case ticks <- time.Now():
		case <-waitCtx(t).Done():
			t.Fatal("the probe does not take its tick")
		}
	}
	sub := a.bus.Subscribe(a.bus.Last())
	release, running := make(chan struct{}), make(chan struct{})
	task, err := a.tasks.Start(api.KindSync, "file", func(context.Context, *TaskHandle) error {
		close(running)
		<-release
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-running
	tick()
	var got api.LatencyMetrics
	for {
		ev, err := sub.Next(waitCtx(t))
		if err != nil {
			t.Fatalf("no metrics event while a task runs: %v", err)
		}
		if m, ok := ev.Data.(api.LatencyMetrics); ok && ev.Type == api.EventMetrics {
			got = m
			break
		}
	}
	if got.Wallet != e.wallet || got.Direction != api.DirectionBackup || got.Foreground.Samples != 1 || got.Foreground.P50Ms <= 0 || got.Foreground.P95Ms < got.Foreground.P50Ms {
		t.Fatalf("metrics %+v; want the wallet %s, the backup direction, one sample, 0 < p50 <= p95", got, e.wallet)
	}
	close(release)
	if _, err := a.tasks.Wait(waitCtx(t), task.ID); err != nil {
		t.Fatal(err)
	}
	if a.tasks.Busy() {
		t.Fatalf("busy after the only task ended: %+v", a.tasks.List())
	}
	idle := a.bus.Last()
	// The probe takes a tick only once it handled the one before: after the third send,
	// two ticks with nothing running were handled in full.
	tick()
	tick()
	tick()
	for _, ev := range a.bus.Since(idle) {
		if ev.Type == api.EventMetrics {
			t.Fatalf("a metrics event while nothing ran: %+v", ev)
		}
	}
}

// waitForDrill waits until the restore drill that a new agent's timetable starts has ended.
func waitForDrill(t *testing.T, a *Agent) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		for _, task := range a.tasks.List() {
			if task.Kind == api.KindDrill {
				if _, err := a.tasks.Wait(ctx, task.ID); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the timetable started no restore drill")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
