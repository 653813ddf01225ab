package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"walletsync/brc40"
	"walletsync/wallet"
)

// PreviewMerge reports, table by table, what merging the user identityKey's rows from src
// into this store would do, and writes nothing: the rows a merge would insert, update, leave
// unchanged, and skip as older than this store's. It runs the very merger Commit runs
// (natural keys, strictly newer wins, the proof-request rule, wallet.KeepDestinationActive,
// a missing user made as Commit makes it) in one read transaction, on the rows of src read in
// SyncOrder as a sync session reads them, and keeps what it would write in memory for the rows
// that follow. So merging the same rows into the store as it is now reports the same inserts
// and updates, table by table.
//
// For sync_states it predicts CompleteMerge: an insert for each staged (storageIdentityKey,
// storageName) the user has no state for yet (counting the producer from, whose state
// CompleteMerge makes first), an update otherwise.
//
// It also finds every row that would make the merge fail half-way (see conflicts.go): a
// unique key another row holds, a reference to nothing, an ambiguous match. A merge is
// refused when the preview finds any.
//
// A store opened read-only previews as well.
func (s *Store) PreviewMerge(ctx context.Context, src wallet.PageReader, identityKey string, from wallet.Settings) (wallet.MergePreview, error) {
	tx, err := s.readDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wallet.MergePreview{}, fmt.Errorf("preview merge: %w", classify(err))
	}
	defer tx.Rollback()
	p, err := previewMerge(ctx, tx, src, identityKey, from)
	if err != nil {
		return p, fmt.Errorf("preview merge: %w", err)
	}
	return p, nil
}

func previewMerge(ctx context.Context, tx *sql.Tx, src wallet.PageReader, identityKey string, from wallet.Settings) (wallet.MergePreview, error) {
	var p wallet.MergePreview
	var err error
	log := newConflictLog()
	p.Plan, err = previewPlan(ctx, tx, src, identityKey, from, log)
	p.Conflicts, p.ConflictTotal = log.list, log.total
	return p, err
}

func previewPlan(ctx context.Context, tx *sql.Tx, src wallet.PageReader, identityKey string, from wallet.Settings, log *conflictLog) (wallet.MergePlan, error) {
	dry := newOverlay()
	userID, err := lookupUser(ctx, tx, identityKey)
	known := err == nil
	if errors.Is(err, wallet.ErrNotFound) {
		var sik string
		if err := tx.QueryRowContext(ctx, "SELECT storageIdentityKey FROM settings LIMIT 1").Scan(&sik); err != nil {
			return nil, classify(err)
		}
		user, basket := brc40.NewUserRows(identityKey, sik, wallet.Now())
		userID = dry.put(wallet.Users, user, true)
		basket[wallet.OutputBaskets.Col("userId")] = userID
		dry.put(wallet.OutputBaskets, basket, true)
	} else if err != nil {
		return nil, err
	}
	m := newMerger(ctx, tx, userID, brc40.NewSyncMap(), wallet.KeepDestinationActive)
	m.dry, m.conflicts = dry, log
	defer m.close()

	plan := wallet.MergePlan{}
	for _, t := range wallet.SyncOrder {
		var rows int64
		inserts, updates, older := m.inserts, m.updates, m.older
		err := readPages(ctx, src, t, identityKey, func(page []wallet.Row) error {
			rows += int64(len(page))
			return m.mergePage(t, page)
		})
		if err != nil {
			return nil, err
		}
		c := wallet.MergeCounts{Inserts: m.inserts - inserts, Updates: m.updates - updates, Older: m.older - older}
		c.Unchanged = rows - c.Inserts - c.Updates - c.Older
		plan[t.Name] = c
	}

	type stateKey struct{ storage, name string }
	have := map[stateKey]wallet.Row{{from.StorageIdentityKey, from.StorageName}: nil}
	t := wallet.SyncStates
	if known {
		stored, err := queryRows(ctx, tx, t, "SELECT "+selectColumns(t)+" FROM sync_states AS t WHERE t.userId = ?", userID)
		if err != nil {
			return nil, err
		}
		for _, r := range stored {
			have[stateKey{r[t.Col("storageIdentityKey")].(string), r[t.Col("storageName")].(string)}] = r
		}
		// The import rewrites its own state for the backup first, so a staged state of that
		// name always updates it.
		have[stateKey{from.StorageIdentityKey, from.StorageName}] = nil
	}
	var states wallet.MergeCounts
	err = readPages(ctx, src, t, identityKey, func(page []wallet.Row) error {
		for _, r := range page {
			k := stateKey{r[t.Col("storageIdentityKey")].(string), r[t.Col("storageName")].(string)}
			stored, ok := have[k]
			switch {
			case !ok:
				states.Inserts++
				have[k] = nil
			case stored != nil && sameSyncState(stored, r):
				states.Unchanged++
			default:
				states.Updates++
			}
		}
		return nil
	})
	plan[t.Name] = states
	return plan, err
}

// readPages hands every page of the user's rows of t in src to fn, in key order, in pages as
// large as a view serves; a row larger than such a page is read alone, as a session reads it.
func readPages(ctx context.Context, src wallet.PageReader, t *wallet.Table, identityKey string, fn func([]wallet.Row) error) error {
	var after wallet.Cursor
	for {
		req := wallet.PageRequest{Table: t.Name, IdentityKey: identityKey, After: after,
			Limits: wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}}
		p, err := src.ReadPage(ctx, req)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			req.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
			p, err = src.ReadPage(ctx, req)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", t.Name, err)
		}
		if len(p.Rows) == 0 && !p.Done {
			return fmt.Errorf("read %s: an empty page that is not the last: %w", t.Name, wallet.ErrNoProgress)
		}
		if err := fn(p.Rows); err != nil {
			return err
		}
		if p.Done {
			return nil
		}
		after = p.Next
	}
}
