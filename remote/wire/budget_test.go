package wire

import (
	"encoding/binary"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/semaphore"

	"walletsync/testkit/tier"
	"walletsync/wallet"
)

// bombFrame is a frame of 2 KB that declares (and decompresses to) n bytes: a head, no
// rows, then zeros, which the decoder refuses only once they are decompressed.
func bombFrame(t testing.TB, n int) []byte {
	t.Helper()
	head := `{"table":"transactions"}`
	raw := binary.AppendUvarint(nil, uint64(len(head)))
	raw = append(raw, head...)
	raw = binary.AppendUvarint(raw, 0)
	raw = append(raw, make([]byte, n-len(raw))...)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(raw, binary.AppendUvarint(append([]byte(nil), frameMagic...), uint64(len(raw))))
}

// budgetCodec is a server's codec with a frame budget of budget bytes.
func budgetCodec(budget int64, wait time.Duration) *codec {
	c := newCodec()
	c.frames = &MemoryBudget{sem: semaphore.NewWeighted(budget), size: budget, wait: wait}
	return c
}

// TestCodec_FrameBudgetRefusesBusy: a frame whose declared length does not fit the budget
// left waits, then is refused with a *wallet.BusyError (503 and Retry-After on the wire)
// without being decompressed; once the budget is free the same frame is decoded.
func TestCodec_FrameBudgetRefusesBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := budgetCodec(MaxFrameBytes, time.Second)
		head, rows := sampleRows()
		frame, err := c.encode(EncodingZstd, head, rows)
		if err != nil {
			t.Fatal(err)
		}
		held, err := c.frames.Charge(t.Context(), MaxFrameBytes, "frames") // frames in flight
		if err != nil {
			t.Fatal(err)
		}
		var got pageHead
		_, err = c.decode(t.Context(), EncodingZstd, frame, &got)
		var busy *wallet.BusyError
		if !errors.Is(err, wallet.ErrServerBusy) || !errors.As(err, &busy) || busy.RetryAfter <= 0 {
			t.Fatalf("decode with the budget full = %v; want a *wallet.BusyError with a retry hint", err)
		}
		if we, status := toWire(err); status != 503 || we.Code != "server_busy" || we.RetryAfterMs <= 0 {
			t.Fatalf("the wire answers %d %+v; want 503 server_busy with a retry hint", status, we)
		}
		held()
		if _, err := c.decode(t.Context(), EncodingZstd, frame, &got); err != nil || got != head {
			t.Fatalf("decode with the budget free = %+v, %v", got, err)
		}
	})
}

// TestCodec_FrameBombsStayInTheBudget: 8 concurrent frames of 2 KB that each decompress to
// 64 MiB take the server's heap to about 8 x 64 MiB without a budget; with a budget of one
// frame they take their turns, and the peak heap stays within twice the budget (the
// budget, and a turn's garbage the collector has not yet reclaimed) plus 64 MiB.
func TestCodec_FrameBombsStayInTheBudget(t *testing.T) {
	// A heap measure: not under the race detector, whose shadow memory and allocations
	// change what the collector sees (the race stage runs -short).
	tier.Full(t, "a heap measured without the race detector")
	const budget, bombs = MaxFrameBytes, 8
	frame := bombFrame(t, MaxFrameBytes)
	c := budgetCodec(budget, time.Hour) // every bomb gets its turn: the bound is memory, not refusals
	// The collector's own pace decides how much of the turns before lingers as garbage (at
	// the default GOGC, up to as much again as is live): collect eagerly, so that the peak
	// measures what the budget lets live at once, not when the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, bombs)
	for i := range bombs {
		wg.Go(func() {
			var h pageHead
			_, errs[i] = c.decode(t.Context(), EncodingZstd, frame, &h)
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, err := range errs {
		if !errors.Is(err, ErrBadFrame) {
			t.Fatalf("bomb %d: %v, want ErrBadFrame (the zeros after the last row)", i, err)
		}
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("peak heap grew by %d MiB for %d bombs of %d MiB", grew>>20, bombs, MaxFrameBytes>>20)
	if limit := int64(2*budget + 64<<20); grew > limit {
		t.Fatalf("peak heap grew by %d MiB, over %d MiB for a %d MiB budget", grew>>20, limit>>20, budget>>20)
	}
}
