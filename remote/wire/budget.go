package wire

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"walletsync/wallet"
)

// MemoryBudget is one server's budget of request memory in flight: the bodies of requests
// being served (charged by walletsync serve before the body is read) and the decompressed
// frames of the paged wire (charged by a Handler before a frame is decompressed). Every
// charge is made before the bytes are allocated; one that does not fit within the wait
// is refused with a *wallet.BusyError (503 with Retry-After), so that the bytes held at
// once never exceed the budget whatever the clients send. A MemoryBudget is safe for
// concurrent use.
type MemoryBudget struct {
	sem   *semaphore.Weighted
	size  int64
	wait  time.Duration
	inUse atomic.Int64
	busy  atomic.Int64
}

// MinMemoryBudget is the smallest budget: one largest paged-wire request, its body and its
// decompressed frame, must always fit.
const MinMemoryBudget = MaxBodyBytes + MaxFrameBytes

// DefaultMemoryBudget is 384 MiB, sized for a small VM of 1 GiB: three of the largest
// paged-wire requests at once (each a 65 MiB body and its 64 MiB frame), or twelve toolbox
// bodies of 30 MB, leave some 600 MiB for the Go runtime, the store's cache and the rows
// frames decode into (about twice a frame's bytes while a page is merged).
const DefaultMemoryBudget = 384 << 20

// DefaultMemoryWait is how long a charge waits for the budget before it is refused busy.
const DefaultMemoryWait = time.Second

// NewMemoryBudget returns a budget of size bytes (at least MinMemoryBudget; 0 takes
// DefaultMemoryBudget) whose charges wait up to wait (0 takes DefaultMemoryWait).
func NewMemoryBudget(size int64, wait time.Duration) *MemoryBudget {
	if size <= 0 {
		size = DefaultMemoryBudget
	}
	size = max(size, MinMemoryBudget)
	if wait <= 0 {
		wait = DefaultMemoryWait
	}
	return &MemoryBudget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// Charge takes n bytes of the budget for what (named in the refusal), waiting up to the
// budget's wait, and returns the function that gives them back (call it once). A charge
// larger than the whole budget, or one still not met after the wait, is a
// *wallet.BusyError with a one-second retry hint; the caller's cancellation is its
// context's error.
func (b *MemoryBudget) Charge(ctx context.Context, n int64, what string) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	busy := &wallet.BusyError{Reason: what + " in flight fill the server's memory budget", RetryAfter: time.Second}
	if n > b.size {
		b.busy.Add(1)
		return nil, busy
	}
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if err := b.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for memory: %w", ctx.Err())
		}
		b.busy.Add(1)
		return nil, busy
	}
	b.inUse.Add(n)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.inUse.Add(-n)
			b.sem.Release(n)
		}
	}, nil
}

// Size returns the budget's bytes.
func (b *MemoryBudget) Size() int64 { return b.size }

// InUse returns the bytes charged now.
func (b *MemoryBudget) InUse() int64 { return b.inUse.Load() }

// Refused returns how many charges were refused busy since the budget was made.
func (b *MemoryBudget) Refused() int64 { return b.busy.Load() }
