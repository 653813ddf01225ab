package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"walletsync/wallet"
)

// Session is one line of work against the store (a page session, a foreground call): it
// holds at most one grant at a time, queued or held, and is pinned to the wallet identity it
// works for, the destination instance it sends to and that destination's generation when the
// session was made. Fencing the destination makes the session stale for good.
//
// A Session is safe for concurrent use, but asking for a second grant while one is queued or
// held fails with ErrReentrant: one session, one grant.
type Session struct {
	q           *Queue
	identity    string
	destination string
	generation  uint64
	grant       *Grant // queued or held; guarded by q.mu
}

// NewSession returns a session pinned to identity, destination and the destination's
// current generation. Destinations are plain names chosen by the caller; a name should
// identify one instance (a reopened provider is a new instance, or the old name fenced).
func (q *Queue) NewSession(identity, destination string) *Session {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &Session{q: q, identity: identity, destination: destination, generation: q.gens[destination]}
}

// Identity returns the wallet identity the session is pinned to.
func (s *Session) Identity() string { return s.identity }

// Destination returns the destination instance the session is pinned to.
func (s *Session) Destination() string { return s.destination }

// Generation returns the destination generation the session is pinned to, for tagging its
// requests and logs; Valid tells whether it is still current.
func (s *Session) Generation() uint64 { return s.generation }

// Valid reports whether the session's destination is still in the generation the session was
// made in. A holder checks it under its grant before any write: a grant held across a fence
// is honoured until released, but whatever it brings back must not mutate state.
func (s *Session) Valid() bool {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.validLocked()
}

func (s *Session) validLocked() bool { return s.q.gens[s.destination] == s.generation }

func (s *Session) staleError(class Class, mode Mode) error {
	return fmt.Errorf("acquire %s %s for %s generation %d: %w", class, mode, s.destination, s.generation, wallet.ErrStaleSession)
}

// Fence bumps destination's generation, for when the destination is replaced or closed. Every
// request of an older session of it that is still queued is refused with wallet.ErrStaleSession; a
// grant such a session holds stays held until released, but its Valid turns false; its later
// Acquire calls fail at once. Sessions made after Fence are unaffected.
func (q *Queue) Fence(destination string) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.gens[destination]++
	// Collect first: dropLocked edits the lines in place.
	var stale []*Grant
	for _, g := range slices.Concat(q.foreground, q.background) {
		if g.sess.destination == destination {
			stale = append(stale, g)
		}
	}
	for _, g := range stale {
		q.metrics.of(g.class).Stale++
		q.dropLocked(g, g.sess.staleError(g.class, g.mode))
	}
	q.scheduleLocked(now)
}

// Active returns the destination the last completed Switch made active, or "" before any.
func (q *Queue) Active() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active
}

// Switch makes to the active destination. Switches apply one at a time in the order they
// were called: a Switch called while another is pending waits for it, then applies.
//
// Applying a switch fences the previously active destination (unless it is to), so its
// queued work is refused at once, then takes a foreground write grant, which waits until
// every grant already held (including those of the fenced sessions) is released, on a store
// with ReadsBesideWriter every write grant (readers there see the store before or after
// apply's writes, never part of them, and bring nothing back to write), runs apply
// under that grant (apply may be nil; it is where the caller records the new active storage;
// it must not Acquire on this queue, whose only grant it already runs under), and only if
// apply succeeds makes to active. If apply fails or ctx ends, Active is unchanged
// but the fence stays: a fence cannot be undone, the old destination's sessions must be
// made again. A Switch whose ctx ends while it waits for an earlier one leaves the line
// without applying anything.
func (q *Queue) Switch(ctx context.Context, to string, apply func(ctx context.Context) error) error {
	// The turn channel is closed, never sent on, when this switch reaches the head of the
	// line; a switch that gave up is simply removed, so nobody ever blocks handing it over.
	turn := make(chan struct{})
	q.mu.Lock()
	q.switches = append(q.switches, turn)
	if len(q.switches) == 1 {
		close(turn)
	}
	q.mu.Unlock()
	defer q.leaveSwitchLine(turn)

	select {
	case <-turn:
	case <-ctx.Done():
		return fmt.Errorf("switch to %s: wait for earlier switch: %w", to, ctx.Err())
	}
	// Only the switch at the head of the line changes active, so it cannot move under us.
	if from := q.Active(); from != "" && from != to {
		q.Fence(from)
	}
	s := q.NewSession("", to)
	g, err := s.Acquire(ctx, Foreground, Write)
	if err != nil {
		return fmt.Errorf("switch to %s: %w", to, err)
	}
	defer s.Release(g) // ours and held: it cannot fail
	if apply != nil {
		if err := apply(ctx); err != nil {
			return fmt.Errorf("switch to %s: %w", to, err)
		}
	}
	q.mu.Lock()
	q.active = to
	q.mu.Unlock()
	return nil
}

// leaveSwitchLine removes turn from the line and, if it was the running switch, hands the
// turn to the next one.
func (q *Queue) leaveSwitchLine(turn chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, t := range q.switches {
		if t == turn {
			q.switches = append(q.switches[:i], q.switches[i+1:]...)
			if i == 0 && len(q.switches) > 0 {
				close(q.switches[0])
			}
			return
		}
	}
}
