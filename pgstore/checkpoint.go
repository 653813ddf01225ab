package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// walletsync's own tables for the destination side of its sessions, as localstore keeps
// them in SQLite: one checkpoint per session key (source storage and identity; the paged
// wire's server scopes the source storage to the identity before a store sees it), written
// in the same transaction as the page it describes, and the id maps per source storage
// (idmap.go).
const (
	checkpointTable = "walletsync_checkpoints"
	idMapTable      = "walletsync_idmaps"
)

// sessionDDL is the migration that creates them.
const sessionDDL = `CREATE TABLE ` + checkpointTable + ` (
	source_storage text NOT NULL,
	identity_key text NOT NULL,
	seq bigint NOT NULL,
	mode text NOT NULL,
	since bigint NOT NULL,
	high_water bigint NOT NULL,
	table_pos integer NOT NULL,
	cursor text NOT NULL,
	view text NOT NULL,
	catch_up_table integer NOT NULL,
	catch_up_cursor text NOT NULL,
	catch_up_high_water bigint NOT NULL,
	done boolean NOT NULL,
	updated_at timestamptz(3) NOT NULL,
	PRIMARY KEY (source_storage, identity_key)
);
CREATE TABLE ` + idMapTable + ` (
	source_storage text NOT NULL,
	tbl text NOT NULL,
	source_id bigint NOT NULL,
	local_id bigint NOT NULL,
	PRIMARY KEY (source_storage, tbl, source_id)
);
`

// Checkpoint returns the durable checkpoint of a session at this store, or the zero
// Checkpoint when the session never committed here.
func (s *Store) Checkpoint(ctx context.Context, session wallet.SessionKey) (wallet.Checkpoint, error) {
	if err := checkSession(session); err != nil {
		return wallet.Checkpoint{Session: session}, fmt.Errorf("read checkpoint: %w", err)
	}
	cp, err := readCheckpoint(ctx, s.pool, session)
	if err != nil {
		return cp, fmt.Errorf("read checkpoint: %w", err)
	}
	return cp, nil
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readCheckpoint(ctx context.Context, q rowQuerier, session wallet.SessionKey) (wallet.Checkpoint, error) {
	cp := wallet.Checkpoint{Session: session}
	var mode, cursor, catchUpCursor string
	err := q.QueryRow(ctx, `SELECT seq, mode, since, high_water, table_pos, cursor, view,
		catch_up_table, catch_up_cursor, catch_up_high_water, done, updated_at
		FROM `+checkpointTable+` WHERE source_storage = $1 AND identity_key = $2`, session.SourceStorage, session.IdentityKey).
		Scan(&cp.Seq, &mode, &cp.Since, &cp.HighWater, &cp.Table, &cursor, &cp.View,
			&cp.CatchUpTable, &catchUpCursor, &cp.CatchUpHighWater, &cp.Done, &cp.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return wallet.Checkpoint{Session: session}, nil
	}
	if err != nil {
		return cp, classify(err)
	}
	cp.Mode, cp.Cursor, cp.CatchUpCursor = wallet.SyncMode(mode), wallet.Cursor(cursor), wallet.Cursor(catchUpCursor)
	cp.UpdatedAt = cp.UpdatedAt.UTC()
	return cp, nil
}

func writeCheckpoint(ctx context.Context, tx pgx.Tx, cp wallet.Checkpoint) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+checkpointTable+`
		(source_storage, identity_key, seq, mode, since, high_water, table_pos, cursor, view,
		catch_up_table, catch_up_cursor, catch_up_high_water, done, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (source_storage, identity_key) DO UPDATE SET seq = excluded.seq, mode = excluded.mode,
		since = excluded.since, high_water = excluded.high_water, table_pos = excluded.table_pos,
		cursor = excluded.cursor, view = excluded.view, catch_up_table = excluded.catch_up_table, catch_up_cursor = excluded.catch_up_cursor,
		catch_up_high_water = excluded.catch_up_high_water, done = excluded.done, updated_at = excluded.updated_at`,
		cp.Session.SourceStorage, cp.Session.IdentityKey, cp.Seq, string(cp.Mode), cp.Since, cp.HighWater,
		cp.Table, string(cp.Cursor), cp.View, cp.CatchUpTable, string(cp.CatchUpCursor), cp.CatchUpHighWater, cp.Done, cp.UpdatedAt)
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", classify(err))
	}
	return nil
}

// lockSession takes the transaction-scoped advisory lock of one session, which every
// commit of that session holds from before it reads the checkpoint until it commits: two
// server processes committing the same session at once take turns, and the second reads
// the checkpoint the first wrote (a READ COMMITTED statement sees what committed before it
// started). Two sessions whose keys hash alike only take turns too.
func lockSession(ctx context.Context, tx pgx.Tx, session wallet.SessionKey) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		"walletsync session "+session.SourceStorage+"\x1f"+session.IdentityKey); err != nil {
		return fmt.Errorf("lock session: %w", classify(err))
	}
	return nil
}
