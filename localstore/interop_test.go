package localstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// These tests hold walletsync's store against @bsv/wallet-toolbox 2.1.26 itself.

type peerOpen struct {
	MigrationsBefore int             `json:"migrationsBefore"`
	MigrationsAfter  int             `json:"migrationsAfter"`
	Settings         wallet.Settings `json:"settings"`
}

// pagedDump reads every table of the user through a snapshot view, in the peer's form.
func pagedDump(tb testing.TB, s *Store, identity string) toolboxpeer.Dump {
	tb.Helper()
	v := openView(tb, s, SnapshotOptions{})
	defer v.Close()
	d := toolboxpeer.Dump{}
	for _, t := range wallet.AllTables {
		d[string(t.Name)] = toolboxpeer.DumpRows(t, readAllSplittingBigRows(tb, v, t.Name, identity, wallet.Limits{Rows: 7}))
	}
	return d
}

func compareDumps(tb testing.TB, got, want toolboxpeer.Dump) {
	tb.Helper()
	for _, t := range wallet.AllTables {
		g, w := got[string(t.Name)], want[string(t.Name)]
		if len(g) != len(w) {
			tb.Errorf("%s: %d rows, want %d", t.Name, len(g), len(w))
			continue
		}
		for i := range g {
			if !reflect.DeepEqual(g[i], w[i]) {
				tb.Errorf("%s row %d:\n got  %v\n want %v", t.Name, i, g[i], w[i])
				break
			}
		}
	}
}

func TestInterop_ToolboxOpensWalletsyncStore(t *testing.T) {
	for _, f := range []Fixture{FixtureSmall, FixtureToolbox} {
		t.Run(string(f), func(t *testing.T) {
			s := mustCreate(t, Options{})
			id := mustSeed(t, s, f, 11)
			want := pagedDump(t, s, id)
			path := s.Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// The toolbox finds nothing to migrate and reads walletsync's settings.
			var opened peerOpen
			toolboxpeer.Run(t, &opened, "open", "--db", path)
			if opened.MigrationsBefore != len(ToolboxMigrations()) || opened.MigrationsAfter != len(ToolboxMigrations()) {
				t.Fatalf("toolbox migrate() on a walletsync store: %d migrations before, %d after", opened.MigrationsBefore, opened.MigrationsAfter)
			}
			if opened.Settings.Chain != wallet.ChainTest || opened.Settings.DBType != "SQLite" {
				t.Fatalf("toolbox read settings %+v", opened.Settings)
			}
			// Every row reads back through the toolbox's own finders, field for field.
			var got toolboxpeer.Dump
			toolboxpeer.Run(t, &got, "dump", "--db", path, "--identity", id)
			compareDumps(t, got, want)

			if f != FixtureSmall {
				return // the toolbox's own sync of 10,000 labels takes minutes; small proves the point
			}
			// A toolbox sync from the walletsync store into a toolbox store completes, and
			// walletsync reads the result with every row present.
			dst := filepath.Join(t.TempDir(), "ts-backup.sqlite")
			toolboxpeer.Run(t, nil, "create", "--db", dst, "--chain", "test", "--sik", FixtureIdentity(77), "--name", "ts backup")
			var res struct{ Chunks, Inserts int }
			toolboxpeer.Run(t, &res, "sync", "--from", path, "--to", dst, "--identity", id)
			if res.Chunks < 2 || res.Inserts == 0 {
				t.Fatalf("toolbox sync from a walletsync store: %+v", res)
			}
			b, err := Open(context.Background(), dst, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			synced := pagedDump(t, b, id)
			for _, tb := range wallet.SyncOrder {
				if len(synced[string(tb.Name)]) != len(want[string(tb.Name)]) {
					t.Errorf("%s: %d rows reached the toolbox store, want %d", tb.Name, len(synced[string(tb.Name)]), len(want[string(tb.Name)]))
				}
			}
		})
	}
}

func TestInterop_WalletsyncOpensToolboxStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ts.sqlite")
	id := FixtureIdentity(5)
	toolboxpeer.Run(t, nil, "create", "--db", path, "--chain", "test", "--sik", FixtureIdentity(6), "--name", "ts store")
	toolboxpeer.Run(t, nil, "fill", "--db", path, "--identity", id, "--seed", "3", "--labels", "300")
	var want toolboxpeer.Dump
	toolboxpeer.Run(t, &want, "dump", "--db", path, "--identity", id)

	// Read-only first: walletsync pages a pure toolbox file without writing to it.
	ro, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	compareDumps(t, pagedDump(t, ro, id), want)
	ro.Close()

	// Then read-write: walletsync adds its own objects and nothing else changes.
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	compareDumps(t, pagedDump(t, s, id), want)
	s.Close()
	var opened peerOpen
	toolboxpeer.Run(t, &opened, "open", "--db", path)
	if opened.MigrationsBefore != len(ToolboxMigrations()) || opened.MigrationsAfter != opened.MigrationsBefore {
		t.Fatalf("toolbox migrate() after walletsync opened its store: %+v", opened)
	}
	var again toolboxpeer.Dump
	toolboxpeer.Run(t, &again, "dump", "--db", path, "--identity", id)
	compareDumps(t, again, want)
}

func TestInterop_SchemaIdenticalToToolbox(t *testing.T) {
	tsPath := filepath.Join(t.TempDir(), "ts.sqlite")
	toolboxpeer.Run(t, nil, "create", "--db", tsPath, "--chain", "test", "--sik", FixtureIdentity(6), "--name", "ts")
	s := mustCreate(t, Options{})
	objects := func(db *sql.DB) map[string]string {
		rows, err := db.Query("SELECT type || ' ' || name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'walletsync_%'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		}
		return m
	}
	ts, ours := objects(rawDB(t, tsPath)), objects(s.readDB)
	if len(ts) != len(ours) {
		t.Errorf("toolbox file has %d schema objects, walletsync's %d", len(ts), len(ours))
	}
	for k, v := range ts {
		if ours[k] != v {
			t.Errorf("%s:\n toolbox    %s\n walletsync %s", k, v, ours[k])
		}
	}
}
