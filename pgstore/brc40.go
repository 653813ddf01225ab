package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/wallet"
)

// GetSyncChunk is the toolbox's getSyncChunk with localstore's semantics
// (brc40.ProduceChunk): the same scope rules, the same since rule (a row's own updated_at at
// or after Since, or that of the row that brings it into the user's scope), the same
// budgets, and rows in the same order, by id (by insertion for the three tables without
// one, as SQLite's rowid orders them). The chunk is read in one REPEATABLE READ
// transaction, so its pages see one snapshot. It refuses args that fail Validate and a
// request naming another producer than this store; a missing user is wallet.ErrNotFound.
func (s *Store) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	if err := args.Validate(); err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("get sync chunk: %w", err)
	}
	var chunk brc40.SyncChunk
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := checkStorage(ctx, tx, "producer", args.FromStorageIdentityKey); err != nil {
			return err
		}
		users, err := queryRows(ctx, tx, wallet.Users, "SELECT "+selectColumns(wallet.Users, "t")+` FROM users AS t WHERE t."identityKey" = $1`, args.IdentityKey)
		if err != nil {
			return err
		}
		if len(users) == 0 {
			return fmt.Errorf("identity %s: %w", wallet.ShortKey(args.IdentityKey, 16), wallet.ErrNotFound)
		}
		userID := users[0][wallet.Users.Col("userId")].(int64)
		chunk, err = brc40.ProduceChunk(args, users[0], func(t *wallet.Table, offset, limit int64) ([]wallet.Row, error) {
			q := &query{}
			from, where := scopeFilter(q, t, userID)
			if args.Since != nil {
				where += " AND " + sinceFilter(q, t, userID, *args.Since)
			}
			sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY t.%s LIMIT %s OFFSET %s", selectColumns(t, "t"), from, where,
				quote(orderColumn(t)), q.add(limit), q.add(offset))
			return queryRows(ctx, tx, t, sql, q.args...)
		})
		return err
	})
	if err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("get sync chunk: %w", classify(err))
	}
	return chunk, nil
}

// orderColumn is the column a producer walks t in: its id, or the insertion order.
func orderColumn(t *wallet.Table) string {
	if t.ID != "" {
		return t.ID
	}
	return rowidColumn
}

// query collects a statement's parameters.
type query struct{ args []any }

// add binds v and returns its placeholder.
func (q *query) add(v any) string {
	q.args = append(q.args, arg(v))
	return fmt.Sprintf("$%d", len(q.args))
}

// scopeFilter is BRC-40's scope of t for one user (see wallet.Scope and localstore's
// scopeFilter, whose rules these are, in PostgreSQL's dialect): the FROM clause, with t as
// the table's alias, and the condition.
func scopeFilter(q *query, t *wallet.Table, userID int64) (from, where string) {
	from = quote(string(t.Name)) + " AS t"
	switch t.Scope {
	case wallet.ScopeProvenTx:
		return from, fmt.Sprintf(`(EXISTS (SELECT 1 FROM transactions x WHERE x."provenTxId" = t."provenTxId" AND x."userId" = %[1]s)
			OR EXISTS (SELECT 1 FROM proven_tx_reqs r JOIN transactions x ON x.txid = r.txid
				WHERE r.txid = t.txid AND r."provenTxId" = t."provenTxId" AND x."userId" = %[1]s))`, q.add(userID))
	case wallet.ScopeProvenTxReq:
		return from, fmt.Sprintf(`EXISTS (SELECT 1 FROM transactions x WHERE x.txid = t.txid AND x."userId" = %s)`, q.add(userID))
	case wallet.ScopeLabelMap:
		return from + ` JOIN tx_labels AS s ON s."txLabelId" = t."txLabelId"`, `s."userId" = ` + q.add(userID)
	case wallet.ScopeTagMap:
		return from + ` JOIN output_tags AS s ON s."outputTagId" = t."outputTagId"`, `s."userId" = ` + q.add(userID)
	default: // ScopeUserID, and ScopeIdentity: the user row itself
		return from, `t."userId" = ` + q.add(userID)
	}
}

// sinceFilter is the condition for a row of t to go out in a chunk after since: its own
// updated_at at or after since, or that of the row that brings it into the user's scope
// (localstore's sinceFilter explains why the toolbox's producer needs the second part).
// Times compare as timestamps, which orders them as the toolbox's ISO text compares.
func sinceFilter(q *query, t *wallet.Table, userID int64, since any) string {
	switch t {
	case wallet.ProvenTxs:
		return fmt.Sprintf(`(t.updated_at >= %[1]s
			OR EXISTS (SELECT 1 FROM transactions x WHERE x."provenTxId" = t."provenTxId" AND x."userId" = %[2]s AND x.updated_at >= %[1]s)
			OR EXISTS (SELECT 1 FROM proven_tx_reqs r JOIN transactions x ON x.txid = r.txid
				WHERE r.txid = t.txid AND r."provenTxId" = t."provenTxId" AND x."userId" = %[2]s AND (r.updated_at >= %[1]s OR x.updated_at >= %[1]s)))`,
			q.add(since), q.add(userID))
	case wallet.ProvenTxReqs:
		return fmt.Sprintf(`(t.updated_at >= %[1]s OR EXISTS (SELECT 1 FROM transactions x WHERE x.txid = t.txid AND x."userId" = %[2]s AND x.updated_at >= %[1]s))`,
			q.add(since), q.add(userID))
	case wallet.TxLabelsMap, wallet.OutputTagsMap:
		return fmt.Sprintf("(t.updated_at >= %[1]s OR s.updated_at >= %[1]s)", q.add(since)) // s: the label or tag (scopeFilter)
	}
	return "t.updated_at >= " + q.add(since)
}

// checkStorage refuses a request that names another store than this one in role.
func checkStorage(ctx context.Context, tx pgx.Tx, role, key string) error {
	var sik string
	if err := tx.QueryRow(ctx, `SELECT "storageIdentityKey" FROM settings`).Scan(&sik); err != nil {
		return fmt.Errorf("read settings: %w", classify(err))
	}
	if key != sik {
		return fmt.Errorf("the request names %s as %s, this store is %s: %w", wallet.ShortKey(key, 16), role, wallet.ShortKey(sik, 16), wallet.ErrInvalidArgument)
	}
	return nil
}

// FindOrInsertSyncStateAuth is the toolbox's findOrInsertSyncStateAuth: the consumer state
// for the user identityKey and the producer (producerSIK, producerName), creating the user
// and the state (brc40.NewSyncState) when missing; isNew reports that the state is new.
// The lookup key includes the producer's name, as the toolbox's does; a second name for
// the same producer makes a second row, which ProcessSyncChunk then refuses
// (wallet.ErrAmbiguousSyncState). The identity's lock makes a concurrent call of another
// process find this one's row rather than insert a second.
func (s *Store) FindOrInsertSyncStateAuth(ctx context.Context, identityKey, producerSIK, producerName string) (st brc40.SyncState, isNew bool, err error) {
	if producerSIK == "" || producerName == "" {
		return brc40.SyncState{}, false, fmt.Errorf("find or insert sync state: producer key and name are required: %w", wallet.ErrInvalidArgument)
	}
	err = s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		userID, _, err := ensureUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		states, err := readSyncStates(ctx, tx, userID, producerSIK, producerName, false)
		if err != nil {
			return err
		}
		switch len(states) {
		case 0:
		case 1:
			st, isNew = states[0], false
			return nil
		default:
			return fmt.Errorf("producer %s named %q: %w", wallet.ShortKey(producerSIK, 16), producerName, wallet.ErrAmbiguousSyncState)
		}
		if st, err = brc40.NewSyncState(userID, producerSIK, producerName, wallet.Now()); err != nil {
			return err
		}
		row, err := st.Row()
		if err != nil {
			return err
		}
		st.SyncStateID, err = insertRow(ctx, tx, wallet.SyncStates, row)
		isNew = true
		return err
	})
	if err != nil {
		return brc40.SyncState{}, false, fmt.Errorf("find or insert sync state: %w", err)
	}
	return st, isNew, nil
}

// FindOrInsertSyncState is FindOrInsertSyncStateAuth without isNew (brc40.ChunkConsumer).
func (s *Store) FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (brc40.SyncState, error) {
	st, _, err := s.FindOrInsertSyncStateAuth(ctx, identityKey, producerSIK, producerName)
	return st, err
}

// readSyncStates reads up to two sync states of userID for the producer (with its name
// unless name is ""), enough to tell one from several; forUpdate locks them until the
// transaction ends.
func readSyncStates(ctx context.Context, tx pgx.Tx, userID int64, producerSIK, name string, forUpdate bool) ([]brc40.SyncState, error) {
	q := &query{}
	conds := []string{`t."userId" = ` + q.add(userID), `t."storageIdentityKey" = ` + q.add(producerSIK)}
	if name != "" {
		conds = append(conds, `t."storageName" = `+q.add(name))
	}
	sql := "SELECT " + selectColumns(wallet.SyncStates, "t") + " FROM sync_states AS t WHERE " + strings.Join(conds, " AND ") + ` ORDER BY t."syncStateId" LIMIT 2`
	if forUpdate {
		sql += " FOR UPDATE"
	}
	rows, err := queryRows(ctx, tx, wallet.SyncStates, sql, q.args...)
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

// ProcessSyncChunk is the toolbox's processSyncChunk with localstore's semantics: the chunk
// (checked first, brc40.CheckChunk) merges into the user's rows with BRC-40's rules
// (brc40.ConsumeChunk and the merge functions beside it, ids mapped through the sync map),
// and the producer's sync state moves, in one transaction. The user is never created here
// (wallet.ErrNotFound); a missing state is wallet.ErrNotFound, two are
// wallet.ErrAmbiguousSyncState.
//
// Compare-and-set: the state row is locked first (SELECT ... FOR UPDATE), and args must
// have been made from it as it stands (brc40.SyncState.Answers). Two clients of one
// identity, on one server process or two, that send chunks for the same state at once are
// served one after the other: the first applies, the second is refused with
// wallet.ErrCheckpointConflict and nothing of it is written; it reads the state again and
// resumes from there.
func (s *Store) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	if err := checkChunk(args, chunk); err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("process sync chunk: %w", err)
	}
	var res brc40.ProcessSyncChunkResult
	err := s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if err := checkStorage(ctx, tx, "consumer", args.ToStorageIdentityKey); err != nil {
			return err
		}
		userID, err := lookupUser(ctx, tx, args.IdentityKey)
		if err != nil {
			return err
		}
		states, err := readSyncStates(ctx, tx, userID, args.FromStorageIdentityKey, "", true)
		if err != nil {
			return err
		}
		st, err := brc40.OneSyncState(states, args.FromStorageIdentityKey)
		if err != nil {
			return err
		}
		if err := st.Answers(args); err != nil {
			return err
		}
		m := &merger{ctx: ctx, tx: tx, userID: userID, ids: st.SyncMap}
		if res, err = brc40.ConsumeChunk(&st, chunk, m.mergeUser, m.mergeRows); err != nil {
			return err
		}
		res.Inserts, res.Updates = m.inserts, m.updates
		st.UpdatedAt = wallet.Now()
		return saveSyncState(ctx, tx, st)
	})
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("process sync chunk: %w", err)
	}
	return res, nil
}

// checkChunk refuses a chunk that does not answer args (brc40.CheckChunk) or holds text
// this store cannot hold (a *wallet.UnstorableError).
func checkChunk(args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) error {
	if err := brc40.CheckChunk(args, chunk); err != nil {
		return err
	}
	if chunk.User != nil {
		if err := checkText(wallet.Users, []wallet.Row{chunk.User}); err != nil {
			return err
		}
	}
	for name, rows := range chunk.Rows {
		t, err := wallet.LookupTable(name)
		if err != nil {
			return err
		}
		if err := checkText(t, rows); err != nil {
			return err
		}
	}
	return nil
}

// saveSyncState writes what processSyncChunk changes: the sync map, when and updated_at.
func saveSyncState(ctx context.Context, tx pgx.Tx, st brc40.SyncState) error {
	syncMap, err := json.Marshal(st.SyncMap)
	if err != nil {
		return err
	}
	var when any
	if st.When != nil {
		when = st.When.UTC()
	}
	_, err = tx.Exec(ctx, `UPDATE sync_states SET updated_at = $1, "syncMap" = $2, "when" = $3 WHERE "syncStateId" = $4`,
		st.UpdatedAt.UTC(), string(syncMap), when, st.SyncStateID)
	if err != nil {
		return fmt.Errorf("save sync state: %w", classify(err))
	}
	return nil
}
