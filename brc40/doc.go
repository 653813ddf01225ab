// Package brc40 is BRC-40, the wallet-toolbox's storage sync, as @bsv/wallet-toolbox 2.1.26
// runs it, minus the storage: the messages (RequestSyncChunkArgs, SyncChunk,
// ProcessSyncChunkResult) and their toolbox-exact JSON; the state a consumer keeps per
// producer (SyncState with its SyncMap, the sync_states row); the contract both ends of a
// sync meet (ChunkProducer, ChunkConsumer, ChunkStore); the dialect-free halves of the
// producer (ProduceChunk) and the consumer (CheckChunk, ConsumeChunk); and the merge rules
// (MergePage, Localize, MergeNewer, MergeUserRow, MergeProofRequest, the id maps, the rows a
// new user starts with).
//
// localstore (SQLite) and pgstore (PostgreSQL) supply only their queries and writes and
// apply these rules to BRC-40 chunks and to walletsync's own page commits alike, so that the
// two dialects answer a peer and merge a page the same way. remote/toolbox carries the
// messages over the toolbox's JSON-RPC, syncer runs the chunk loop, portable and agent
// drive it.
//
// The package imports only wallet, for the vocabulary it speaks in (tables, rows, the
// JavaScript JSON primitives, the sync contract and the typed errors, ErrBadSyncMessage and
// ErrIDMapConflict among them), and performs no I/O.
package brc40
