package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/testkit/walletsynctest"
)

// collectEvents follows f's agent from now on into a channel, until the test ends. It
// returns the sequence number of the newest event before it started.
func collectEvents(t *testing.T, f walletsynctest.Folder) (<-chan api.StreamedEvent, uint64) {
	t.Helper()
	cursor, err := EventCursor(walletsynctest.Wait(t), f.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan api.StreamedEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// It returns ctx's error once the cleanup cancels ctx, and nothing else.
		if err := followEvents(ctx, f.Endpoint, cursor, slog.New(slog.DiscardHandler), func(ev api.StreamedEvent) { events <- ev }); !errors.Is(err, context.Canceled) {
			t.Errorf("followEvents = %v; want context.Canceled", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	_, seq, _ := strings.Cut(cursor, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	return events, n
}

// nextEvent returns the next event of one of types, skipping others.
func nextEvent(t *testing.T, events <-chan api.StreamedEvent, types ...api.EventType) api.StreamedEvent {
	t.Helper()
	ctx := walletsynctest.Wait(t)
	for {
		select {
		case ev := <-events:
			for _, typ := range types {
				if ev.Type == typ {
					return ev
				}
			}
		case <-ctx.Done():
			t.Fatalf("no %v event", types)
		}
	}
}

func TestFollowEvents_FromNowOnAndAcrossAnAgentRestart(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	first, err := agent.Start(t.Context(), f.Options())
	if err != nil {
		t.Fatal(err)
	}
	// History the follower must not replay.
	if _, err := f.Client(t).PauseAll(walletsynctest.Wait(t), 0); err != nil {
		t.Fatal(err)
	}
	events, last := collectEvents(t, f)
	if _, err := f.Client(t).ResumeAll(walletsynctest.Wait(t)); err != nil {
		t.Fatal(err)
	}
	// Other events (the drill the agent runs at start) may come between; the pause's
	// destination.changed, at or before last, must not.
	if ev := nextEvent(t, events, api.EventDestinationChanged); ev.Seq <= last {
		t.Fatalf("first destination.changed = %+v; want the resume's, after seq %d (the pause came before)", ev, last)
	}

	// The agent restarts on another port with a new event bus: the follower finds it
	// through the data folder, is told that its cursor is from another run, and goes on.
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	f.StartAgent(t)
	if _, err := f.Client(t).PauseAll(walletsynctest.Wait(t), 0); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, events, api.EventMissed, api.EventDestinationChanged)
	var missed api.Missed
	if err := json.Unmarshal(ev.Data, &missed); ev.Type != api.EventMissed || err != nil || !missed.Reset {
		t.Fatalf("first event after the restart = %+v; want a missed event with reset", ev)
	}
	if ev := nextEvent(t, events, api.EventDestinationChanged); ev.Time.Before(restarted) {
		t.Fatalf("after the reset = %+v; want the new agent's pause", ev)
	}
}
