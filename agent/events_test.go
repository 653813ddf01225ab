package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
	"walletsync/agent/api"
)

// publishN publishes n events of type typ whose Data is their index.
func publishN(b *Bus, typ api.EventType, n int) {
	for i := range n {
		b.Publish(typ, i)
	}
}

// seqs returns the Seq of each event, a missed event written as its negated First and
// Last, so that a want list reads like the stream.
func seqs(evs []api.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		if m, ok := ev.Data.(api.Missed); ok && ev.Type == api.EventMissed {
			out = append(out, -int64(m.First), -int64(m.Last))
			continue
		}
		out = append(out, int64(ev.Seq))
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestBus_SinceReplaysExactly(t *testing.T) {
	b := newBus(0)
	publishN(b, api.EventTaskStarted, 2500) // the ring holds 1501..2500
	for _, tc := range []struct {
		name  string
		since uint64
		want  []int64
	}{
		{"from the start: the lost range, then the ring", 0, append([]int64{-1, -1500}, seqRange(1501, 2500)...)},
		{"just before the ring", 1499, append([]int64{-1500, -1500}, seqRange(1501, 2500)...)},
		{"the ring's first", 1500, seqRange(1501, 2500)},
		{"inside the ring", 2400, seqRange(2401, 2500)},
		{"the newest", 2500, nil},
		{"beyond the newest", 9000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := seqs(b.Since(tc.since))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Since(%d) = %v...%v (%d), want %v...%v (%d)", tc.since, head(got), tail(got), len(got), head(tc.want), tail(tc.want), len(tc.want))
			}
		})
	}
}

func head(s []int64) []int64 { return s[:min(3, len(s))] }
func tail(s []int64) []int64 { return s[max(0, len(s)-3):] }

func TestNewBus_RingSizeHasAFloor(t *testing.T) {
	for _, tc := range []struct{ asked, kept int }{{0, 1000}, {10, 1000}, {1000, 1000}, {1500, 1500}} {
		b := newBus(tc.asked)
		publishN(b, api.EventTaskLog, 3000)
		if got := len(b.Since(3000 - uint64(tc.kept))); got != tc.kept {
			t.Errorf("NewBus(%d) retains %d events, want %d", tc.asked, got, tc.kept)
		}
	}
}

func TestSubscription_ReplaysThenFollowsLive(t *testing.T) {
	b := newBus(0)
	publishN(b, api.EventTaskStarted, 5)
	sub := b.Subscribe(2)
	ctx := t.Context()
	var got []api.Event
	for range 3 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	done := make(chan api.Event)
	go func() {
		ev, _ := sub.Next(ctx)
		done <- ev
	}()
	b.Publish(api.EventBackupWritten, "live")
	got = append(got, <-done)
	if want := seqRange(3, 6); !slices.Equal(seqs(got), want) {
		t.Fatalf("got %v, want %v", seqs(got), want)
	}
	if got[3].Type != api.EventBackupWritten || got[3].Data != "live" {
		t.Fatalf("live event = %+v", got[3])
	}
}

// A subscriber that never reads must not hold up publishers; when it reads at last it
// learns exactly what it lost, then gets the retained events in order.
func TestSubscription_SlowSubscriberNeverBlocksPublishers(t *testing.T) {
	b := newBus(0)
	sub := b.Subscribe(0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { publishN(b, api.EventTaskProgress, 2500) })
	}
	wg.Wait() // would hang if a publisher waited for the subscriber
	var got []api.Event
	for {
		ev, ok := sub.TryNext()
		if !ok {
			break
		}
		got = append(got, ev)
	}
	if want := append([]int64{-1, -9000}, seqRange(9001, 10000)...); !slices.Equal(seqs(got), want) {
		t.Fatalf("slow subscriber got %v...%v, want %v...%v", head(seqs(got)), tail(seqs(got)), head(want), tail(want))
	}
	if got[0].Seq != 9000 {
		t.Errorf("missed event Seq = %d, want 9000 (the last it stands for)", got[0].Seq)
	}
}

// Under concurrent publishers, every subscriber, fast or slow, sees a stream where each
// event follows the one before or a missed event covers exactly the gap.
func TestSubscription_ContiguousUnderConcurrency(t *testing.T) {
	b := newBus(0)
	const publishers, each = 4, 3000
	ctx := t.Context()
	check := func(sub *Subscription, pause int) error {
		next := uint64(1)
		for next <= publishers*each {
			ev, err := sub.Next(ctx)
			if err != nil {
				return err
			}
			if m, ok := ev.Data.(api.Missed); ok && ev.Type == api.EventMissed {
				if m.First != next || m.Last < m.First || ev.Seq != m.Last {
					return errors.New("missed event does not start at the gap")
				}
				next = m.Last + 1
				continue
			}
			if ev.Seq != next {
				return errors.New("event out of order or lost without notice")
			}
			next++
			if pause > 0 && ev.Seq%uint64(pause) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
	var subs sync.WaitGroup
	errs := make(chan error, 3)
	for _, pause := range []int{0, 0, 50} {
		sub := b.Subscribe(0)
		subs.Go(func() { errs <- check(sub, pause) })
	}
	var pubs sync.WaitGroup
	for range publishers {
		pubs.Go(func() { publishN(b, api.EventTaskProgress, each) })
	}
	pubs.Wait()
	subs.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestSubscription_ForeignCursorResets(t *testing.T) {
	b := newBus(0)
	publishN(b, api.EventTaskStarted, 3)
	sub := b.Subscribe(500) // a cursor from an earlier bus
	var got []api.Event
	for range 4 {
		ev, ok := sub.TryNext()
		if !ok {
			t.Fatalf("only %d events", len(got))
		}
		got = append(got, ev)
	}
	if m, ok := got[0].Data.(api.Missed); !ok || !m.Reset || got[0].Seq != 0 {
		t.Fatalf("first event = %+v, want a reset", got[0])
	}
	if want := []int64{1, 2, 3}; !slices.Equal(seqs(got[1:]), want) {
		t.Fatalf("after the reset: %v, want %v", seqs(got[1:]), want)
	}
}

func TestSubscription_NextEnds(t *testing.T) {
	t.Run("ctx ends", func(t *testing.T) {
		b := newBus(0)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := b.Subscribe(0).Next(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("close drains the ring, then ErrClosed", func(t *testing.T) {
		b := newBus(0)
		sub := b.Subscribe(0)
		publishN(b, api.EventTaskStarted, 2)
		blocked := b.Subscribe(2)
		res := make(chan error)
		go func() {
			_, err := blocked.Next(t.Context())
			res <- err
		}()
		b.Close()
		if err := <-res; !errors.Is(err, api.ErrClosed) {
			t.Fatalf("blocked Next: %v, want ErrClosed", err)
		}
		if ev := b.Publish(api.EventTaskStarted, nil); ev.Seq != 0 {
			t.Fatalf("Publish after Close numbered %d", ev.Seq)
		}
		for want := uint64(1); want <= 2; want++ {
			if ev, err := sub.Next(t.Context()); err != nil || ev.Seq != want {
				t.Fatalf("Next = %d, %v; want %d", ev.Seq, err, want)
			}
		}
		if _, err := sub.Next(t.Context()); !errors.Is(err, api.ErrClosed) {
			t.Fatalf("after the ring: %v, want ErrClosed", err)
		}
	})
}
