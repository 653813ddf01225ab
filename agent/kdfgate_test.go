package agent

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"walletsync/agent/api"
)

// TestAgent_DeriveGateOneAtATime starts three tasks that each pass the agent's key
// derivation gate and hold it until the test lets them go. While the first holds it, the
// other two wait and say so in their detail and log; no two are ever inside at once; all
// three finish; and a task cancelled while waiting ends cancelled without entering.
func TestAgent_DeriveGateOneAtATime(t *testing.T) {
	a := &Agent{kdf: make(chan struct{}, 1)}
	m, _ := mustManager(t, managerOptions{})
	var inside, most, entered atomic.Int32
	proceed := make(chan struct{})
	job := func(ctx context.Context, h *TaskHandle) error {
		release, err := a.deriveGate(ctx)
		if err != nil {
			return err
		}
		defer release()
		entered.Add(1)
		n := inside.Add(1)
		for cur := most.Load(); n > cur && !most.CompareAndSwap(cur, n); cur = most.Load() {
		}
		<-proceed
		inside.Add(-1)
		return nil
	}
	var ids []string
	for _, target := range []string{"a", "b", "c"} {
		task, err := m.Start("derive", target, job)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	ctx := waitCtx(t)
	waiting := func() int {
		n := 0
		for _, id := range ids {
			if task, _ := m.Get(id); strings.HasPrefix(task.Detail, "waiting") {
				n++
			}
		}
		return n
	}
	for waiting() < 2 || entered.Load() < 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("two tasks never waited: %d waiting, %d entered", waiting(), entered.Load())
		case <-time.After(time.Millisecond):
		}
	}
	// A waiting task that is cancelled stops waiting and never enters.
	var victim string
	for _, id := range ids {
		if task, _ := m.Get(id); strings.HasPrefix(task.Detail, "waiting") {
			victim = id
			break
		}
	}
	if _, err := m.Cancel(victim); err != nil {
		t.Fatal(err)
	}
	if task, err := m.Wait(ctx, victim); err != nil || task.State != api.TaskCancelled {
		t.Fatalf("the cancelled waiter: %+v, %v", task, err)
	}
	close(proceed)
	for _, id := range ids {
		task, err := m.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if id != victim && task.State != api.TaskSucceeded {
			t.Fatalf("task %s: %+v", id, task)
		}
	}
	if most.Load() != 1 || entered.Load() != 2 {
		t.Fatalf("%d inside the gate at once, %d entered; want 1 and 2", most.Load(), entered.Load())
	}
	logged := 0
	for _, id := range ids {
		lines, _ := m.Log(id)
		for _, l := range lines {
			if strings.Contains(l.Text, "waiting for another task's key derivation") {
				logged++
			}
		}
	}
	if logged != 2 {
		t.Fatalf("%d tasks logged that they waited; want 2", logged)
	}
}
