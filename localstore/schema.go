package localstore

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"walletsync/wallet"
)

// toolboxDDL is the schema @bsv/wallet-toolbox 2.1.26 leaves after its 14 migrations,
// statement for statement as sqlite_master holds it in a file the toolbox made.
//
//go:embed schema/toolbox.sql
var toolboxDDL string

// ToolboxMigrations returns the names Knex records in knex_migrations when the toolbox has
// migrated a store, in order, in a new slice the caller may keep or alter. A store whose
// ledger holds all of them is one the toolbox opens without migrating; one that holds a name
// not listed here was written by a newer toolbox and is refused.
func ToolboxMigrations() []string {
	return []string{
		"2024-12-26-001 initial migration",
		"2025-01-21-001 add activeStorage to users",
		"2025-02-22-001 nonNULL activeStorage",
		"2025-02-28-001 derivations to 200",
		"2025-03-01-001 reset req history",
		"2025-03-03-001 descriptions to 2000",
		"2025-05-13-001 add monitor events event index",
		"2025-09-06-001 add proven txs blockHash index",
		"2025-10-13-001 add outputs spendable index",
		"2025-10-18-001 add transactions txid index",
		"2025-10-18-002 add proven_tx_reqs txid index",
		"2026-02-27-001 add listOutputs path indexes",
		"2026-02-27-002 add createAction path indexes",
		"2026-04-30-001 add wasBroadcast and rebroadcastAttempts to proven_tx_reqs",
	}
}

// maxOutputScript is the value the toolbox's migrate() writes into settings.
const maxOutputScript = 1024

// createToolboxSchema writes the toolbox tables, indexes and Knex ledger into an empty
// database inside tx, so that the toolbox finds nothing to migrate.
func createToolboxSchema(ctx context.Context, tx *sql.Tx, settings wallet.Settings) error {
	if _, err := tx.ExecContext(ctx, toolboxDDL); err != nil {
		return fmt.Errorf("create toolbox tables: %w", classify(err))
	}
	// Knex records migration_time as epoch milliseconds and runs all pending migrations of
	// one migrate() call in batch 1; it inserts the unlocked lock row itself.
	now := time.Now().UnixMilli()
	for i, name := range ToolboxMigrations() {
		if _, err := tx.ExecContext(ctx, "INSERT INTO knex_migrations (name, batch, migration_time) VALUES (?, 1, ?)", name, now+int64(i)); err != nil {
			return fmt.Errorf("record toolbox migration: %w", classify(err))
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO knex_migrations_lock (is_locked) VALUES (0)"); err != nil {
		return fmt.Errorf("record toolbox migration lock: %w", classify(err))
	}
	// Like the toolbox, leave created_at/updated_at to the column defaults here: the
	// settings row is the one place where it keeps SQLite's "YYYY-MM-DD HH:MM:SS" form.
	_, err := tx.ExecContext(ctx, `INSERT INTO settings (storageIdentityKey, storageName, chain, dbtype, maxOutputScript) VALUES (?, ?, ?, 'SQLite', ?)`,
		settings.StorageIdentityKey, settings.StorageName, string(settings.Chain), maxOutputScript)
	if err != nil {
		return fmt.Errorf("write settings: %w", classify(err))
	}
	return nil
}

// schemaState is what a read-only inspection of a file found.
type schemaState struct {
	objects           map[string]string // walletsync-owned name -> type
	walletsyncVersion int               // highest applied walletsync migration, 0 if none
}

// inspect reads the schema of an existing store without writing anything, and refuses a
// store this binary must not touch: not a toolbox store, a toolbox schema other than the
// 2.1.26 one, a walletsync schema newer than this binary, or unknown walletsync objects.
func inspect(ctx context.Context, db *sql.DB, path string) (schemaState, error) {
	st := schemaState{objects: map[string]string{}}
	refuse := func(sentinel error, format string, args ...any) (schemaState, error) {
		return st, &wallet.SchemaError{Path: path, Reason: fmt.Sprintf(format, args...), Err: sentinel}
	}
	rows, err := db.QueryContext(ctx, "SELECT type, name FROM sqlite_master")
	if err != nil {
		return st, fmt.Errorf("read schema: %w", classify(err))
	}
	toolboxTables := map[string]bool{}
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return st, fmt.Errorf("read schema: %w", classify(err))
		}
		if strings.HasPrefix(name, ownPrefix) {
			st.objects[name] = typ
		} else if typ == "table" {
			toolboxTables[name] = true
		}
	}
	if err := rows.Close(); err != nil {
		return st, fmt.Errorf("read schema: %w", classify(err))
	}
	for _, t := range append(wallet.AllTables, &wallet.Table{Name: "settings"}, &wallet.Table{Name: "knex_migrations"}) {
		if !toolboxTables[string(t.Name)] {
			return refuse(wallet.ErrUnknownSchema, "not a wallet-toolbox store: table %s is missing", t.Name)
		}
	}

	names, err := queryStrings(ctx, db, "SELECT name FROM knex_migrations ORDER BY id")
	if err != nil {
		return st, fmt.Errorf("read toolbox migrations: %w", err)
	}
	ledger := ToolboxMigrations()
	known := map[string]bool{}
	for _, n := range ledger {
		known[n] = true
	}
	for _, n := range names {
		if !known[n] {
			return refuse(wallet.ErrSchemaTooNew, "toolbox migration %q is newer than this walletsync knows", n)
		}
	}
	if len(names) != len(ledger) {
		return refuse(wallet.ErrUnknownSchema, "toolbox schema has %d of %d migrations; open it once with @bsv/wallet-toolbox 2.1.26 to bring it up to date", len(names), len(ledger))
	}

	if st.objects[ledgerTable] == "table" {
		if err := db.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM "+ledgerTable).Scan(&st.walletsyncVersion); err != nil {
			return st, fmt.Errorf("read walletsync migrations: %w", classify(err))
		}
	}
	if st.walletsyncVersion > len(migrations) {
		return refuse(wallet.ErrSchemaTooNew, "walletsync schema version %d is newer than this binary's %d", st.walletsyncVersion, len(migrations))
	}
	expected := expectedObjects(st.walletsyncVersion)
	for name, typ := range st.objects {
		if expected[name] != typ {
			return refuse(wallet.ErrUnknownSchema, "unrecognised %s %q in walletsync's namespace", typ, name)
		}
	}
	return st, nil
}

func queryStrings(ctx context.Context, db interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, classify(err)
		}
		out = append(out, s)
	}
	return out, classify(rows.Err())
}
