package brc40

import (
	"context"
	"time"

	"walletsync/wallet"
)

// The two ends of a BRC-40 sync, as the toolbox's WalletStorageManager sees its stores: a
// producer answers getSyncChunk, a consumer keeps one sync state per producer and merges
// chunks into it. walletsync's local store and a toolbox StorageServer (through
// remote/toolbox's client) are both, so one loop (syncer.RunChunks) pushes a local wallet to
// a server and pulls it back.

// SyncUser is what the BRC-40 loop reads of a store's users row.
type SyncUser struct {
	UserID      int64
	IdentityKey string
	// ActiveStorage is the storageIdentityKey of the store the user's wallet works on.
	ActiveStorage string
	UpdatedAt     time.Time
	// IsNew is true when FindOrInsertUser created the row (activeStorage naming the store
	// itself, updated_at 1971-01-01, as the toolbox's findOrInsertUser makes it).
	IsNew bool
}

// ChunkProducer is the reader side of BRC-40.
type ChunkProducer interface {
	// GetSyncChunk returns the rows of args.IdentityKey after args.Since and args.Offsets,
	// within args.MaxItems and args.MaxRoughSize (the row that crosses MaxRoughSize is still
	// included). It changes nothing, so it may be called again with the same args.
	GetSyncChunk(ctx context.Context, args RequestSyncChunkArgs) (SyncChunk, error)
}

// ChunkConsumer is the writer side of BRC-40.
type ChunkConsumer interface {
	// FindOrInsertSyncState returns the durable state the consumer keeps for the user and the
	// producer (producerSIK, producerName), creating the user and the state when missing. A
	// repeat finds what the first call made.
	FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (SyncState, error)
	// ProcessSyncChunk merges a chunk answering args and advances the state: each entity's
	// count (the next offset) grows by the rows received, and a complete chunk moves the
	// state's since and resets the counts. It is NOT idempotent: applied twice, the counts
	// grow twice and the next request skips rows. A caller that lost its answer reads the
	// state again (FindOrInsertSyncState) and never sends the chunk blindly.
	ProcessSyncChunk(ctx context.Context, args RequestSyncChunkArgs, chunk SyncChunk) (ProcessSyncChunkResult, error)
}

// ChunkStore is a store that both produces and consumes BRC-40 chunks, with what the
// toolbox's WalletStorageManager asks of every store it manages.
type ChunkStore interface {
	ChunkProducer
	ChunkConsumer
	// MakeAvailable returns the store's settings (its storage identity, name and chain).
	MakeAvailable(ctx context.Context) (wallet.Settings, error)
	// FindOrInsertUser returns the user identityKey, creating it (with the store itself as
	// its active storage and its default basket) when missing.
	FindOrInsertUser(ctx context.Context, identityKey string) (SyncUser, error)
	// SetActive makes the user's activeStorage storageIdentityKey, with updated_at now, so
	// that the next sync carries it to every store as the newer user row.
	SetActive(ctx context.Context, identityKey, storageIdentityKey string) error
}
