package agent

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
)

// TestAgent_JournalMaintenanceOnlyWhenQuiet: the agent prunes a wallet's change journal
// through what its backup wallet holds, and only after the wallet has gone unwritten for
// quietFor, never while one of its tasks runs, and at most once per maintainEvery. The test
// holds the maintenance's ticks and the agent's clock.
func TestAgent_JournalMaintenanceOnlyWhenQuiet(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	var mu sync.Mutex
	now := time.Now()
	e.opts.Clock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	ticks, looked := make(chan time.Time), make(chan struct{})
	e.opts.maintainTicks, e.opts.maintainLooked = ticks, looked
	a := launchAgent(t, e.opts)
	waitForDrill(t, a) // the drill a new agent starts at once would hold maintenance back
	ctx := waitCtx(t)
	// look lets the maintenance look once, and returns after it has ended: the test moves
	// the clock and starts tasks only between looks.
	look := func() {
		t.Helper()
		select {
		case ticks <- time.Now():
		case <-ctx.Done():
			t.Fatal("the maintenance does not take its tick")
		}
		select {
		case <-looked:
		case <-ctx.Done():
			t.Fatal("the maintenance look does not end")
		}
	}
	sync := func() {
		t.Helper()
		task, err := a.RunDestination("file", "manual")
		if err != nil {
			t.Fatal(err)
		}
		if done, err := a.tasks.Wait(ctx, task.ID); err != nil || done.State != api.TaskSucceeded {
			t.Fatalf("sync: %+v, %v", done, err)
		}
	}
	sync()
	w, err := a.wallet(ctx, e.wallet)
	if err != nil {
		t.Fatal(err)
	}
	journal := func() localstore.JournalState {
		t.Helper()
		j, err := w.store.JournalState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	write := func() {
		t.Helper()
		if err := w.store.AddLabel(ctx, e.identity, 1, "the app writes "+now.String()); err != nil {
			t.Fatal(err)
		}
	}
	held := journal().HighWater // what the backup wallet holds
	write()
	wantUnpruned := func(when string) {
		t.Helper()
		if j := journal(); j.PrunedThrough != 0 {
			t.Fatalf("%s: the journal was pruned (%+v)", when, j)
		}
	}

	look() // the first look only notes the wallet's write version
	advance(quietFor / 2)
	look()
	wantUnpruned("quiet for half the time")
	write()
	advance(quietFor/2 + time.Minute)
	look()
	wantUnpruned("written since the last look")

	job := newBlockingJob()
	task, err := a.tasks.Start(api.KindBackup, "folder", job.run)
	if err != nil {
		t.Fatal(err)
	}
	<-job.started
	advance(quietFor + time.Minute)
	look()
	wantUnpruned("while a task runs")
	job.release <- nil
	if _, err := a.tasks.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}

	look()
	j := journal()
	if j.PrunedThrough != held || j.Entries != j.HighWater-held {
		t.Fatalf("quiet for %v: journal %+v; want it pruned through %d, what the backup wallet holds", quietFor, j, held)
	}

	// The backup wallet catches up; the wallet is quiet again, but maintenance ran today.
	sync()
	held = journal().HighWater
	advance(quietFor + time.Minute)
	look()
	advance(quietFor + time.Minute)
	look()
	if j := journal(); j.PrunedThrough == held {
		t.Fatalf("maintenance ran twice within %v: %+v", maintainEvery, j)
	}
	advance(maintainEvery)
	look()
	if j := journal(); j.PrunedThrough != held || j.Entries != 0 {
		t.Fatalf("a day later: journal %+v; want it pruned through %d", j, held)
	}

	// A backup wallet that is gone holds nothing back: its next run copies everything.
	write()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(e.backupWallet + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	look()
	advance(maintainEvery)
	look()
	if j := journal(); j.PrunedThrough != j.HighWater || j.Entries != 0 {
		t.Fatalf("with the backup wallet gone: journal %+v; want it all pruned", j)
	}
}
