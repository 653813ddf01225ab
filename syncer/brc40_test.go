package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// faultyConsumer wraps a store as a consumer that misbehaves as a remote one can.
type faultyConsumer struct {
	*localstore.Store
	// loseAnswerAt: the nth merge (from 1) is applied and then reported as unavailable, as
	// when the server's answer is lost.
	loseAnswerAt int
	// maxRows: a merge of more rows is refused as too large, before anything is applied.
	maxRows int
	// merges counts the merges applied.
	merges, refused int
}

func (f *faultyConsumer) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	rows := 0
	for _, r := range chunk.Rows {
		rows += len(r)
	}
	if f.maxRows > 0 && rows > f.maxRows {
		f.refused++
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("%d rows: %w", rows, wallet.ErrChunkTooLarge)
	}
	res, err := f.Store.ProcessSyncChunk(ctx, args, chunk)
	if err != nil {
		return res, err
	}
	f.merges++
	if f.merges == f.loseAnswerAt {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("connection reset: %w", wallet.ErrUnavailable)
	}
	return res, nil
}

func TestRunChunks_LostAnswerIsNotSentAgain(t *testing.T) {
	t.Parallel()
	src, id := seeded(t, localstore.FixtureSmall, 3)
	dst := &faultyConsumer{Store: newStore(t, wallet.ChainTest), loseAnswerAt: 3}
	res, err := syncer.RunChunks(t.Context(), src, dst, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 7, Backoff: 1, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Every merge the consumer applied moved the state on: the lost one was not sent again,
	// and the rows still all arrived.
	if res.Retries != 1 || res.Pages != int64(dst.merges-1) {
		t.Fatalf("result %+v after %d merges", res.Counters, dst.merges)
	}
	mustEqual(t, src, dst.Store, id)
}

func TestRunChunks_TooLargeChunkIsHalved(t *testing.T) {
	t.Parallel()
	src, id := seeded(t, localstore.FixtureSmall, 3)
	dst := &faultyConsumer{Store: newStore(t, wallet.ChainTest), maxRows: 4}
	res, err := syncer.RunChunks(t.Context(), src, dst, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 16, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	if dst.refused == 0 || res.Pages != int64(dst.merges) {
		t.Fatalf("result %+v, %d refused, %d merges", res.Counters, dst.refused, dst.merges)
	}
	mustEqual(t, src, dst.Store, id)
}

func TestRunChunks_CancelStopsBetweenChunksAndResumes(t *testing.T) {
	t.Parallel()
	src, id := seeded(t, localstore.FixtureSmall, 3)
	dst := newStore(t, wallet.ChainTest)
	ctx, cancel := context.WithCancel(t.Context())
	committed := 0
	res, err := syncer.RunChunks(ctx, src, dst, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 5, Settle: -1,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitting && committed == 2 {
				cancel() // the merge about to start still runs to its end
			}
			if p.State == syncer.StateCommitted {
				committed++
			}
			return nil
		}})
	if !errors.Is(err, context.Canceled) || res.State != syncer.StateCancelled || res.Pages != 3 {
		t.Fatalf("cancelled run: %+v, %v", res, err)
	}
	// The next run starts where the consumer's state says: the rows of the three merged
	// chunks are not sent again.
	again, err := syncer.RunChunks(t.Context(), src, dst, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 5, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rows+res.Rows != int64(rows(t, src, id)) || again.Inserts+res.Inserts < again.Rows+res.Rows-1 {
		t.Fatalf("resumed run %+v after %+v", again.Counters, res.Counters)
	}
	mustEqual(t, src, dst, id)
}

// watchedProducer is a producer that reports each getSyncChunk it is asked.
type watchedProducer struct {
	*localstore.Store
	asked chan brc40.RequestSyncChunkArgs
}

func (w *watchedProducer) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	w.asked <- args
	return w.Store.GetSyncChunk(ctx, args)
}

// checkingConsumer checks that every merge answers the consumer's durable state, and holds
// each merge of an incomplete chunk until the producer was asked for the next one.
type checkingConsumer struct {
	*localstore.Store
	t        *testing.T
	identity string
	from     wallet.Settings
	asked    <-chan brc40.RequestSyncChunkArgs
	seen     int // requests taken from asked
}

func (c *checkingConsumer) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	st, err := c.Store.FindOrInsertSyncState(ctx, c.identity, c.from.StorageIdentityKey, c.from.StorageName)
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, err
	}
	want := st.MakeRequestSyncChunkArgs(c.identity, args.ToStorageIdentityKey, args.MaxRoughSize, args.MaxItems)
	if !reflect.DeepEqual(args, want) {
		c.t.Errorf("merge of %+v, the state asks for %+v", args, want)
	}
	if !chunk.Complete() {
		// The next request starts where this chunk ends, entity by entity.
		next := slices.Clone(args.Offsets)
		for i := range next {
			next[i].Offset += int64(len(chunk.Rows[wallet.Entities[i].Name]))
		}
		for found := false; !found; {
			select {
			case a := <-c.asked:
				c.seen++
				found = slices.Equal(a.Offsets, next)
			case <-time.After(time.Minute):
				c.t.Fatalf("no prefetch of %v during the merge of %v", next, args.Offsets)
			}
		}
	}
	return c.Store.ProcessSyncChunk(ctx, args, chunk)
}

func TestRunChunks_PrefetchesTheNextChunkDuringAMerge(t *testing.T) {
	t.Parallel()
	src, id := seeded(t, localstore.FixtureSmall, 3)
	settings, err := src.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan brc40.RequestSyncChunkArgs, 1000)
	from := &watchedProducer{Store: src, asked: asked}
	to := &checkingConsumer{Store: newStore(t, wallet.ChainTest), t: t, identity: id, from: settings, asked: asked}
	res, err := syncer.RunChunks(t.Context(), from, to, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 7, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, src, to.Store, id)
	// One request per chunk: every prefetch was merged.
	if total := to.seen + len(asked); res.Pages < 3 || int64(total) != res.Pages {
		t.Fatalf("%d requests for %+v", total, res.Counters)
	}
}

func TestRunChunks_PullKeepsTheConsumersActiveStore(t *testing.T) {
	t.Parallel()
	src, id := seeded(t, localstore.FixtureSmall, 3)
	dst := newStore(t, wallet.ChainTest)
	if _, err := syncer.RunChunks(t.Context(), src, dst, id, syncer.ChunkOptions{Active: wallet.KeepDestinationActive, Settle: -1}); err != nil {
		t.Fatal(err)
	}
	u, err := dst.FindOrInsertUser(t.Context(), id)
	settings, _ := dst.Settings(t.Context())
	if err != nil || u.ActiveStorage != settings.StorageIdentityKey {
		t.Fatalf("pulled user %+v (%v), want the consumer %s active", u, err, settings.StorageIdentityKey)
	}
	// A push the other way finds the source naming another active store that has synced:
	// refused, never switched.
	if err := src.SetActive(t.Context(), id, "03"+fmt.Sprintf("%064x", 1)); err != nil {
		t.Fatal(err)
	}
	_, err = syncer.RunChunks(t.Context(), dst, src, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, Settle: -1})
	if !errors.Is(err, wallet.ErrNotActive) {
		t.Fatalf("push to a store naming another active store: %v", err)
	}
}

func TestRunChunks_RefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []syncer.ChunkOptions{
		{},
		{Active: wallet.KeepSourceActive, MaxItems: 1001},
		{Active: wallet.KeepSourceActive, MaxRoughSize: wallet.MaxPageBytes + 1},
		{Active: wallet.KeepSourceActive, Settle: -2},
	} {
		if err := o.Validate(); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func rows(t *testing.T, s *localstore.Store, id string) int64 {
	t.Helper()
	sum, err := s.Summary(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, tb := range wallet.Entities {
		n += sum.Counts[tb.Name]
	}
	return n
}
