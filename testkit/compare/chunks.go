package compare

import (
	"context"

	"walletsync/brc40"
	"walletsync/wallet"
)

// ChunkReader is a store read through BRC-40, as a toolbox client pulls from it: its
// settings and its chunks. localstore.Store and pgstore.Store are both.
type ChunkReader interface {
	brc40.ChunkProducer
	Settings(ctx context.Context) (wallet.Settings, error)
}

// ReadChunks is Read through store's BRC-40 producer instead of a view: it asks every chunk
// of the user from the start (a reader of no durable state of its own, as a fresh
// consumer would) and returns the canonical form of the rows they carry. It is how a store
// without a wallet.Source (or whose Source is what a test checks) is compared.
func ReadChunks(ctx context.Context, store ChunkReader, identityKey string, opts Options) (Wallet, error) {
	settings, err := store.Settings(ctx)
	if err != nil {
		return nil, err
	}
	st := brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}
	raw := map[wallet.TableName][]wallet.Row{}
	for done := false; !done; {
		chunk, err := store.GetSyncChunk(ctx, st.MakeRequestSyncChunkArgs(identityKey, "reader", 0, 0))
		if err != nil {
			return nil, err
		}
		if chunk.User != nil {
			raw[wallet.TableUsers] = []wallet.Row{chunk.User}
		}
		for name, rows := range chunk.Rows {
			raw[name] = append(raw[name], rows...)
		}
		// The state moves as a consumer's would; nothing is merged anywhere.
		res, err := brc40.ConsumeChunk(&st, chunk, func(wallet.Row) (bool, error) { return false, nil }, func(*wallet.Table, []wallet.Row) error { return nil })
		if err != nil {
			return nil, err
		}
		done = res.Done
	}
	return FromRows(raw, opts)
}
