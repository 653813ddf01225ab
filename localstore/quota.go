package localstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// Usage returns what identityKey holds in the store (see wallet.Usage): its rows and their
// stored bytes over every table of wallet.SyncOrder as BRC-40 scopes them, and the stores it
// syncs from. It reads in one transaction, through the toolbox's userId indexes (the cost
// is the identity's rows, not the store's). An identity the store has never seen holds
// nothing.
func (s *Store) Usage(ctx context.Context, identityKey string) (wallet.Usage, error) {
	var u wallet.Usage
	tx, err := s.readDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return u, fmt.Errorf("read usage: %w", classify(err))
	}
	defer tx.Rollback()
	var userID int64
	switch err := tx.QueryRowContext(ctx, "SELECT userId FROM users WHERE identityKey = ?", identityKey).Scan(&userID); {
	case errors.Is(err, sql.ErrNoRows):
		userID = -1 // no rows; the checkpoints may still name it
	case err != nil:
		return u, fmt.Errorf("read usage: %w", classify(err))
	}
	if userID >= 0 {
		for _, t := range wallet.SyncOrder {
			var rows, bytes int64
			if err := tx.QueryRowContext(ctx, usageQuery(t), usageArgs(t, userID, identityKey)...).Scan(&rows, &bytes); err != nil {
				return u, fmt.Errorf("read usage of %s: %w", t.Name, classify(err))
			}
			u.Rows += rows
			u.Bytes += bytes
		}
	}
	rs, err := tx.QueryContext(ctx, "SELECT storageIdentityKey FROM sync_states WHERE userId = ? UNION SELECT source_storage FROM "+checkpointTable+" WHERE identity_key = ?", userID, identityKey)
	if err != nil {
		return u, fmt.Errorf("read usage: %w", classify(err))
	}
	defer rs.Close()
	for rs.Next() {
		var p string
		if err := rs.Scan(&p); err != nil {
			return u, fmt.Errorf("read usage: %w", classify(err))
		}
		u.Producers = append(u.Producers, p)
	}
	if err := rs.Err(); err != nil {
		return u, fmt.Errorf("read usage: %w", classify(err))
	}
	return u, nil
}

// usageQuery counts t's rows of one user and sums the stored length of their cells. The
// scopes are BRC-40's (scopeFilter), written as lookups from the user's own rows so that
// each walks an index from the user rather than the whole table. Proofs and proof requests
// also count when the user's syncs wrote them (their id maps: walletsync's per source
// store, the toolbox's in the user's sync states) though none of its transactions reaches
// them yet: they arrive before the transactions that bring them into scope, and a tenant
// that sends only them would otherwise store them for free.
func usageQuery(t *wallet.Table) string {
	lens := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		lens[i] = fmt.Sprintf("coalesce(octet_length(t.%s), 0)", quoteIdent(c.Name))
	}
	where := "t.userId = ?"
	switch t.Scope {
	case wallet.ScopeProvenTx:
		where = "t.provenTxId IN (SELECT provenTxId FROM transactions WHERE userId = ? AND provenTxId IS NOT NULL" +
			" UNION SELECT r.provenTxId FROM transactions x CROSS JOIN proven_tx_reqs r ON r.txid = x.txid WHERE x.userId = ? AND r.provenTxId IS NOT NULL" +
			" UNION " + broughtIDs(t, "provenTx") + ")"
	case wallet.ScopeProvenTxReq:
		where = "t.txid IN (SELECT txid FROM transactions WHERE userId = ? AND txid IS NOT NULL) OR t.provenTxReqId IN (" + broughtIDs(t, "provenTxReq") + ")"
	case wallet.ScopeLabelMap:
		where = "t.txLabelId IN (SELECT txLabelId FROM tx_labels WHERE userId = ?)"
	case wallet.ScopeTagMap:
		where = "t.outputTagId IN (SELECT outputTagId FROM output_tags WHERE userId = ?)"
	}
	return fmt.Sprintf("SELECT count(*), coalesce(sum(%s), 0) FROM %s AS t WHERE %s", strings.Join(lens, " + "), quoteIdent(string(t.Name)), where)
}

// broughtIDs selects the ids of t's rows that the syncs of the identity (the first
// parameter) and of its user (the second) wrote.
func broughtIDs(t *wallet.Table, entity string) string {
	return "SELECT local_id FROM " + idMapTable + " WHERE tbl = '" + string(t.Name) + "' AND source_storage IN (SELECT source_storage FROM " + checkpointTable + " WHERE identity_key = ?)" +
		" UNION SELECT j.value FROM sync_states AS s, json_each(s.syncMap, '$." + entity + ".idMap') AS j WHERE s.userId = ?"
}

func usageArgs(t *wallet.Table, userID int64, identityKey string) []any {
	switch t.Scope {
	case wallet.ScopeProvenTx:
		return []any{userID, userID, identityKey, userID}
	case wallet.ScopeProvenTxReq:
		return []any{userID, identityKey, userID}
	}
	return []any{userID}
}

// ProbeBytes is the size of the write ProbeWrite commits: more than the pages a server
// commits at once take in the WAL, so that the space a failed commit left in the WAL file
// cannot hold the probe.
const ProbeBytes = 1 << 20

// ProbeWrite reports whether the store can write now: it commits one transaction that
// writes ProbeBytes (a row of walletsync's checkpoint table that no session names) and
// deletes them again, and returns what the commit met: nil, or an error that matches
// wallet.ErrDiskFull (SQLITE_FULL, ENOSPC), wallet.ErrReadOnly or wallet.ErrBusy. The
// store's rows are the same afterwards; the file may keep the freed pages.
func (s *Store) ProbeWrite(ctx context.Context) error {
	filler := make([]byte, ProbeBytes/2)
	rand.Read(filler)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		cp := wallet.Checkpoint{Session: wallet.SessionKey{SourceStorage: "walletsync write probe"}, Mode: wallet.ModeFull, Cursor: wallet.Cursor(hex.EncodeToString(filler)), UpdatedAt: wallet.Now()}
		if err := writeCheckpoint(ctx, tx, cp); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM "+checkpointTable+" WHERE source_storage = ? AND identity_key = ''", cp.Session.SourceStorage)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("probe a write to %s: %w", s.path, err)
	}
	return nil
}
