package localstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"

	"walletsync/brc40"
	"walletsync/wallet"
)

// Imports. A portable backup goes into a wallet in steps, each of them one transaction: the
// validated document is loaded into a staging store (LoadDocument), then either copied into
// an empty wallet with its ids (RestoreFrom), or merged page by page through Commit and
// finished (CompleteMerge). The import journal, walletsync's table in the wallet, records
// each document by the digest of its plaintext, so that a crashed import resumes and a
// repeated one does nothing.
const importsTable = ownPrefix + "imports"

// ImportRecord returns the import journal's entry for the document with the given digest,
// or an error matching wallet.ErrNotFound. A store opened read-only whose file predates the
// journal has no entries.
func (s *Store) ImportRecord(ctx context.Context, digest string) (wallet.ImportRecord, error) {
	var n int
	if err := s.readDB.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", importsTable).Scan(&n); err != nil {
		return wallet.ImportRecord{}, fmt.Errorf("read import journal: %w", classify(err))
	}
	if n == 0 {
		return wallet.ImportRecord{}, fmt.Errorf("import %s: %w", wallet.ShortKey(digest, 16), wallet.ErrNotFound)
	}
	rec, err := readImportRecord(ctx, s.readDB, digest)
	if err != nil {
		return rec, fmt.Errorf("read import journal: %w", err)
	}
	return rec, nil
}

// PutImportRecord writes rec into the import journal, replacing the entry with its digest.
func (s *Store) PutImportRecord(ctx context.Context, rec wallet.ImportRecord) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error { return putImportRecord(ctx, tx, rec) })
	if err != nil {
		return fmt.Errorf("write import journal: %w", err)
	}
	return nil
}

const importColumns = `digest, mode, state, identity_key, source_storage, target_storage, session_storage,
		started_at, updated_at, inserts, updates`

func readImportRecord(ctx context.Context, q queryer, digest string) (wallet.ImportRecord, error) {
	rec, err := scanImportRecord(q.QueryRowContext(ctx, `SELECT `+importColumns+` FROM `+importsTable+` WHERE digest = ?`, digest))
	if errors.Is(err, sql.ErrNoRows) {
		return rec, fmt.Errorf("import %s: %w", wallet.ShortKey(digest, 16), wallet.ErrNotFound)
	}
	return rec, err
}

func scanImportRecord(row interface{ Scan(...any) error }) (wallet.ImportRecord, error) {
	var rec wallet.ImportRecord
	var mode, state, started, updated string
	err := row.Scan(&rec.Digest, &mode, &state, &rec.IdentityKey, &rec.Source, &rec.Target, &rec.Session, &started, &updated, &rec.Inserts, &rec.Updates)
	if err != nil {
		return rec, classify(err)
	}
	rec.Mode, rec.State = wallet.ImportMode(mode), wallet.ImportState(state)
	if rec.StartedAt, err = wallet.ParseTime(started); err == nil {
		rec.UpdatedAt, err = wallet.ParseTime(updated)
	}
	return rec, err
}

// UnfinishedImports returns the import journal's entries that are not done, oldest first:
// at most one merging (see ImportInProgress), and any number staged (the wallet holds
// nothing of those).
func (s *Store) UnfinishedImports(ctx context.Context) ([]wallet.ImportRecord, error) {
	recs, err := unfinishedImports(ctx, s.readDB, "state <> ?", string(wallet.ImportDone))
	if err != nil {
		return nil, fmt.Errorf("read import journal: %w", err)
	}
	return recs, nil
}

func unfinishedImports(ctx context.Context, q interface {
	queryer
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, where string, args ...any) ([]wallet.ImportRecord, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", importsTable).Scan(&n); err != nil || n == 0 {
		return nil, classify(err) // a file that predates the journal has no imports
	}
	rs, err := q.QueryContext(ctx, "SELECT "+importColumns+" FROM "+importsTable+" WHERE "+where+" ORDER BY started_at", args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rs.Close()
	var out []wallet.ImportRecord
	for rs.Next() {
		rec, err := scanImportRecord(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, classify(rs.Err())
}

// ImportInProgress returns a *wallet.ImportInProgressError when a merge into the store
// started and did not finish: the wallet then holds part of a backup, which no sync, export
// or other import may see or spread until the person finishes the merge (imports the same
// file again) or abandons it (AbandonImport). It returns nil otherwise.
func (s *Store) ImportInProgress(ctx context.Context) error {
	return importInProgress(ctx, s.readDB, s.path, "")
}

// importInProgress is ImportInProgress, read through q; the merge whose sync session comes
// from the source storage session (the merge itself) is let through.
func importInProgress(ctx context.Context, q interface {
	queryer
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, path, session string) error {
	recs, err := unfinishedImports(ctx, q, "state = ? AND session_storage <> ?", string(wallet.ImportMerging), session)
	if err != nil {
		return fmt.Errorf("read import journal: %w", err)
	}
	if len(recs) > 0 {
		return &wallet.ImportInProgressError{Path: path, Record: recs[0]}
	}
	return nil
}

// mergingImport returns the undo log of the import whose merge the sync session from the
// source storage session is, or nil when that session is no import's.
func mergingImport(ctx context.Context, tx *sql.Tx, session string) (*undoLog, error) {
	var digest string
	err := tx.QueryRowContext(ctx, "SELECT digest FROM "+importsTable+" WHERE state = ? AND session_storage = ?", string(wallet.ImportMerging), session).Scan(&digest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, classify(err)
	}
	return &undoLog{digest: digest}, nil
}

// AbandonImport takes back the unfinished import of the document digest, in one
// transaction: what its merge wrote is undone from the undo log (the rows it inserted go,
// the rows it updated get their previous values, the AUTOINCREMENT counters go back), its
// session's checkpoint and id maps go, and so does its journal entry, so the toolbox's
// tables and walletsync's import state are exactly as before the import started. (The
// change journal keeps the changes and their undoing, which a sync destination needs.) An
// import that is done cannot be abandoned (wallet.ErrInvalidArgument); one the journal does
// not hold fails with wallet.ErrNotFound. Once another program (the wallet app) has
// written the wallet after the merge's first write, or the change journal cannot tell, it
// undoes nothing and fails with a *wallet.WalletChangedError: the undo would overwrite or
// orphan those writes, while finishing the import keeps them.
func (s *Store) AbandonImport(ctx context.Context, digest string) (wallet.ImportRecord, error) {
	var rec wallet.ImportRecord
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		if rec, err = readImportRecord(ctx, tx, digest); err != nil {
			return err
		}
		if rec.State == wallet.ImportDone {
			return fmt.Errorf("the import of %s is done; only an unfinished one can be abandoned: %w", wallet.ShortKey(digest, 16), wallet.ErrInvalidArgument)
		}
		// Undoing the merge puts back the rows as they were before it; a write the wallet
		// app made since would be lost with them, so the person finishes the import instead.
		changes, err := foreignWrites(ctx, tx, digest)
		if err != nil {
			return err
		}
		if changes != 0 {
			return &wallet.WalletChangedError{Path: s.path, Changes: changes}
		}
		if err := replayUndo(ctx, tx, digest); err != nil {
			return err
		}
		if err := forgetSession(ctx, tx, rec.Session); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM "+importsTable+" WHERE digest = ?", digest)
		return classify(err)
	})
	if err != nil {
		return rec, fmt.Errorf("abandon import %s: %w", wallet.ShortKey(digest, 16), err)
	}
	return rec, nil
}

// Identities returns the identity keys of the store's users, in the order they came.
func (s *Store) Identities(ctx context.Context) ([]string, error) {
	keys, err := queryStrings(ctx, s.readDB, "SELECT identityKey FROM users ORDER BY userId")
	if err != nil {
		return nil, fmt.Errorf("read identities: %w", err)
	}
	return keys, nil
}

func putImportRecord(ctx context.Context, tx *sql.Tx, rec wallet.ImportRecord) error {
	if rec.Digest == "" || rec.IdentityKey == "" {
		return fmt.Errorf("import record without a digest or an identity: %w", wallet.ErrInvalidArgument)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+importsTable+`
		(digest, mode, state, identity_key, source_storage, target_storage, session_storage, started_at, updated_at, inserts, updates)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (digest) DO UPDATE SET mode = excluded.mode, state = excluded.state, identity_key = excluded.identity_key,
		source_storage = excluded.source_storage, target_storage = excluded.target_storage, session_storage = excluded.session_storage,
		started_at = excluded.started_at, updated_at = excluded.updated_at, inserts = excluded.inserts, updates = excluded.updates`,
		rec.Digest, string(rec.Mode), string(rec.State), rec.IdentityKey, rec.Source, rec.Target, rec.Session,
		wallet.FormatTime(rec.StartedAt), wallet.FormatTime(rec.UpdatedAt), rec.Inserts, rec.Updates)
	return classify(err)
}

// emptyTables are the tables a restore target must not have rows in: the toolbox's
// assertRestoreTargetEmpty counts every table but settings, monitor_events included.
var emptyTables = append(tableNames(wallet.AllTables), "monitor_events")

func tableNames(tables []*wallet.Table) []string {
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = string(t.Name)
	}
	return out
}

// CheckEmpty returns nil when the store holds no rows but its settings (the toolbox's test
// before a restore, monitor_events included), and otherwise a *wallet.NotEmptyError naming
// the first table with rows.
func (s *Store) CheckEmpty(ctx context.Context) error {
	if err := checkEmpty(ctx, s.readDB, s.path); err != nil {
		return fmt.Errorf("check empty: %w", err)
	}
	return nil
}

func checkEmpty(ctx context.Context, q queryer, path string) error {
	for _, name := range emptyTables {
		var any bool
		if err := q.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+quoteIdent(name)+")").Scan(&any); err != nil {
			return classify(err)
		}
		if any {
			var n int64
			if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(name)).Scan(&n); err != nil {
				return classify(err)
			}
			return &wallet.NotEmptyError{Path: path, Table: name, Rows: n}
		}
	}
	return nil
}

// LoadDocument fills this store, which must be empty (CheckEmpty), with the rows of one
// document, keeping their ids: the staging side of an import. fill calls put once per row, in
// any table order (a BRC-38 document lists rows before the rows they refer to), and rec goes
// into the import journal in the same transaction. Nothing is committed unless fill returns
// nil: a document that fails validation half-way leaves the store as empty as it was. A row
// that breaks the schema (a duplicate in a unique index, a reference to nothing) fails with
// an error matching wallet.ErrConstraint.
//
// Foreign keys are checked once, over the whole load, before the commit, not row by row:
// with children arriving before their parents, SQLite would otherwise look for a new
// parent's children in every child table, and where the child column has no index
// (proven_tx_reqs.provenTxId, certificate_fields.certificateId) that is a scan per parent
// row, which made a large wallet's import quadratic.
func (s *Store) LoadDocument(ctx context.Context, rec wallet.ImportRecord, fill func(put func(t *wallet.Table, r wallet.Row) error) error) error {
	err := s.writeConn(ctx, func(conn *sql.Conn) error {
		// foreign_keys cannot change inside a transaction, so it is set on the writer
		// connection around it, and set back whatever happens.
		if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return classify(err)
		}
		defer s.resetConn(context.WithoutCancel(ctx), conn, "PRAGMA foreign_keys = ON")
		return inTx(ctx, conn, func(tx *sql.Tx) error {
			if err := checkEmpty(ctx, tx, s.path); err != nil {
				return err
			}
			w := newRowWriter(tx)
			defer w.close()
			err := fill(func(t *wallet.Table, r wallet.Row) error {
				_, err := w.insert(ctx, t, r, true)
				return err
			})
			if err != nil {
				return err
			}
			problems, err := foreignKeyProblems(ctx, tx)
			if err != nil {
				return err
			}
			if len(problems) > 0 {
				p := problems[0]
				return fmt.Errorf("%d rows refer to nothing, the first %s row %d (to %s): %w", len(problems), p.Table, p.RowID, p.Parent, wallet.ErrConstraint)
			}
			return putImportRecord(ctx, tx, rec)
		})
	})
	if err != nil {
		return fmt.Errorf("load document into %s: %w", s.path, err)
	}
	return nil
}

// RestoreFrom copies every row of the staging store at stagingPath into this store with its
// ids, in one transaction that also writes rec into the import journal: the toolbox's
// restoreBRC38 into an existing wallet. It refuses, writing nothing, a store that is not
// empty (*wallet.NotEmptyError) or that is on another chain than the staging store
// (*wallet.ChainError).
func (s *Store) RestoreFrom(ctx context.Context, stagingPath string, rec wallet.ImportRecord) error {
	if err := s.awaitQuiet(ctx); err != nil { // as a page commit does: the app may have the file open
		return fmt.Errorf("restore into %s: %w", s.path, err)
	}
	err := s.attachTx(ctx, stagingPath, func(tx *sql.Tx) error {
		if err := checkEmpty(ctx, tx, s.path); err != nil {
			return err
		}
		var src, dst string
		if err := tx.QueryRowContext(ctx, "SELECT (SELECT chain FROM src.settings LIMIT 1), (SELECT chain FROM main.settings LIMIT 1)").Scan(&src, &dst); err != nil {
			return classify(err)
		}
		if err := wallet.CheckSameChain(wallet.Chain(src), wallet.Chain(dst)); err != nil {
			return err
		}
		if _, err := copyTables(ctx, tx, wallet.AllTables); err != nil {
			return err
		}
		return putImportRecord(ctx, tx, rec)
	})
	if err != nil {
		return fmt.Errorf("restore into %s: %w", s.path, err)
	}
	return nil
}

// SaveAs writes a compact copy of the store to path, which must not exist (fs.ErrExist), so
// that path holds either nothing or the whole copy, whatever happens: the copy is a
// consistent snapshot (VACUUM INTO) made under a temporary name in path's folder, switched to
// WAL, synced, moved into place without replacing anything, and the folder synced. The writer
// lock of path is held from before the temporary file is made until the copy is in place, so
// a second walletsync saving or creating the same path at once fails with a
// *wallet.LockedError naming this process. A restore into a new wallet file moves its
// staging store into place so.
func (s *Store) SaveAs(ctx context.Context, path string) (err error) {
	if s.writeDB == nil {
		return fmt.Errorf("save as %s: %w", path, wallet.ErrReadOnly)
	}
	lock, tmp, err := reserveNew(path)
	if err != nil {
		return fmt.Errorf("save as %s: %w", path, err)
	}
	defer func() { err = lock.releaseJoin(err) }()
	defer os.Remove(tmp) // a no-op after the move
	// VACUUM INTO writes only into an empty file, which reserveNew made.
	if _, err := s.writeDB.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return fmt.Errorf("save as %s: %w", path, classify(err))
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("save as %s: %w", path, classify(err))
	}
	if err := setWAL(ctx, tmp); err != nil {
		return fmt.Errorf("save as %s: %w", path, err)
	}
	if err := renameNew(tmp, path); err != nil {
		return fmt.Errorf("save as %s: %w", path, err)
	}
	return nil
}

// setWAL switches the closed file at path to WAL, as Open would on first use, so that a
// copy is a wallet file like any other and opening it changes nothing.
func setWAL(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", dsn(path, DefaultBusyTimeout, "_pragma=journal_mode(WAL)"))
	if err != nil {
		return err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return classify(err)
	}
	return classify(db.Close())
}

// CompleteMerge finishes a merge whose rows walletsync's page sessions brought from the
// staging store at stagingPath (session rec.Session), leaving in sync_states what the
// toolbox's mergeBRC38 leaves, and writes rec into the import journal, all in one
// transaction:
//
//   - the producer's sync state (findOrInsertSyncStateAuth for from): its sync map takes
//     every id map of the session (the mapping the merge made wins over an older one), each
//     entity's maxUpdated_at rises to the latest updated_at of its staged rows, and the state
//     is then completed as the toolbox's closing empty chunk completes it (when becomes the
//     latest maxUpdated_at, every count 0);
//   - every staged sync state, re-keyed to the user, the values of its id maps mapped through
//     the producer's sync map where it has them, is upserted by (userId, storageIdentityKey,
//     storageName): inserted with a new id, or written over the existing row's columns (those
//     it does not hold are left alone), keeping the existing sync map when the row is the
//     producer's own. A staged refNum (unique in the store) that another of the store's sync
//     states holds is replaced by a fresh one, where the toolbox would fail the import after
//     merging its rows.
//
// The session's checkpoint and id maps go too: nothing reads them again. It returns the
// staged sync states inserted and updated, which is what the toolbox counts of them, and adds
// them to rec's Inserts and Updates before it records rec.
func (s *Store) CompleteMerge(ctx context.Context, stagingPath string, rec wallet.ImportRecord, from wallet.Settings) (wallet.MergeCounts, error) {
	var counts wallet.MergeCounts
	err := s.attachTx(ctx, stagingPath, func(tx *sql.Tx) error {
		userID, err := lookupUser(ctx, tx, rec.IdentityKey)
		if err != nil {
			return err
		}
		producer, err := completeProducerState(ctx, tx, userID, rec.Session, from)
		if err != nil {
			return err
		}
		if counts, err = upsertStagedSyncStates(ctx, tx, userID, producer); err != nil {
			return err
		}
		rec.Inserts += counts.Inserts
		rec.Updates += counts.Updates
		if err := forgetSession(ctx, tx, rec.Session); err != nil {
			return err
		}
		if err := dropUndo(ctx, tx, rec.Digest); err != nil {
			return err
		}
		return putImportRecord(ctx, tx, rec)
	})
	if err != nil {
		return counts, fmt.Errorf("complete merge into %s: %w", s.path, err)
	}
	return counts, nil
}

// ForgetSession drops the durable checkpoint and the id maps that sync sessions from the
// source storage sourceStorage left in this store: a source that never comes back (the
// staging database of an import, replaced by a new one when a rerun had to stage again).
// The next session from that source, if any, traverses everything again.
func (s *Store) ForgetSession(ctx context.Context, sourceStorage string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error { return forgetSession(ctx, tx, sourceStorage) })
	if err != nil {
		return fmt.Errorf("forget sessions from %s: %w", wallet.ShortKey(sourceStorage, 16), err)
	}
	return nil
}

func forgetSession(ctx context.Context, tx *sql.Tx, sourceStorage string) error {
	for _, table := range []string{checkpointTable, idMapTable} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE source_storage = ?", sourceStorage); err != nil {
			return classify(err)
		}
	}
	return nil
}

// completeProducerState brings the producer's sync state to where mergeBRC38's two chunks
// leave it and returns it.
func completeProducerState(ctx context.Context, tx *sql.Tx, userID int64, session string, from wallet.Settings) (brc40.SyncState, error) {
	st, _, err := findOrInsertSyncState(ctx, tx, userID, from.StorageIdentityKey, from.StorageName)
	if err != nil {
		return st, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT tbl, source_id, local_id FROM "+idMapTable+" WHERE source_storage = ?", session)
	if err != nil {
		return st, classify(err)
	}
	for rows.Next() {
		var name string
		var src, local int64
		if err := rows.Scan(&name, &src, &local); err != nil {
			rows.Close()
			return st, classify(err)
		}
		t, err := wallet.LookupTable(wallet.TableName(name))
		if err != nil {
			rows.Close()
			return st, err
		}
		if e := st.SyncMap.Entity(t); e != nil {
			e.IDMap[src] = local
		}
	}
	if err := rows.Close(); err != nil {
		return st, classify(err)
	}
	for _, t := range wallet.Entities {
		var latestText sql.NullString
		if err := tx.QueryRowContext(ctx, "SELECT max(updated_at) FROM src."+quoteIdent(string(t.Name))).Scan(&latestText); err != nil {
			return st, classify(err)
		}
		if !latestText.Valid {
			continue
		}
		at, err := wallet.ParseTime(latestText.String)
		if err != nil {
			return st, err
		}
		e := st.SyncMap.Entity(t)
		e.MaxUpdatedAt = brc40.Latest(e.MaxUpdatedAt, at)
	}
	closing := brc40.SyncChunk{Rows: map[wallet.TableName][]wallet.Row{}}
	for _, t := range wallet.Entities {
		closing.Rows[t.Name] = []wallet.Row{}
	}
	if _, err := mergeChunk(ctx, tx, userID, &st, closing); err != nil {
		return st, err
	}
	st.UpdatedAt = wallet.Now()
	return st, saveSyncState(ctx, tx, st)
}

// sameSyncState reports whether two sync_states rows of one user hold the same state: every
// column but the id equal, the syncMap by what it holds (the toolbox and walletsync write
// its keys in different orders). Rewriting an identical state changes nothing, so an
// unchanged backup previews and imports as unchanged.
func sameSyncState(a, b wallet.Row) bool {
	t := wallet.SyncStates
	m := t.Col("syncMap")
	if !t.SameRow(a, b, t.ID, "userId", "syncMap") {
		return false
	}
	sa, _ := a[m].(string)
	sb, _ := b[m].(string)
	var ma, mb any
	return json.Unmarshal([]byte(sa), &ma) == nil && json.Unmarshal([]byte(sb), &mb) == nil && reflect.DeepEqual(ma, mb)
}

// upsertStagedSyncStates is the toolbox's mergeImportedSyncStates over the staged rows.
func upsertStagedSyncStates(ctx context.Context, tx *sql.Tx, userID int64, producer brc40.SyncState) (wallet.MergeCounts, error) {
	var counts wallet.MergeCounts
	t := wallet.SyncStates
	staged, err := queryRows(ctx, tx, t, "SELECT "+selectColumns(t)+" FROM src.sync_states AS t ORDER BY t.syncStateId")
	if err != nil {
		return counts, err
	}
	m := newMerger(ctx, tx, userID, nil, "")
	defer m.close()
	for _, r := range staged {
		st, err := brc40.SyncStateFromRow(r)
		if err != nil {
			return counts, err
		}
		for name, e := range st.SyncMap {
			for src, v := range e.IDMap {
				if local, ok := producer.SyncMap[name].IDMap[v]; ok {
					e.IDMap[src] = local
				}
			}
		}
		existing, err := readSyncStates(ctx, tx, "userId = ? AND storageIdentityKey = ? AND storageName = ?", userID, st.StorageIdentityKey, st.StorageName)
		if err != nil {
			return counts, err
		}
		st.UserID = userID
		var holder int64
		err = tx.QueryRowContext(ctx, "SELECT syncStateId FROM sync_states WHERE refNum = ?", st.RefNum).Scan(&holder)
		switch {
		case err == nil && (len(existing) == 0 || holder != existing[0].SyncStateID):
			if st.RefNum, err = brc40.NewRefNum(); err != nil {
				return counts, err
			}
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return counts, classify(err)
		}
		switch len(existing) {
		case 0:
			row, err := st.Row()
			if err != nil {
				return counts, err
			}
			if _, err := m.w.insert(ctx, t, row, false); err != nil {
				return counts, err
			}
			counts.Inserts++
		case 1:
			if st.StorageIdentityKey == producer.StorageIdentityKey && st.StorageName == producer.StorageName {
				st.SyncMap = existing[0].SyncMap
			}
			st.SyncStateID = existing[0].SyncStateID
			row, err := st.Row()
			if err != nil {
				return counts, err
			}
			stored, err := existing[0].Row()
			if err != nil {
				return counts, err
			}
			if sameSyncState(stored, row) {
				counts.Unchanged++
				continue
			}
			var cols []string
			for i, c := range t.Columns {
				if row[i] != nil && c.Name != t.ID {
					cols = append(cols, c.Name)
				}
			}
			if err := m.update(t, row, cols); err != nil {
				return counts, err
			}
			counts.Updates++
		default:
			return counts, fmt.Errorf("sync state for %s named %q: %w", wallet.ShortKey(st.StorageIdentityKey, 16), st.StorageName, wallet.ErrAmbiguousSyncState)
		}
	}
	return counts, nil
}

// attachTx runs fn in one write transaction on the writer's connection, with the wallet file
// at path attached as "src" for its duration. fn only reads src.
func (s *Store) attachTx(ctx context.Context, path string, fn func(tx *sql.Tx) error) error {
	if s.writeDB == nil {
		return fmt.Errorf("write %s: %w", s.path, wallet.ErrReadOnly)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("attach %s: %w", path, classify(err))
	}
	conn, err := s.writeDB.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS src", "file:"+(&url.URL{Path: path}).EscapedPath()); err != nil {
		return fmt.Errorf("attach %s: %w", path, classify(err))
	}
	defer s.resetConn(context.WithoutCancel(ctx), conn, "DETACH DATABASE src")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return classify(tx.Commit())
}

// copyTables copies every row of the given tables from src into main with their ids, in the
// order given (parents first), and returns how many rows it copied.
func copyTables(ctx context.Context, tx *sql.Tx, tables []*wallet.Table) (int64, error) {
	var rows int64
	for _, t := range tables {
		cols := joinQuoted("", t.ColumnNames())
		res, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO main.%s (%s) SELECT %s FROM src.%s", quoteIdent(string(t.Name)), cols, cols, quoteIdent(string(t.Name))))
		if err != nil {
			return rows, fmt.Errorf("copy %s: %w", t.Name, classify(err))
		}
		n, _ := res.RowsAffected()
		rows += n
	}
	return rows, nil
}
