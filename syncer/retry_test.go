package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"walletsync/brc40"
	"walletsync/syncer"
	"walletsync/wallet"
)

// downStore is a store that never answers: every call fails as a refused connection does.
// Only MakeAvailable is ever called on it (the embedded nil interface panics otherwise).
type downStore struct {
	brc40.ChunkStore
	calls int
}

func (d *downStore) MakeAvailable(context.Context) (wallet.Settings, error) {
	d.calls++
	return wallet.Settings{}, fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused: %w", wallet.ErrUnavailable)
}

// TestRunChunks_GiveUpBoundsAnUnreachableStore: a store that never answers is retried with
// doubling waits until GiveUp has passed since its first failure (the last wait cut to end
// there, whatever Retries would allow), each wait announced to OnRetry, and the session
// fails with an *UnreachableError that says the bound. Time is synctest's fake clock.
func TestRunChunks_GiveUpBoundsAnUnreachableStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := &downStore{}
		var retries []syncer.Retry
		start := time.Now()
		_, err := syncer.RunChunks(t.Context(), down, down, "02aa", syncer.ChunkOptions{
			Active: wallet.KeepSourceActive, GiveUp: 10 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 4 * time.Second,
			OnRetry: func(r syncer.Retry) { retries = append(retries, r) }})
		ue, ok := errors.AsType[*syncer.UnreachableError](err)
		if !ok || !errors.Is(err, wallet.ErrUnavailable) || ue.After != 10*time.Second {
			t.Fatalf("err = %v; want an *UnreachableError after 10s matching wallet.ErrUnavailable", err)
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("the session tried for %s of fake time, want the 10s bound", took)
		}
		// 0.1+0.2+0.4+0.8+1.6+3.2 = 6.3 s, then 3.7 s (cut from 4 s) to reach the bound.
		want := []time.Duration{100, 200, 400, 800, 1600, 3200, 3700}
		if len(retries) != len(want) || down.calls != len(want)+1 || ue.Attempts != len(want)+1 {
			t.Fatalf("%d retries announced, %d calls, %d attempts; want %d, %d, %d", len(retries), down.calls, ue.Attempts, len(want), len(want)+1, len(want)+1)
		}
		for i, r := range retries {
			if r.Attempt != i+1 || r.Wait != want[i]*time.Millisecond || !errors.Is(r.Err, wallet.ErrUnavailable) {
				t.Errorf("retry %d = %+v; want attempt %d, wait %dms", i, r, i+1, want[i])
			}
		}
	})
}
