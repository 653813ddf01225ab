package localstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"walletsync/brc40"
	"walletsync/wallet"
)

// BRC-40 compatibility: the producer (GetSyncChunk) and the consumer (ProcessSyncChunk) of
// the since/offset protocol that @bsv/wallet-toolbox 2.1.26 peers speak, with the consumer's
// state in the toolbox's own sync_states table, kept exactly as the toolbox keeps it, so that
// a toolbox peer and walletsync can take turns on the same files. walletsync's own page
// sessions (Commit, Snapshot) are the faster path between walletsync stores; this one exists
// for peers that speak only BRC-40.

// GetSyncChunk is the toolbox's getSyncChunk: the next chunk of one user's rows after
// args.Since and args.Offsets, within args.MaxItems and args.MaxRoughSize.
//
//   - The user (looked up by args.IdentityKey; wallet.ErrNotFound when missing) is included
//     when args.Since is nil or its updated_at is strictly later than Since.
//   - The entities are taken in Entities order, one per offset. A row matches when its
//     updated_at is at or after Since (inclusive, compared as stored text against Since in
//     ISO form, exactly the comparison the toolbox's SQL makes), or when the row that
//     brings it into the user's scope does (see sinceFilter: the toolbox lacks that part),
//     scoped to the user as BRC-40 scopes each table (a proof also through the request
//     of a user's transaction, see scopeFilter); the first Offset matches are skipped.
//   - Rows are added until the entity is exhausted, MaxItems rows are in the chunk, or the
//     running sum of brc40.RowJSONSize exceeds MaxRoughSize; the row that crosses the limit
//     is included and nothing follows it. An entity that was started is present in the chunk,
//     possibly empty; the entities after a limit are absent.
//
// Rows come in primary-key order (rowid order for the three tables without one). The
// toolbox's queries have no ORDER BY: SQLite walks most tables in rowid order too, but
// outputs and certificates in the order of one of their (userId, ...) indexes. Offsets stay
// consistent either way, because only the producer interprets them.
//
// A row goes out as stored. The toolbox's findTransactions and findOutputs back-fill a NULL
// transactions.rawTx from the proof (or a live proof request) with the same txid, and a
// lockingScript whose length is not scriptLength from that raw transaction, so a toolbox
// producer sends bytes its own row does not hold. walletsync does not invent them: the
// consumer gets the producer's row, and the size accounting counts that row.
//
// The chunk is read in one read transaction, so its pages see one snapshot of the store.
// It refuses args that fail Validate and a request naming another producer than this store
// (FromStorageIdentityKey must be this store's storageIdentityKey; the toolbox echoes any).
func (s *Store) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	if err := args.Validate(); err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("get sync chunk: %w", err)
	}
	tx, err := s.readDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("get sync chunk: %w", classify(err))
	}
	defer tx.Rollback()
	p := &chunkProducer{ctx: ctx, tx: tx, args: args}
	chunk, err := p.produce()
	if err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("get sync chunk: %w", err)
	}
	return chunk, nil
}

// chunkProducer carries one GetSyncChunk's read transaction.
type chunkProducer struct {
	ctx  context.Context
	tx   *sql.Tx
	args brc40.RequestSyncChunkArgs
}

func (p *chunkProducer) produce() (brc40.SyncChunk, error) {
	if err := checkStorage(p.ctx, p.tx, "producer", p.args.FromStorageIdentityKey); err != nil {
		return brc40.SyncChunk{}, err
	}
	users, err := queryRows(p.ctx, p.tx, wallet.Users, "SELECT "+selectColumns(wallet.Users)+` FROM users AS t WHERE t.identityKey = ?`, p.args.IdentityKey)
	if err != nil {
		return brc40.SyncChunk{}, err
	}
	if len(users) == 0 {
		return brc40.SyncChunk{}, fmt.Errorf("identity %s: %w", wallet.ShortKey(p.args.IdentityKey, 16), wallet.ErrNotFound)
	}
	userID := users[0][wallet.Users.Col("userId")].(int64)
	return brc40.ProduceChunk(p.args, users[0], func(t *wallet.Table, offset, limit int64) ([]wallet.Row, error) {
		return p.entityPage(t, userID, offset, limit)
	})
}

// entityPage reads one page of t's rows for the chunk by LIMIT/OFFSET, in rowid order.
// BRC-40's offsets cost O(offset) in SQLite; they stay correct because every page of a
// chunk reads the same snapshot.
func (p *chunkProducer) entityPage(t *wallet.Table, userID, offset, limit int64) ([]wallet.Row, error) {
	from, where, args := scopeFilter(t, userID)
	if p.args.Since != nil {
		w, a := sinceFilter(t, userID, wallet.FormatTime(*p.args.Since))
		where += " AND " + w
		args = append(args, a...)
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY t.rowid LIMIT ? OFFSET ?", selectColumns(t), from, where)
	return queryRows(p.ctx, p.tx, t, q, append(args, limit, offset)...)
}

// sinceFilter is the condition for a row of t to go out in a chunk after since: its own
// updated_at at or after since, or, for the rows BRC-40 scopes through another row, that
// row's (the links of an incremental read, see link). The toolbox's producer has only the
// first: a proof it recorded before the transaction pointed at it, and skipped then as no
// transaction of the user's, carries an updated_at older than the chunk that brings the
// link, and never goes out; walletsync's goes out with its transaction. A toolbox consumer
// merges the extra rows like any repeat (proofs never change, requests merge their notes).
// The times are compared as stored text against ISO text, the comparison the toolbox's knex
// query makes, so that both producers match the same rows whatever form a time is in.
func sinceFilter(t *wallet.Table, userID int64, since string) (string, []any) {
	switch t {
	case wallet.ProvenTxs:
		return `(t.updated_at >= ?
			OR EXISTS (SELECT 1 FROM transactions x WHERE x.provenTxId = t.provenTxId AND x.userId = ? AND x.updated_at >= ?)
			OR EXISTS (SELECT 1 FROM proven_tx_reqs r CROSS JOIN transactions x ON x.txid = r.txid
				WHERE r.txid = t.txid AND r.provenTxId = t.provenTxId AND x.userId = ? AND (r.updated_at >= ? OR x.updated_at >= ?)))`,
			[]any{since, userID, since, userID, since, since}
	case wallet.ProvenTxReqs:
		return "(t.updated_at >= ? OR EXISTS (SELECT 1 FROM transactions x WHERE x.txid = t.txid AND x.userId = ? AND x.updated_at >= ?))",
			[]any{since, userID, since}
	case wallet.TxLabelsMap, wallet.OutputTagsMap:
		return "(t.updated_at >= ? OR s.updated_at >= ?)", []any{since, since} // s: the label or tag (scopeFilter)
	}
	return "t.updated_at >= ?", []any{since}
}

// ProcessSyncChunk is the toolbox's processSyncChunk: it merges a chunk that the producer
// args.FromStorageIdentityKey sent for args into this store and advances the state that
// FindOrInsertSyncState made for that producer (wallet.ErrNotFound when there is none; the
// user is never created here).
//
// The user row, when present, merges first; then each entity in Entities order, every row
// through the same BRC-40 merge as walletsync's page commits (natural keys, strictly newer
// wins, the proof-request rule), with the zero wallet.ActivePolicy: the incoming
// activeStorage wins only with a strictly newer user row, BRC-40's own rule. Producer ids
// are mapped through the sync map's id maps; a producer id that would map to a second local
// id fails with a *wallet.IDMapConflictError.
//
// The state moves exactly as the toolbox moves it: each entity's maxUpdated_at rises to its
// rows' latest updated_at, its count grows by the rows received (the next offset); when the
// chunk is complete (all 12 arrays present and empty) When becomes the result's
// MaxUpdatedAt and every count resets to 0. The result's MaxUpdatedAt is the latest of every
// entity's maxUpdated_at and, when the user row changed, its updated_at.
//
// Unlike the toolbox, which writes as it goes, the rows and the state commit in one
// transaction: a failure leaves neither half a chunk nor a state that disagrees with the
// rows, and the toolbox's own retry (find the half-written rows again by natural key) ends
// in the same state. The stored errorLocal/errorOther texts are kept as they are (the
// toolbox rewrites them keeping only code, description and stack; its sync loop never sets
// them).
//
// It refuses, before writing anything, a request that fails Validate, names another
// consumer than this store, or does not match the chunk (producer, consumer, user), a
// row that Table.Normalize refuses, and args that do not answer the state
// (brc40.SyncState.Answers, wallet.ErrCheckpointConflict): a chunk merged already, which
// the toolbox would merge again and so skip as many rows later. Rows are normalized in
// place. While an import's merge is unfinished it writes nothing
// (*wallet.ImportInProgressError).
func (s *Store) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	if err := brc40.CheckChunk(args, chunk); err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("process sync chunk: %w", err)
	}
	var res brc40.ProcessSyncChunkResult
	err := s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		if err := checkStorage(ctx, tx, "consumer", args.ToStorageIdentityKey); err != nil {
			return err
		}
		userID, err := lookupUser(ctx, tx, args.IdentityKey)
		if err != nil {
			return err
		}
		states, err := readSyncStates(ctx, tx, "userId = ? AND storageIdentityKey = ?", userID, args.FromStorageIdentityKey)
		if err != nil {
			return err
		}
		st, err := brc40.OneSyncState(states, args.FromStorageIdentityKey)
		if err != nil {
			return err
		}
		if err := st.Answers(args); err != nil {
			return err // merged already, or the state moved on: merging it again would skip rows
		}
		if res, err = mergeChunk(ctx, tx, userID, &st, chunk); err != nil {
			return err
		}
		st.UpdatedAt = wallet.Now()
		if err := saveSyncState(ctx, tx, st); err != nil {
			return err
		}
		s.hook(HookRowsWritten)
		return nil
	})
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("process sync chunk: %w", err)
	}
	s.hook(HookCommitted)
	return res, nil
}

// mergeChunk merges the chunk's rows and moves st as processSyncChunk does.
func mergeChunk(ctx context.Context, tx *sql.Tx, userID int64, st *brc40.SyncState, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	m := newMerger(ctx, tx, userID, st.SyncMap, "")
	defer m.close()
	mergeUser := func(u wallet.Row) (bool, error) {
		before := m.updates
		err := m.merge(wallet.Users, u)
		return m.updates > before, err
	}
	res, err := brc40.ConsumeChunk(st, chunk, mergeUser, m.mergePage)
	res.Inserts, res.Updates = m.inserts, m.updates
	return res, err
}

// FindOrInsertSyncState returns the consumer state for the user identityKey and the
// producer (producerSIK, producerName), creating both the way the toolbox's
// EntitySyncState.fromStorage does before each chunk: findOrInsertUser (a missing user is
// created with its default basket, see EnsureUser), then findOrInsertSyncStateAuth, whose
// new row has status "unknown", init false, a random 12-byte base64 refNum, a fresh sync map
// (brc40.NewSyncMap), no when, and created_at = updated_at = now. The lookup key includes
// the producer's name, as the toolbox's does; a second name for the same producer makes a
// second row, which ProcessSyncChunk then refuses (wallet.ErrAmbiguousSyncState), as the
// toolbox does.
func (s *Store) FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (brc40.SyncState, error) {
	st, _, err := s.FindOrInsertSyncStateAuth(ctx, identityKey, producerSIK, producerName)
	return st, err
}

// FindOrInsertSyncStateAuth is FindOrInsertSyncState that also reports whether the state
// was made by this call, as the toolbox's findOrInsertSyncStateAuth answers {syncState,
// isNew}.
func (s *Store) FindOrInsertSyncStateAuth(ctx context.Context, identityKey, producerSIK, producerName string) (st brc40.SyncState, isNew bool, err error) {
	if producerSIK == "" || producerName == "" {
		return brc40.SyncState{}, false, fmt.Errorf("find or insert sync state: producer key and name are required: %w", wallet.ErrInvalidArgument)
	}
	err = s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		userID, _, err := ensureUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		st, isNew, err = findOrInsertSyncState(ctx, tx, userID, producerSIK, producerName)
		return err
	})
	if err != nil {
		return brc40.SyncState{}, false, fmt.Errorf("find or insert sync state: %w", err)
	}
	return st, isNew, nil
}

// findOrInsertSyncState is the toolbox's findOrInsertSyncStateAuth for a user that exists;
// isNew reports that it made the row.
func findOrInsertSyncState(ctx context.Context, tx *sql.Tx, userID int64, producerSIK, producerName string) (st brc40.SyncState, isNew bool, err error) {
	states, err := readSyncStates(ctx, tx, "userId = ? AND storageIdentityKey = ? AND storageName = ?", userID, producerSIK, producerName)
	if err != nil {
		return brc40.SyncState{}, false, err
	}
	switch len(states) {
	case 0:
	case 1:
		return states[0], false, nil
	default:
		return brc40.SyncState{}, false, fmt.Errorf("producer %s named %q: %w", wallet.ShortKey(producerSIK, 16), producerName, wallet.ErrAmbiguousSyncState)
	}
	if st, err = brc40.NewSyncState(userID, producerSIK, producerName, wallet.Now()); err != nil {
		return brc40.SyncState{}, false, err
	}
	row, err := st.Row()
	if err != nil {
		return brc40.SyncState{}, false, err
	}
	w := newRowWriter(tx)
	defer w.close()
	st.SyncStateID, err = w.insert(ctx, wallet.SyncStates, row, false)
	return st, true, err
}

// readSyncStates reads up to two sync_states rows matching where: enough to tell one from
// several.
func readSyncStates(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]brc40.SyncState, error) {
	rows, err := queryRows(ctx, tx, wallet.SyncStates, "SELECT "+selectColumns(wallet.SyncStates)+" FROM sync_states AS t WHERE "+where+" ORDER BY syncStateId LIMIT 2", args...)
	if err != nil {
		return nil, err
	}
	out := make([]brc40.SyncState, len(rows))
	for i, r := range rows {
		if out[i], err = brc40.SyncStateFromRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// saveSyncState writes what processSyncChunk changes: the sync map, when and updated_at.
func saveSyncState(ctx context.Context, tx *sql.Tx, st brc40.SyncState) error {
	syncMap, err := json.Marshal(st.SyncMap)
	if err != nil {
		return err
	}
	var when any
	if st.When != nil {
		when = wallet.FormatTime(*st.When)
	}
	_, err = tx.ExecContext(ctx, `UPDATE sync_states SET updated_at = ?, syncMap = ?, "when" = ? WHERE syncStateId = ?`,
		wallet.FormatTime(st.UpdatedAt), string(syncMap), when, st.SyncStateID)
	if err != nil {
		return fmt.Errorf("save sync state: %w", classify(err))
	}
	return nil
}

// checkStorage refuses a request that names another store than this one in role.
func checkStorage(ctx context.Context, tx *sql.Tx, role, key string) error {
	var sik string
	if err := tx.QueryRowContext(ctx, "SELECT storageIdentityKey FROM settings LIMIT 1").Scan(&sik); err != nil {
		return fmt.Errorf("read settings: %w", classify(err))
	}
	if key != sik {
		return fmt.Errorf("the request names %s as %s, this store is %s: %w", wallet.ShortKey(key, 16), role, wallet.ShortKey(sik, 16), wallet.ErrInvalidArgument)
	}
	return nil
}

func selectColumns(t *wallet.Table) string {
	return joinQuoted("t.", t.ColumnNames())
}

// queryRows runs a query whose result columns are t's, in order, and returns the rows
// normalized.
func queryRows(ctx context.Context, tx *sql.Tx, t *wallet.Table, q string, args ...any) ([]wallet.Row, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	return scanRows(rows, t)
}
