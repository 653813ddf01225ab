package localstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"walletsync/wallet"
)

// The foreground operations: what a wallet front end does all day. Reads use the reader
// pool, writes one transaction each on the writer; every write maintains updated_at the way
// the toolbox does, so that sync sees the change as newer. The agent wraps each call in a
// foreground grant of the scheduler's access queue.

const defaultListLimit = 25

func listLimit(n int) (int, error) {
	if n == 0 {
		return defaultListLimit, nil
	}
	if n < 1 || n > wallet.MaxPageRows {
		return 0, fmt.Errorf("limit %d outside 1..%d: %w", n, wallet.MaxPageRows, wallet.ErrInvalidArgument)
	}
	return n, nil
}

// lookupUser returns the user's id, or wallet.ErrNotFound.
func lookupUser(ctx context.Context, q queryer, identityKey string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, "SELECT userId FROM users WHERE identityKey = ?", identityKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
	}
	return id, classify(err)
}

// Summary returns the user's balance (spendable outputs) and row counts per table.
func (s *Store) Summary(ctx context.Context, identityKey string) (wallet.Summary, error) {
	sum := wallet.Summary{IdentityKey: identityKey, Counts: map[wallet.TableName]int64{}}
	settings, err := s.Settings(ctx)
	if err != nil {
		return sum, fmt.Errorf("summary: %w", err)
	}
	sum.Chain = settings.Chain
	userID, err := lookupUser(ctx, s.readDB, identityKey)
	if err != nil {
		return sum, fmt.Errorf("summary: %w", err)
	}
	err = s.readDB.QueryRowContext(ctx, "SELECT coalesce(sum(satoshis), 0), count(*) FROM outputs WHERE userId = ? AND spendable = 1", userID).
		Scan(&sum.Balance, &sum.SpendableOutputs)
	if err != nil {
		return sum, fmt.Errorf("summary: %w", classify(err))
	}
	for _, t := range wallet.AllTables {
		from, where, args := scopeFilter(t, userID)
		var n int64
		if err := s.readDB.QueryRowContext(ctx, "SELECT count(*) FROM "+from+" WHERE "+where, args...).Scan(&n); err != nil {
			return sum, fmt.Errorf("summary: count %s: %w", t.Name, classify(err))
		}
		sum.Counts[t.Name] = n
	}
	return sum, nil
}

// ListActions returns the user's transactions, newest first, with their labels.
func (s *Store) ListActions(ctx context.Context, identityKey string, q wallet.ActionQuery) ([]wallet.Action, error) {
	limit, err := listLimit(q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", err)
	}
	userID, err := lookupUser(ctx, s.readDB, identityKey)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", err)
	}
	where, args := "t.userId = ?", []any{userID}
	if q.Before > 0 {
		where += " AND t.transactionId < ?"
		args = append(args, q.Before)
	}
	if q.Label != "" {
		where += ` AND t.transactionId IN (SELECT m.transactionId FROM tx_labels_map m JOIN tx_labels l ON l.txLabelId = m.txLabelId
			WHERE l.userId = ? AND l.label = ? AND l.isDeleted = 0 AND m.isDeleted = 0)`
		args = append(args, userID, q.Label)
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT t.transactionId, coalesce(t.txid, ''), t.status, t.satoshis, t.isOutgoing,
		coalesce(t.description, ''), t.created_at,
		coalesce((SELECT group_concat(l.label, char(31)) FROM tx_labels_map m JOIN tx_labels l ON l.txLabelId = m.txLabelId
			WHERE m.transactionId = t.transactionId AND m.isDeleted = 0 AND l.isDeleted = 0), '')
		FROM transactions t WHERE `+where+` ORDER BY t.transactionId DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", classify(err))
	}
	defer rows.Close()
	var out []wallet.Action
	for rows.Next() {
		var a wallet.Action
		var created any
		var labels string
		if err := rows.Scan(&a.TransactionID, &a.Txid, &a.Status, &a.Satoshis, &a.IsOutgoing, &a.Description, &created, &labels); err != nil {
			return nil, fmt.Errorf("list actions: %w", classify(err))
		}
		a.CreatedAt, err = scanTime(created)
		if err != nil {
			return nil, fmt.Errorf("list actions: %w", err)
		}
		a.Labels = splitList(labels)
		out = append(out, a)
	}
	return out, classify(rows.Err())
}

// ListOutputs returns the user's spendable outputs in one basket, in id order, with tags.
func (s *Store) ListOutputs(ctx context.Context, identityKey string, q wallet.OutputQuery) ([]wallet.Output, error) {
	limit, err := listLimit(q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list outputs: %w", err)
	}
	userID, err := lookupUser(ctx, s.readDB, identityKey)
	if err != nil {
		return nil, fmt.Errorf("list outputs: %w", err)
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT o.outputId, coalesce(o.txid, ''), o.vout, o.satoshis, b.name, o.spendable,
		coalesce((SELECT group_concat(g.tag, char(31)) FROM output_tags_map m JOIN output_tags g ON g.outputTagId = m.outputTagId
			WHERE m.outputId = o.outputId AND m.isDeleted = 0 AND g.isDeleted = 0), '')
		FROM outputs o JOIN output_baskets b ON b.basketId = o.basketId
		WHERE o.userId = ? AND o.spendable = 1 AND b.name = ? AND b.userId = ? AND o.outputId > ?
		ORDER BY o.outputId LIMIT ?`, userID, q.Basket, userID, q.After, limit)
	if err != nil {
		return nil, fmt.Errorf("list outputs: %w", classify(err))
	}
	defer rows.Close()
	var out []wallet.Output
	for rows.Next() {
		var o wallet.Output
		var tags string
		if err := rows.Scan(&o.OutputID, &o.Txid, &o.Vout, &o.Satoshis, &o.Basket, &o.Spendable, &tags); err != nil {
			return nil, fmt.Errorf("list outputs: %w", classify(err))
		}
		o.Tags = splitList(tags)
		out = append(out, o)
	}
	return out, classify(rows.Err())
}

// ListCertificates returns the user's certificates that are not deleted, with field names.
func (s *Store) ListCertificates(ctx context.Context, identityKey string) ([]wallet.Certificate, error) {
	userID, err := lookupUser(ctx, s.readDB, identityKey)
	if err != nil {
		return nil, fmt.Errorf("list certificates: %w", err)
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT c.certificateId, c.type, c.certifier, c.subject, c.serialNumber,
		coalesce((SELECT group_concat(f.fieldName, char(31)) FROM certificate_fields f WHERE f.certificateId = c.certificateId), '')
		FROM certificates c WHERE c.userId = ? AND c.isDeleted = 0 ORDER BY c.certificateId`, userID)
	if err != nil {
		return nil, fmt.Errorf("list certificates: %w", classify(err))
	}
	defer rows.Close()
	var out []wallet.Certificate
	for rows.Next() {
		var c wallet.Certificate
		var names string
		if err := rows.Scan(&c.CertificateID, &c.Type, &c.Certifier, &c.Subject, &c.SerialNumber, &names); err != nil {
			return nil, fmt.Errorf("list certificates: %w", classify(err))
		}
		c.Fields = splitList(names)
		out = append(out, c)
	}
	return out, classify(rows.Err())
}

// RecordTransaction writes a new transaction with its outputs, labels and tags in one
// transaction and returns its id. Baskets, labels and tags are found by name or created; a
// tombstoned one is revived.
func (s *Store) RecordTransaction(ctx context.Context, identityKey string, nt wallet.NewTransaction) (int64, error) {
	if nt.Reference == "" {
		b := make([]byte, 12)
		rand.Read(b)
		nt.Reference = base64.StdEncoding.EncodeToString(b)
	}
	if nt.Status == "" {
		nt.Status = "unproven"
	}
	var txID int64
	err := s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		now := wallet.Now()
		w := newRowWriter(tx)
		defer w.close()
		txID, err = w.insert(ctx, wallet.Transactions, newRow(wallet.Transactions, fields{"created_at": now, "updated_at": now,
			"userId": userID, "status": nt.Status, "reference": nt.Reference, "isOutgoing": nt.IsOutgoing,
			"satoshis": nt.Satoshis, "version": 1, "lockTime": 0, "description": nullIfEmpty(nt.Description),
			"txid": nullIfEmpty(nt.Txid), "rawTx": nt.RawTx}), false)
		if err != nil {
			return err
		}
		for _, o := range nt.Outputs {
			var basketID any
			if o.Basket != "" {
				id, err := findOrCreateNamed(ctx, tx, w, wallet.OutputBaskets, "name", o.Basket, userID, now)
				if err != nil {
					return err
				}
				basketID = id
			}
			purpose := "payment"
			if o.Change {
				purpose = "change"
			}
			outID, err := w.insert(ctx, wallet.Outputs, newRow(wallet.Outputs, fields{"created_at": now, "updated_at": now,
				"userId": userID, "transactionId": txID, "basketId": basketID, "spendable": true, "change": o.Change,
				"vout": o.Vout, "satoshis": o.Satoshis, "providedBy": "you", "purpose": purpose, "type": "P2PKH",
				"txid": nullIfEmpty(nt.Txid), "lockingScript": o.LockingScript, "scriptLength": int64(len(o.LockingScript))}), false)
			if err != nil {
				return err
			}
			for _, tag := range o.Tags {
				if err := setMapped(ctx, tx, w, wallet.OutputTags, wallet.OutputTagsMap, tag, userID, outID, false, now); err != nil {
					return err
				}
			}
		}
		for _, label := range nt.Labels {
			if err := setMapped(ctx, tx, w, wallet.TxLabels, wallet.TxLabelsMap, label, userID, txID, false, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record transaction: %w", err)
	}
	return txID, nil
}

// AddLabel puts label on the user's transaction, creating or reviving the label and its map
// row.
func (s *Store) AddLabel(ctx context.Context, identityKey string, transactionID int64, label string) error {
	return s.labelOp(ctx, identityKey, transactionID, label, false)
}

// RemoveLabel soft-deletes the map row between label and the transaction; the label itself
// stays for other transactions. Removing a label the transaction lacks is wallet.ErrNotFound.
func (s *Store) RemoveLabel(ctx context.Context, identityKey string, transactionID int64, label string) error {
	return s.labelOp(ctx, identityKey, transactionID, label, true)
}

func (s *Store) labelOp(ctx context.Context, identityKey string, transactionID int64, label string, remove bool) error {
	err := s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		var owner int64
		if err := tx.QueryRowContext(ctx, "SELECT userId FROM transactions WHERE transactionId = ?", transactionID).Scan(&owner); err != nil || owner != userID {
			return fmt.Errorf("transaction %d: %w", transactionID, wallet.ErrNotFound)
		}
		w := newRowWriter(tx)
		defer w.close()
		return setMapped(ctx, tx, w, wallet.TxLabels, wallet.TxLabelsMap, label, userID, transactionID, remove, wallet.Now())
	})
	if err != nil {
		return fmt.Errorf("label transaction: %w", err)
	}
	return nil
}

// MarkSpent marks the user's outputs as spent by the spending transaction.
func (s *Store) MarkSpent(ctx context.Context, identityKey string, outputIDs []int64, spendingTxID int64) error {
	err := s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		now := wallet.FormatTime(wallet.Now())
		for _, id := range outputIDs {
			res, err := tx.ExecContext(ctx, "UPDATE outputs SET spendable = 0, spentBy = ?, updated_at = ? WHERE outputId = ? AND userId = ?",
				spendingTxID, now, id, userID)
			if err != nil {
				return classify(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("output %d: %w", id, wallet.ErrNotFound)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark spent: %w", err)
	}
	return nil
}

// SoftDelete tombstones the user's basket, label or tag of that name (isDeleted = 1): sync
// carries tombstones, it never removes rows.
func (s *Store) SoftDelete(ctx context.Context, identityKey string, kind wallet.SoftDeleteKind, name string) error {
	var t *wallet.Table
	var col string
	switch kind {
	case wallet.SoftDeleteBasket:
		t, col = wallet.OutputBaskets, "name"
	case wallet.SoftDeleteLabel:
		t, col = wallet.TxLabels, "label"
	case wallet.SoftDeleteTag:
		t, col = wallet.OutputTags, "tag"
	default:
		return fmt.Errorf("soft delete %q: %w", kind, wallet.ErrInvalidArgument)
	}
	err := s.walletWriteTx(ctx, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET isDeleted = 1, updated_at = ? WHERE userId = ? AND %s = ? AND isDeleted = 0",
			quoteIdent(string(t.Name)), quoteIdent(col)), wallet.FormatTime(wallet.Now()), userID, name)
		if err != nil {
			return classify(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s %q: %w", kind, name, wallet.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("soft delete: %w", err)
	}
	return nil
}

// findOrCreateNamed returns the id of the user's row in t named name (reviving a tombstone),
// creating it when missing.
func findOrCreateNamed(ctx context.Context, tx *sql.Tx, w *rowWriter, t *wallet.Table, col, name string, userID int64, now any) (int64, error) {
	var id int64
	var deleted bool
	err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %s, isDeleted FROM %s WHERE userId = ? AND %s = ?", quoteIdent(t.ID), quoteIdent(string(t.Name)), quoteIdent(col)),
		userID, name).Scan(&id, &deleted)
	switch {
	case err == nil && deleted:
		_, err = tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET isDeleted = 0, updated_at = ? WHERE %s = ?", quoteIdent(string(t.Name)), quoteIdent(t.ID)), wallet.SQLValue(now), id)
		return id, classify(err)
	case err == nil:
		return id, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, classify(err)
	}
	f := fields{"created_at": now, "updated_at": now, "userId": userID, col: name, "isDeleted": false}
	if t == wallet.OutputBaskets {
		f["numberOfDesiredUTXOs"], f["minimumDesiredUTXOValue"] = int64(6), int64(10000)
	}
	return w.insert(ctx, t, newRow(t, f), false)
}

// setMapped sets (or, with remove, soft-deletes) the map row between the named label or tag
// and the target (transaction or output).
func setMapped(ctx context.Context, tx *sql.Tx, w *rowWriter, named, mapTable *wallet.Table, name string, userID, targetID int64, remove bool, now any) error {
	nameCol, targetCol := "label", "transactionId"
	if named == wallet.OutputTags {
		nameCol, targetCol = "tag", "outputId"
	}
	var nameID int64
	var err error
	if remove {
		err = tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE userId = ? AND %s = ?", quoteIdent(named.ID), quoteIdent(string(named.Name)), nameCol),
			userID, name).Scan(&nameID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s %q: %w", nameCol, name, wallet.ErrNotFound)
		}
	} else {
		nameID, err = findOrCreateNamed(ctx, tx, w, named, nameCol, name, userID, now)
	}
	if err != nil {
		return classify(err)
	}
	res, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET isDeleted = ?, updated_at = ? WHERE %s = ? AND %s = ? AND isDeleted <> ?",
		quoteIdent(string(mapTable.Name)), quoteIdent(named.ID), quoteIdent(targetCol)), remove, wallet.SQLValue(now), nameID, targetID, remove)
	if err != nil {
		return classify(err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var exists int
	if err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = ? AND %s = ?", quoteIdent(string(mapTable.Name)), quoteIdent(named.ID), quoteIdent(targetCol)),
		nameID, targetID).Scan(&exists); err != nil {
		return classify(err)
	}
	switch {
	case exists > 0:
		return nil // already in the asked state
	case remove:
		return fmt.Errorf("%s %q on %d: %w", nameCol, name, targetID, wallet.ErrNotFound)
	}
	_, err = w.insert(ctx, mapTable, newRow(mapTable, fields{"created_at": now, "updated_at": now,
		named.ID: nameID, targetCol: targetID, "isDeleted": false}), false)
	return err
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// splitList splits a group_concat made with the unit separator (which labels never hold).
func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\x1f")
}

func scanTime(v any) (t time.Time, err error) {
	x, err := wallet.NormalizeValue(wallet.Column{Kind: wallet.KindTime}, v)
	if err != nil {
		return t, err
	}
	return x.(time.Time), nil
}
