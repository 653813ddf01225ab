package portable

import (
	"context"
	"fmt"
)

// KDFGate admits key derivations. It returns once the caller may run Argon2id, with the
// function that lets the next one in, or with ctx's error. The agent passes one that admits
// one derivation at a time, so that any number of tasks cost one derivation's memory and
// cores at once; nil admits every derivation at once.
type KDFGate func(ctx context.Context) (release func(), err error)

// gated runs fn once g admits it.
func gated[T any](ctx context.Context, g KDFGate, fn func() (T, error)) (T, error) {
	if g == nil {
		return fn()
	}
	release, err := g(ctx)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("wait to derive the key: %w", err)
	}
	defer release()
	return fn()
}
