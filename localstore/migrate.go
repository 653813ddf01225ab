package localstore

import (
	"context"
	"database/sql"
	"fmt"

	"walletsync/wallet"
)

// ownPrefix marks every object walletsync adds to a wallet file. Everything else in the
// file belongs to the toolbox and is never altered.
const ownPrefix = "walletsync_"

// ledgerTable records which walletsync migrations a file has; it is forward-only.
const ledgerTable = ownPrefix + "migrations"

// migration is one forward-only step of walletsync's own schema. Each step runs in its
// own transaction together with its ledger row, so an interrupted step leaves no trace and
// the next Open applies it again.
type migration struct {
	name    string
	ddl     string
	objects map[string]string // what the step creates: name -> sqlite_master type
}

// migrations is walletsync's schema history. Append only: never edit a step that has
// shipped, since files in the field already record it.
var migrations = []migration{
	{
		name: "change journal",
		ddl: `
CREATE TABLE ` + ledgerTable + ` (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at TEXT NOT NULL
);
CREATE TABLE ` + journalTable + ` (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	tbl TEXT NOT NULL,
	k1 NOT NULL,
	k2,
	op TEXT NOT NULL
);
CREATE TABLE ` + journalStateTable + ` (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	complete_after INTEGER NOT NULL,
	pruned_through INTEGER NOT NULL
);
INSERT INTO ` + journalStateTable + ` (id, complete_after, pruned_through) VALUES (1, 0, 0);
CREATE TABLE ` + journalConsumersTable + ` (
	consumer TEXT PRIMARY KEY,
	acked_seq INTEGER NOT NULL,
	updated_at TEXT NOT NULL
) WITHOUT ROWID;
` + scopeIndexDDL + ";\n" + journalTriggersDDL(),
		objects: mergeObjects(map[string]string{
			ledgerTable:           "table",
			journalTable:          "table",
			journalStateTable:     "table",
			journalConsumersTable: "table",
			scopeIndex:            "index",
		}, journalTriggerObjects()),
	},
	{
		name: "sync checkpoints and id maps",
		ddl: `
CREATE TABLE ` + checkpointTable + ` (
	source_storage TEXT NOT NULL,
	identity_key TEXT NOT NULL,
	seq INTEGER NOT NULL,
	mode TEXT NOT NULL,
	since INTEGER NOT NULL,
	high_water INTEGER NOT NULL,
	table_pos INTEGER NOT NULL,
	cursor TEXT NOT NULL,
	view TEXT NOT NULL,
	done INTEGER NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (source_storage, identity_key)
) WITHOUT ROWID;
CREATE TABLE ` + idMapTable + ` (
	source_storage TEXT NOT NULL,
	tbl TEXT NOT NULL,
	source_id INTEGER NOT NULL,
	local_id INTEGER NOT NULL,
	PRIMARY KEY (source_storage, tbl, source_id)
) WITHOUT ROWID;
CREATE INDEX ` + journalTableIndex + ` ON ` + journalTable + ` (tbl, seq);
`,
		objects: map[string]string{checkpointTable: "table", idMapTable: "table", journalTableIndex: "index"},
	},
	{
		name: "import journal",
		ddl: `
CREATE TABLE ` + importsTable + ` (
	digest TEXT PRIMARY KEY,
	mode TEXT NOT NULL,
	state TEXT NOT NULL,
	identity_key TEXT NOT NULL,
	source_storage TEXT NOT NULL,
	target_storage TEXT NOT NULL,
	session_storage TEXT NOT NULL,
	started_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	inserts INTEGER NOT NULL,
	updates INTEGER NOT NULL
) WITHOUT ROWID;
`,
		objects: map[string]string{importsTable: "table"},
	},
	{
		name:    "import undo log",
		ddl:     undoDDL(),
		objects: map[string]string{undoTable: "table", undoIndex: "index"},
	},
	{
		// A run that resumes an unfinished one in a newer view catches the tables before its
		// position up first; these record how far, so that a catch-up cut short by a kill
		// resumes too (see wallet.Checkpoint).
		name: "checkpoint catch-up",
		ddl: `
ALTER TABLE ` + checkpointTable + ` ADD COLUMN catch_up_table INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + checkpointTable + ` ADD COLUMN catch_up_cursor TEXT NOT NULL DEFAULT '';
ALTER TABLE ` + checkpointTable + ` ADD COLUMN catch_up_high_water INTEGER NOT NULL DEFAULT 0;
`,
	},
}

// expectedObjects lists the walletsync objects a file at the given version may hold.
func expectedObjects(version int) map[string]string {
	out := map[string]string{}
	for _, m := range migrations[:min(version, len(migrations))] {
		for name, typ := range m.objects {
			out[name] = typ
		}
	}
	return out
}

func mergeObjects(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// migrate applies every walletsync migration above version, one transaction each.
func (s *Store) migrate(ctx context.Context, version int) error {
	for v := version + 1; v <= len(migrations); v++ {
		m := migrations[v-1]
		// A migration is a commit into the wallet app's file: only while the app is in no
		// transaction (see whenQuiet), which a first open of a wallet in use waits for.
		err := s.quietWriteTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.ddl); err != nil {
				return classify(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+ledgerTable+" (version, name, applied_at) VALUES (?, ?, ?)", v, m.name, wallet.FormatTime(wallet.Now())); err != nil {
				return classify(err)
			}
			if s.opts.afterMigration != nil {
				return s.opts.afterMigration(v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("apply walletsync migration %d (%s): %w", v, m.name, err)
		}
		s.log.Info("applied walletsync migration", "version", v, "name", m.name)
	}
	return nil
}
