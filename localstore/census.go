package localstore

import (
	"context"
	"fmt"
	"strings"
)

// SchemaVersion is the walletsync schema version this binary writes: the number of its own
// migrations. A file recording a higher one is refused (wallet.ErrSchemaTooNew).
func SchemaVersion() int { return len(migrations) }

// Census is what a whole wallet file holds, for a bundle's manifest: its schema versions and
// the rows of every table, the toolbox's and walletsync's alike.
type Census struct {
	// ToolboxMigrations are the Knex migrations the file records, in order.
	ToolboxMigrations []string `json:"toolboxMigrations"`
	// WalletsyncVersion is the highest walletsync migration the file records (0 if none).
	WalletsyncVersion int `json:"walletsyncVersion"`
	// Tables holds the row count of every table in the file (SQLite's own excepted).
	Tables map[string]int64 `json:"tables"`
}

// Census counts the rows of every table and reads both migration ledgers, all in one read
// transaction, so the numbers describe one moment of the file.
func (s *Store) Census(ctx context.Context) (Census, error) {
	c := Census{Tables: map[string]int64{}}
	conn, err := s.readDB.Conn(ctx)
	if err != nil {
		return c, fmt.Errorf("census: %w", classify(err))
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return c, fmt.Errorf("census: %w", classify(err))
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return c, fmt.Errorf("census: %w", classify(err))
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return c, fmt.Errorf("census: %w", classify(err))
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		return c, fmt.Errorf("census: %w", classify(err))
	}
	for _, n := range names {
		var count int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(n, `"`, `""`)+`"`).Scan(&count); err != nil {
			return c, fmt.Errorf("census: count %s: %w", n, classify(err))
		}
		c.Tables[n] = count
	}
	mrows, err := tx.QueryContext(ctx, "SELECT name FROM knex_migrations ORDER BY id")
	if err != nil {
		return c, fmt.Errorf("census: toolbox migrations: %w", classify(err))
	}
	for mrows.Next() {
		var n string
		if err := mrows.Scan(&n); err != nil {
			mrows.Close()
			return c, fmt.Errorf("census: %w", classify(err))
		}
		c.ToolboxMigrations = append(c.ToolboxMigrations, n)
	}
	if err := mrows.Close(); err != nil {
		return c, fmt.Errorf("census: %w", classify(err))
	}
	if _, ok := c.Tables[ledgerTable]; ok {
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM "+ledgerTable).Scan(&c.WalletsyncVersion); err != nil {
			return c, fmt.Errorf("census: walletsync migrations: %w", classify(err))
		}
	}
	return c, nil
}
