package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// merger applies one chunk's rows to the store inside its transaction, with BRC-40's merge
// rules as wallet states them (the same rules localstore's merger applies): a row is
// matched by its natural key (wallet.MatchKeys) after its foreign keys are mapped to local
// ids (wallet.Localize); an unmatched row is inserted with a new local id, a matched one
// merges by wallet.MergeNewer, wallet.MergeUserRow (the zero policy: processSyncChunk's own
// rule) or wallet.MergeProofRequest; proofs never change once stored; users are never
// created by a merge.
type merger struct {
	ctx     context.Context
	tx      pgx.Tx
	userID  int64
	ids     wallet.SyncMap
	inserts int64
	updates int64
}

// mergeUser merges the chunk's user row and reports whether it changed the stored one.
func (m *merger) mergeUser(in wallet.Row) (bool, error) {
	before := m.updates
	err := m.merge(wallet.Users, in)
	return m.updates > before, err
}

// merge applies one incoming row of t (with the producer's ids).
func (m *merger) merge(t *wallet.Table, in wallet.Row) error {
	local, err := wallet.Localize(t, in, m.userID, m.ids.LocalID)
	if err != nil {
		return err
	}
	found, err := m.find(t, local)
	if err != nil {
		return err
	}
	if found == nil {
		if t == wallet.Users {
			return fmt.Errorf("merge user %s: a sync never creates a user: %w", wallet.ShortKey(in[t.Col("identityKey")].(string), 16), wallet.ErrNotFound)
		}
		return m.insert(t, in, local)
	}
	if t.ID != "" {
		if err := m.ids.RecordID(t, in[t.Col(t.ID)].(int64), found[t.Col(t.ID)].(int64)); err != nil {
			return err
		}
	}
	var cols []string
	switch t {
	case wallet.ProvenTxs:
		return nil // a proof, once stored, never changes
	case wallet.ProvenTxReqs:
		localTx := func(src int64) (int64, bool) { return m.ids.LocalID(wallet.Transactions, src) }
		if err := wallet.MergeProofRequest(in, found, localTx); err != nil {
			return err
		}
		return updateRow(m.ctx, m.tx, t, found, wallet.ProofRequestMergeColumns) // not counted, as the toolbox counts it
	case wallet.Users:
		if wallet.MergeUserRow(in, found, "") {
			cols = wallet.UserMergeColumns
		}
	default:
		cols = wallet.MergeNewer(t, in, local, found)
	}
	if cols == nil {
		return nil
	}
	m.updates++
	return updateRow(m.ctx, m.tx, t, found, cols)
}

// find returns the stored row matching local by natural key (wallet.MatchKeys), or nil.
func (m *merger) find(t *wallet.Table, local wallet.Row) (wallet.Row, error) {
	for _, cols := range wallet.MatchKeys(t) {
		if !wallet.Matchable(t, cols, local) {
			continue
		}
		q := &query{}
		conds := make([]string, len(cols))
		for i, c := range cols {
			conds[i] = "t." + quote(c) + " = " + q.add(local[t.Col(c)])
		}
		rows, err := queryRows(m.ctx, m.tx, t, fmt.Sprintf("SELECT %s FROM %s AS t WHERE %s LIMIT 2", selectColumns(t, "t"),
			quote(string(t.Name)), strings.Join(conds, " AND ")), q.args...)
		switch {
		case err != nil:
			return nil, err
		case len(rows) > 1:
			return nil, fmt.Errorf("%s: two rows match natural key %v: %w", t.Name, cols, wallet.ErrCorrupt)
		case len(rows) == 1:
			return rows[0], nil
		}
	}
	return nil, nil
}

func (m *merger) insert(t *wallet.Table, in, local wallet.Row) error {
	if t == wallet.OutputBaskets && local[t.Col("name")] == "" {
		local[t.Col("name")] = "default"
	}
	id, err := insertRow(m.ctx, m.tx, t, local)
	if err != nil {
		return err
	}
	m.inserts++
	if t.ID == "" {
		return nil
	}
	return m.ids.RecordID(t, in[t.Col(t.ID)].(int64), id)
}
