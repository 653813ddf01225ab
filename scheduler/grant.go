package scheduler

import (
	"context"
	"fmt"
	"time"

	"walletsync/wallet"
)

type grantState uint8

const (
	waiting grantState = iota // in its class's line
	held                      // handed out; the holder must release it
	done                      // released, cancelled or refused; never held again
)

// Grant is permission to use the store in one mode until it is released. It is issued by
// Session.Acquire to that session only, and only Session.Release on the same session gives it
// back. The holder owns the release: a grant that is never released blocks every writer.
//
// A Grant starts life as the waiting request; Acquire hands it out once it is granted, so
// the holder never sees the other states.
type Grant struct {
	sess    *Session
	class   Class
	mode    Mode
	asked   time.Time
	fgAtAsk uint64 // its lane's foreground grant count when it was asked for: bypasses are counted from here

	// Guarded by the queue's mutex until decided is closed; read-only for the waiter after.
	state   grantState
	granted time.Time
	err     error // why it was refused; nil when granted or cancelled
	// decided is closed, never sent on, when the queue grants or refuses the request: the
	// scheduler decides under its lock and must never block on a waiter that has gone.
	decided chan struct{}
}

// Class returns the class the grant was asked for.
func (g *Grant) Class() Class { return g.class }

// Mode returns the mode the grant was asked for. On a store without concurrent reads a Read
// grant is held exclusively all the same; on a store with ReadsBesideWriter a Write grant
// excludes other writers only.
func (g *Grant) Mode() Mode { return g.mode }

// Wait returns how long the request waited in the queue before it was granted.
func (g *Grant) Wait() time.Duration { return g.granted.Sub(g.asked) }

// Acquire waits for a grant of the given class and mode and returns it; the caller must
// release it with Release. Before writing under the grant the caller checks Valid: a fence
// may have made the session stale while it held the grant.
//
// Acquire refuses at once, without queueing: an invalid class or mode
// (wallet.ErrInvalidArgument), a session that already holds or waits for a grant
// (ErrReentrant), a stale session (wallet.ErrStaleSession), an already ended context. A queued
// request is refused with wallet.ErrStaleSession when its destination is fenced. When ctx ends
// first the request leaves the queue at once and Acquire returns an error wrapping
// ctx.Err(); it never returns a grant for an ended context, even one granted in the same
// instant (that grant is released on the caller's behalf).
func (s *Session) Acquire(ctx context.Context, class Class, mode Mode) (*Grant, error) {
	if !class.valid() || !mode.valid() {
		return nil, fmt.Errorf("acquire %s %s: %w", class, mode, wallet.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire %s %s: %w", class, mode, err)
	}
	q := s.q
	now := time.Now()
	q.mu.Lock()
	if s.grant != nil {
		q.mu.Unlock()
		return nil, fmt.Errorf("acquire %s %s: %w", class, mode, ErrReentrant)
	}
	if !s.validLocked() {
		q.metrics.of(class).Stale++
		q.mu.Unlock()
		return nil, s.staleError(class, mode)
	}
	g := &Grant{sess: s, class: class, mode: mode, asked: now, decided: make(chan struct{})}
	g.fgAtAsk = q.lanes[q.laneOf(g)].fgGranted
	s.grant = g
	line := q.line(class)
	*line = append(*line, g)
	q.scheduleLocked(now)
	q.mu.Unlock()

	select {
	case <-g.decided:
		if g.err != nil {
			return nil, g.err
		}
		if ctx.Err() == nil {
			return g, nil
		}
	case <-ctx.Done():
	}
	q.mu.Lock()
	q.abandonLocked(g, time.Now())
	q.mu.Unlock()
	return nil, fmt.Errorf("acquire %s %s: %w", class, mode, ctx.Err())
}

// abandonLocked takes back a request whose context ended: out of the line if it still
// waits, out of the holders if it was granted in the same instant.
func (q *Queue) abandonLocked(g *Grant, now time.Time) {
	switch g.state {
	case waiting:
		q.dropLocked(g, nil)
		q.scheduleLocked(now)
	case held:
		q.freeLocked(g, now)
	case done:
		return // refused by a fence just before; nothing to give back
	}
	q.metrics.of(g.class).Cancelled++
}

// Release gives back a grant this session holds and records its metrics. Releasing a grant
// twice fails with ErrReleased; releasing a grant issued to another session, or nil, fails
// with ErrNotHolder and changes nothing.
func (s *Session) Release(g *Grant) error {
	if g == nil || g.sess != s {
		return fmt.Errorf("release grant: %w", ErrNotHolder)
	}
	q := s.q
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if g.state != held {
		return fmt.Errorf("release %s %s grant: %w", g.class, g.mode, ErrReleased)
	}
	q.metrics.record(Sample{Class: g.class, Mode: g.mode, Wait: g.Wait(), Hold: now.Sub(g.granted)})
	q.freeLocked(g, now)
	return nil
}
