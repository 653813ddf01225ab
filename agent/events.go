package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// EventType names what an event reports. The strings are a wire format: the dashboard, the
// SSE stream and the state database's event log use them, so they never change.
type EventType string

// Event types. Task events carry a Task snapshot; task.log carries a TaskLog.
const (
	EventTaskQueued   EventType = "task.queued"   // a task waits for another on its target
	EventTaskStarted  EventType = "task.started"  // a task began running
	EventTaskProgress EventType = "task.progress" // counters, detail or cancelling (throttled)
	EventTaskLog      EventType = "task.log"      // a line was appended to a task's log
	EventTaskFinished EventType = "task.finished" // a task reached a terminal state

	EventDestinationChanged EventType = "destination.changed" // a destination was added, edited, paused or removed
	EventBackupWritten      EventType = "backup.written"      // a backup file was written and renamed into place
	EventDrillFinished      EventType = "drill.finished"      // a restore drill passed or failed
	EventMetrics            EventType = "metrics"             // a wallet's foreground latency while a task runs (LatencyMetrics)

	// EventMissed is synthetic: a subscriber fell behind the ring, or asked for events
	// that are no longer retained. Its Data is a Missed.
	EventMissed EventType = "missed"
)

// Event is one thing that happened, numbered by the bus that published it.
type Event struct {
	// Seq is strictly increasing within one bus: 1, 2, 3... A missed event carries the
	// Seq of the last event it stands for, so that a client resuming from it continues
	// with the first event after the gap.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type EventType `json:"type"`
	Data any       `json:"data,omitempty"`
}

// Missed is the Data of an EventMissed event: the events First..Last (inclusive) were not
// delivered. A client that needs them asks again with since = First-1: they arrive if the
// ring still holds them; otherwise it reloads the state it shows (tasks, destinations).
type Missed struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	// Reset: the subscriber's cursor came from another bus (an earlier run of the agent),
	// so what it missed is unknown: reload everything. First and Last are zero.
	Reset bool `json:"reset,omitempty"`
}

// DefaultRingSize is the default and the minimum number of events a Bus retains.
const DefaultRingSize = 1000

// Bus is the agent's in-process event bus, after Syncthing's lib/events. Publishers never
// block: every event goes into a ring of the last N events and wakes the subscribers.
// Subscribers are cursors into that ring, so the ring is every subscriber's buffer: one
// that falls more than N events behind loses the oldest ones and is told so by an
// EventMissed event covering exactly the lost range, never by a silent gap.
//
// Seq numbers restart with every Bus. Epoch tells two buses apart, so a client can present
// a cursor from an earlier run of the agent and be reset rather than misled (see
// Subscribe). A Bus is safe for concurrent use; its creator closes it.
type Bus struct {
	epoch string

	mu     sync.Mutex
	ring   []Event // event seq s lives at ring[s % len(ring)]
	last   uint64  // seq of the newest event, 0 before the first
	wake   chan struct{}
	closed bool
}

// NewBus returns a bus that retains the last ringSize events; a ringSize below
// DefaultRingSize (0 included) means DefaultRingSize.
func NewBus(ringSize int) *Bus {
	var e [4]byte
	rand.Read(e[:]) // never fails (crypto/rand)
	return &Bus{
		epoch: hex.EncodeToString(e[:]),
		ring:  make([]Event, max(ringSize, DefaultRingSize)),
		wake:  make(chan struct{}),
	}
}

// Epoch returns the bus's random identity: different for every bus, fixed for its life.
func (b *Bus) Epoch() string { return b.epoch }

// Publish appends an event, numbers it and wakes the subscribers. It never blocks on a
// subscriber. data must not be mutated afterwards (subscribers share it) and must marshal
// to JSON. After Close, Publish drops the event and returns a zero Event.
func (b *Bus) Publish(typ EventType, data any) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return Event{}
	}
	b.last++
	ev := Event{Seq: b.last, Time: time.Now(), Type: typ, Data: data}
	b.ring[b.last%uint64(len(b.ring))] = ev
	close(b.wake)
	b.wake = make(chan struct{})
	return ev
}

// Last returns the Seq of the newest event, 0 before the first.
func (b *Bus) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// Since returns the retained events with Seq > since, oldest first, led by an EventMissed
// event when some of them are no longer retained. It does not wait.
func (b *Bus) Since(since uint64) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if since >= b.last {
		return nil
	}
	var out []Event
	next := since + 1
	for {
		ev, n, ok := b.nextLocked(next)
		if !ok {
			return out
		}
		out, next = append(out, ev), n
	}
}

// Subscribe returns a cursor that delivers every retained event with Seq > since, in
// order, then each new one as it is published. since = 0 replays the whole ring.
//
// A since beyond the newest event cannot come from this bus: it is a cursor from an
// earlier run of the agent. Such a subscription starts with an EventMissed event with
// Reset set, then replays the ring from the start.
//
// A Subscription holds nothing in the bus: dropping it is the whole of unsubscribing.
func (b *Bus) Subscribe(since uint64) *Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &Subscription{bus: b, next: since + 1}
	if since > b.last {
		s.reset, s.next = true, 1
	}
	return s
}

// nextLocked returns the event a cursor at next receives, and the cursor after it: the
// event itself, or a missed event when next has left the ring. ok is false when next is
// beyond the newest event.
func (b *Bus) nextLocked(next uint64) (ev Event, after uint64, ok bool) {
	if next > b.last {
		return Event{}, next, false
	}
	size := uint64(len(b.ring))
	oldest := uint64(1)
	if b.last > size {
		oldest = b.last - size + 1
	}
	if next < oldest {
		return Event{Seq: oldest - 1, Time: time.Now(), Type: EventMissed, Data: Missed{First: next, Last: oldest - 1}}, oldest, true
	}
	return b.ring[next%size], next + 1, true
}

// Close stops the bus: later events are dropped, and subscribers receive what is retained
// and then ErrClosed. Close is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.wake)
	}
}

// Subscription is a cursor into a Bus. It is meant for one reading goroutine.
type Subscription struct {
	bus   *Bus
	next  uint64
	reset bool // deliver a reset before anything else
}

// Next returns the next event, waiting for one to be published. It returns ctx's error
// when ctx ends first, and ErrClosed once the bus is closed and every retained event has
// been delivered.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		ev, ok, wake, closed := s.poll()
		switch {
		case ok:
			return ev, nil
		case closed:
			return Event{}, ErrClosed
		}
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-wake:
		}
	}
}

// TryNext returns the next event if one is ready, without waiting.
func (s *Subscription) TryNext() (Event, bool) {
	ev, ok, _, _ := s.poll()
	return ev, ok
}

func (s *Subscription) poll() (ev Event, ok bool, wake <-chan struct{}, closed bool) {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.reset {
		s.reset = false
		return Event{Time: time.Now(), Type: EventMissed, Data: Missed{Reset: true}}, true, nil, false
	}
	ev, s.next, ok = b.nextLocked(s.next)
	return ev, ok, b.wake, b.closed
}
