package agent

import (
	"context"
	"fmt"

	"walletsync/brc40"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// grantedChunkStore is a wallet the agent holds open, as a brc40.ChunkStore whose every
// call runs under a background grant of the wallet's access queue: a read grant for the
// calls that only read (MakeAvailable, GetSyncChunk), a write grant for those that may
// write (FindOrInsertUser, FindOrInsertSyncState, ProcessSyncChunk, SetActive). One call is
// one grant, released when the call returns, so syncer.RunChunks takes one grant per chunk
// and a foreground request that waits meanwhile goes before the next chunk.
//
// It is how a BRC-40 session with a storage server touches the agent's wallet: the push
// (storageServerJob) gives it to RunChunks as the producer, a pull (a restore from a storage
// server) as the consumer; do not also set ChunkOptions.Grants with the same session, which
// holds one grant at a time (scheduler.ErrReentrant). RunChunks calls each store one call at
// a time, which is what one session allows.
//
// RunChunks sends a merge under a context without cancellation (a merge, once sent, is
// waited for); the wait for the merge's write grant still ends with stop, the session's
// own context, since nothing was sent yet: the call then fails with stop's error, which
// RunChunks reports as cancelled.
type grantedChunkStore struct {
	store  brc40.ChunkStore
	grants *scheduler.Session
	// stop is the context of the session the store serves: it ends every wait for a grant,
	// including those of calls made under a context without cancellation.
	stop context.Context
}

var _ brc40.ChunkStore = (*grantedChunkStore)(nil)

// newGrantedChunkStore returns store behind background grants of grants, for the BRC-40
// session that runs under ctx.
func newGrantedChunkStore(ctx context.Context, store brc40.ChunkStore, grants *scheduler.Session) *grantedChunkStore {
	return &grantedChunkStore{store: store, grants: grants, stop: ctx}
}

// chunkStore returns the wallet as a brc40.ChunkStore for a BRC-40 session (RunChunks)
// with a storage server that runs under ctx, every call under a background grant of the
// wallet's queue (see grantedChunkStore), for destination (a name for the queue's fencing
// and metrics, e.g. "storage server "+id).
func (w *walletHandle) chunkStore(ctx context.Context, identity, destination string) *grantedChunkStore {
	return newGrantedChunkStore(ctx, w.store, w.queue.NewSession(identity, destination))
}

// underGrant runs call under a background grant of mode from g's session.
func underGrant[T any](ctx context.Context, g *grantedChunkStore, mode scheduler.Mode, call func(context.Context) (T, error)) (T, error) {
	var zero T
	wait, release := context.WithCancel(ctx)
	defer release()
	stopWait := context.AfterFunc(g.stop, release)
	grant, err := g.grants.Acquire(wait, scheduler.Background, mode)
	stopWait()
	if err != nil {
		if cause := g.stop.Err(); cause != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return zero, fmt.Errorf("wait for the wallet's %s grant: %w", mode, err)
	}
	defer g.grants.Release(grant)
	if mode == scheduler.Write && !g.grants.Valid() {
		return zero, fmt.Errorf("write to the wallet: %w", wallet.ErrStaleSession)
	}
	return call(ctx)
}

// MakeAvailable reads the wallet's settings under a read grant.
func (g *grantedChunkStore) MakeAvailable(ctx context.Context) (wallet.Settings, error) {
	return underGrant(ctx, g, scheduler.Read, g.store.MakeAvailable)
}

// GetSyncChunk reads one chunk under a read grant.
func (g *grantedChunkStore) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	return underGrant(ctx, g, scheduler.Read, func(ctx context.Context) (brc40.SyncChunk, error) {
		return g.store.GetSyncChunk(ctx, args)
	})
}

// FindOrInsertUser finds or makes the user under a write grant.
func (g *grantedChunkStore) FindOrInsertUser(ctx context.Context, identityKey string) (brc40.SyncUser, error) {
	return underGrant(ctx, g, scheduler.Write, func(ctx context.Context) (brc40.SyncUser, error) {
		return g.store.FindOrInsertUser(ctx, identityKey)
	})
}

// FindOrInsertSyncState finds or makes the sync state under a write grant.
func (g *grantedChunkStore) FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (brc40.SyncState, error) {
	return underGrant(ctx, g, scheduler.Write, func(ctx context.Context) (brc40.SyncState, error) {
		return g.store.FindOrInsertSyncState(ctx, identityKey, producerSIK, producerName)
	})
}

// ProcessSyncChunk merges one chunk under a write grant.
func (g *grantedChunkStore) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	return underGrant(ctx, g, scheduler.Write, func(ctx context.Context) (brc40.ProcessSyncChunkResult, error) {
		return g.store.ProcessSyncChunk(ctx, args, chunk)
	})
}

// SetActive writes the user's active store under a write grant.
func (g *grantedChunkStore) SetActive(ctx context.Context, identityKey, storageIdentityKey string) error {
	_, err := underGrant(ctx, g, scheduler.Write, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.SetActive(ctx, identityKey, storageIdentityKey)
	})
	return err
}
