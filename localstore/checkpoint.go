package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"walletsync/wallet"
)

// The destination side of a sync session keeps its checkpoint in walletsync_checkpoints,
// one row per session, written in the same transaction as the page it describes.
const checkpointTable = ownPrefix + "checkpoints"

// Checkpoint returns the durable checkpoint of a session at this store, or the zero
// Checkpoint when the session never committed here.
func (s *Store) Checkpoint(ctx context.Context, session wallet.SessionKey) (wallet.Checkpoint, error) {
	cp, err := readCheckpoint(ctx, s.readDB, session)
	if err != nil {
		return cp, fmt.Errorf("read checkpoint: %w", err)
	}
	return cp, nil
}

func readCheckpoint(ctx context.Context, q queryer, session wallet.SessionKey) (wallet.Checkpoint, error) {
	cp := wallet.Checkpoint{Session: session}
	var mode, cursor, catchUpCursor, updated string
	err := q.QueryRowContext(ctx, `SELECT seq, mode, since, high_water, table_pos, cursor, view,
		catch_up_table, catch_up_cursor, catch_up_high_water, done, updated_at
		FROM `+checkpointTable+` WHERE source_storage = ? AND identity_key = ?`, session.SourceStorage, session.IdentityKey).
		Scan(&cp.Seq, &mode, &cp.Since, &cp.HighWater, &cp.Table, &cursor, &cp.View,
			&cp.CatchUpTable, &catchUpCursor, &cp.CatchUpHighWater, &cp.Done, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return wallet.Checkpoint{Session: session}, nil
	}
	if err != nil {
		return cp, classify(err)
	}
	cp.Mode, cp.Cursor, cp.CatchUpCursor = wallet.SyncMode(mode), wallet.Cursor(cursor), wallet.Cursor(catchUpCursor)
	if cp.UpdatedAt, err = wallet.ParseTime(updated); err != nil {
		return cp, err
	}
	return cp, nil
}

func writeCheckpoint(ctx context.Context, tx *sql.Tx, cp wallet.Checkpoint) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+checkpointTable+`
		(source_storage, identity_key, seq, mode, since, high_water, table_pos, cursor, view,
		catch_up_table, catch_up_cursor, catch_up_high_water, done, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (source_storage, identity_key) DO UPDATE SET seq = excluded.seq, mode = excluded.mode,
		since = excluded.since, high_water = excluded.high_water, table_pos = excluded.table_pos,
		cursor = excluded.cursor, view = excluded.view, catch_up_table = excluded.catch_up_table, catch_up_cursor = excluded.catch_up_cursor,
		catch_up_high_water = excluded.catch_up_high_water, done = excluded.done, updated_at = excluded.updated_at`,
		cp.Session.SourceStorage, cp.Session.IdentityKey, cp.Seq, string(cp.Mode), cp.Since, cp.HighWater,
		cp.Table, string(cp.Cursor), cp.View, cp.CatchUpTable, string(cp.CatchUpCursor), cp.CatchUpHighWater, cp.Done, wallet.FormatTime(cp.UpdatedAt))
	return classify(err)
}
