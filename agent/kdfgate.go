package agent

import (
	"context"
)

// deriveGate is the agent's portable.KDFGate: one Argon2id key derivation at a time, across
// every export, backup, verification, drill and import task. A derivation at the defaults
// takes 128 MiB and a core for about 2 s, and one at the import limits 256 MiB for about
// 9 s; a person who starts several imports of hostile files (or a schedule that lines up
// backups of several identities) then costs one derivation's memory, not one per task. A
// task that finds the slot taken says so ("waiting") in its detail and log until its turn,
// and stops waiting when it is cancelled.
func (a *Agent) deriveGate(ctx context.Context) (func(), error) {
	release := func() { <-a.kdf }
	select {
	case a.kdf <- struct{}{}:
		return release, nil
	default:
	}
	h := taskOf(ctx)
	if h != nil {
		h.SetDetail("waiting: another task is deriving a key (one at a time)")
		h.Logf("waiting for another task's key derivation: Argon2id runs one at a time")
	}
	select {
	case a.kdf <- struct{}{}:
		if h != nil {
			h.SetDetail("deriving the key")
			h.Logf("deriving the key")
		}
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
