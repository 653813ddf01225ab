package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// Usage returns what identityKey holds in the database (see wallet.Usage), counted as
// localstore's Usage counts it: its rows and their stored bytes (each cell's length as
// SQLite stores it: integers as their decimal text, booleans as one byte, times as
// wallet.TimeLayout) over every table of wallet.SyncOrder as BRC-40 scopes them, and the
// stores it syncs from. It reads one consistent snapshot through the userId indexes. An
// identity the database has never seen holds nothing.
func (s *Store) Usage(ctx context.Context, identityKey string) (wallet.Usage, error) {
	var u wallet.Usage
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		u = wallet.Usage{}
		var userID int64 = -1
		if err := tx.QueryRow(ctx, `SELECT coalesce(max("userId"), -1) FROM users WHERE "identityKey" = $1`, identityKey).Scan(&userID); err != nil {
			return fmt.Errorf("read usage: %w", classify(err))
		}
		if userID >= 0 {
			for _, t := range wallet.SyncOrder {
				var rows, bytes int64
				args := []any{userID}
				if t.Scope == wallet.ScopeProvenTx || t.Scope == wallet.ScopeProvenTxReq {
					args = append(args, identityKey) // broughtIDs' $2
				}
				if err := tx.QueryRow(ctx, usageQuery(t), args...).Scan(&rows, &bytes); err != nil {
					return fmt.Errorf("read usage of %s: %w", t.Name, classify(err))
				}
				u.Rows += rows
				u.Bytes += bytes
			}
		}
		rs, err := tx.Query(ctx, `SELECT "storageIdentityKey" FROM sync_states WHERE "userId" = $1 UNION SELECT source_storage FROM `+checkpointTable+` WHERE identity_key = $2`, userID, identityKey)
		if err != nil {
			return fmt.Errorf("read usage: %w", classify(err))
		}
		u.Producers, err = pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("read usage: %w", classify(err))
		}
		return nil
	})
	return u, err
}

// usageQuery counts t's rows of the user $1 (the identity $2) and sums their cells' stored
// lengths, with the scopes of scopeFilter written as lookups from the user's own rows, and
// the proofs and proof requests its syncs wrote (localstore's usageQuery says why).
func usageQuery(t *wallet.Table) string {
	lens := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		col := "t." + quote(c.Name)
		switch c.Kind {
		case wallet.KindBool:
			lens[i] = fmt.Sprintf("(CASE WHEN %s IS NULL THEN 0 ELSE 1 END)", col)
		case wallet.KindTime:
			lens[i] = fmt.Sprintf("(CASE WHEN %s IS NULL THEN 0 ELSE %d END)", col, len(wallet.TimeLayout))
		case wallet.KindInt:
			lens[i] = fmt.Sprintf("coalesce(octet_length(%s::text), 0)", col)
		default:
			lens[i] = fmt.Sprintf("coalesce(octet_length(%s), 0)", col)
		}
	}
	where := `t."userId" = $1`
	switch t.Scope {
	case wallet.ScopeProvenTx:
		where = `t."provenTxId" IN (SELECT "provenTxId" FROM transactions WHERE "userId" = $1 AND "provenTxId" IS NOT NULL
			UNION SELECT r."provenTxId" FROM transactions x JOIN proven_tx_reqs r ON r.txid = x.txid WHERE x."userId" = $1 AND r."provenTxId" IS NOT NULL
			UNION ` + broughtIDs(t, "provenTx") + `)`
	case wallet.ScopeProvenTxReq:
		where = `t.txid IN (SELECT txid FROM transactions WHERE "userId" = $1 AND txid IS NOT NULL) OR t."provenTxReqId" IN (` + broughtIDs(t, "provenTxReq") + `)`
	case wallet.ScopeLabelMap:
		where = `t."txLabelId" IN (SELECT "txLabelId" FROM tx_labels WHERE "userId" = $1)`
	case wallet.ScopeTagMap:
		where = `t."outputTagId" IN (SELECT "outputTagId" FROM output_tags WHERE "userId" = $1)`
	}
	return fmt.Sprintf("SELECT count(*), coalesce(sum(%s), 0)::bigint FROM %s AS t WHERE %s", strings.Join(lens, " + "), quote(string(t.Name)), where)
}

// broughtIDs selects the ids of t's rows that the syncs of the identity $2 and of its
// user $1 wrote.
func broughtIDs(t *wallet.Table, entity string) string {
	return `SELECT local_id FROM ` + idMapTable + ` WHERE tbl = '` + string(t.Name) + `' AND source_storage IN (SELECT source_storage FROM ` + checkpointTable + ` WHERE identity_key = $2)
		UNION SELECT j.value::bigint FROM sync_states AS s, jsonb_each_text(s."syncMap"::jsonb -> '` + entity + `' -> 'idMap') AS j WHERE s."userId" = $1`
}

// ProbeBytes is the size of the write ProbeWrite commits.
const ProbeBytes = 1 << 20

// ProbeWrite reports whether the database takes a write now: it commits one transaction
// that writes ProbeBytes of incompressible text (a checkpoint row no session names) and
// deletes it again, and returns nil or what the commit met (a full disk, SQLSTATE 53100,
// matches wallet.ErrDiskFull; a read-only server wallet.ErrReadOnly). The rows are the
// same afterwards.
func (s *Store) ProbeWrite(ctx context.Context) error {
	filler := make([]byte, ProbeBytes/2)
	rand.Read(filler)
	err := s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		cp := wallet.Checkpoint{Session: wallet.SessionKey{SourceStorage: "walletsync write probe"}, Mode: wallet.ModeFull, Cursor: wallet.Cursor(hex.EncodeToString(filler)), UpdatedAt: wallet.Now()}
		if err := writeCheckpoint(ctx, tx, cp); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DELETE FROM "+checkpointTable+" WHERE source_storage = $1 AND identity_key = ''", cp.Session.SourceStorage)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("probe a write to %s: %w", s.where, err)
	}
	return nil
}
