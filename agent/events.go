package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
	"walletsync/agent/api"
)

// defaultRingSize is the default and the minimum number of events a Bus retains.
const defaultRingSize = 1000

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
	ring   []api.Event // event seq s lives at ring[s % len(ring)]
	last   uint64      // seq of the newest event, 0 before the first
	wake   chan struct{}
	closed bool
}

// newBus returns a bus that retains the last ringSize events; a ringSize below
// defaultRingSize (0 included) means defaultRingSize.
func newBus(ringSize int) *Bus {
	var e [4]byte
	rand.Read(e[:]) // never fails (crypto/rand)
	return &Bus{
		epoch: hex.EncodeToString(e[:]),
		ring:  make([]api.Event, max(ringSize, defaultRingSize)),
		wake:  make(chan struct{}),
	}
}

// Epoch returns the bus's random identity: different for every bus, fixed for its life.
func (b *Bus) Epoch() string { return b.epoch }

// Publish appends an event, numbers it and wakes the subscribers. It never blocks on a
// subscriber. data must not be mutated afterwards (subscribers share it) and must marshal
// to JSON. After Close, Publish drops the event and returns a zero Event.
func (b *Bus) Publish(typ api.EventType, data any) api.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return api.Event{}
	}
	b.last++
	ev := api.Event{Seq: b.last, Time: time.Now(), Type: typ, Data: data}
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
func (b *Bus) Since(since uint64) []api.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if since >= b.last {
		return nil
	}
	var out []api.Event
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
func (b *Bus) nextLocked(next uint64) (ev api.Event, after uint64, ok bool) {
	if next > b.last {
		return api.Event{}, next, false
	}
	size := uint64(len(b.ring))
	oldest := uint64(1)
	if b.last > size {
		oldest = b.last - size + 1
	}
	if next < oldest {
		return api.Event{Seq: oldest - 1, Time: time.Now(), Type: api.EventMissed, Data: api.Missed{First: next, Last: oldest - 1}}, oldest, true
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
func (s *Subscription) Next(ctx context.Context) (api.Event, error) {
	for {
		ev, ok, wake, closed := s.poll()
		switch {
		case ok:
			return ev, nil
		case closed:
			return api.Event{}, api.ErrClosed
		}
		select {
		case <-ctx.Done():
			return api.Event{}, ctx.Err()
		case <-wake:
		}
	}
}

// TryNext returns the next event if one is ready, without waiting.
func (s *Subscription) TryNext() (api.Event, bool) {
	ev, ok, _, _ := s.poll()
	return ev, ok
}

func (s *Subscription) poll() (ev api.Event, ok bool, wake <-chan struct{}, closed bool) {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.reset {
		s.reset = false
		return api.Event{Time: time.Now(), Type: api.EventMissed, Data: api.Missed{Reset: true}}, true, nil, false
	}
	ev, s.next, ok = b.nextLocked(s.next)
	return ev, ok, b.wake, b.closed
}

// busEvents serves a Bus to the API server, whose Subscribe answers the api.Subscription
// interface rather than the concrete *Subscription the daemon's own followers use.
type busEvents struct{ *Bus }

func (b busEvents) Subscribe(since uint64) api.Subscription { return b.Bus.Subscribe(since) }

// The daemon's parts are what the API server serves.
var (
	_ api.EventSource = busEvents{}
	_ api.TaskSource  = (*Manager)(nil)
	_ api.SecretStore = (*Secrets)(nil)
)
