package portable

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit/backuptest"
	"walletsync/wallet"
)

// emptyAndNull sets, in every synced table, one text or binary column value per column to
// the empty value (an empty string or a zero-length BLOB) in the table's last row and to NULL in the row
// before (where the column is nullable). It leaves alone what scopes or matches rows (keys,
// natural keys, txids, identity keys) and what the schema's CHECK constraints refuse empty.
// It returns the columns it changed.
func emptyAndNull(tb testing.TB, path string) []string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var changed []string
	for _, t := range wallet.AllTables {
		if t == wallet.Users {
			continue
		}
		for _, c := range t.Columns {
			if c.Kind != wallet.KindText && c.Kind != wallet.KindBlob || slices.Contains(t.Key, c.Name) ||
				slices.Contains(t.Natural, c.Name) || c.Name == "txid" || c.Name == "identityKey" {
				continue
			}
			empty := "''"
			if c.Kind == wallet.KindBlob {
				empty = "X''"
			}
			col, table := `"`+c.Name+`"`, `"`+string(t.Name)+`"`
			last := "(SELECT max(rowid) FROM " + table + ")"
			// A later updated_at makes the change win a BRC-40 merge too.
			if _, err := db.Exec("UPDATE " + table + " SET " + col + " = " + empty + ", updated_at = '2099-01-01T00:00:00.000Z' WHERE rowid = " + last); err != nil {
				continue // a CHECK constraint: the toolbox never stores it empty either
			}
			changed = append(changed, string(t.Name)+"."+c.Name)
			if c.Nullable {
				if _, err := db.Exec("UPDATE " + table + " SET " + col + " = NULL, updated_at = '2099-01-01T00:00:00.000Z' WHERE rowid = (SELECT max(rowid) FROM " + table + " WHERE rowid < " + last + ")"); err != nil {
					tb.Fatalf("set %s.%s NULL: %v", t.Name, c.Name, err)
				}
			}
		}
	}
	// The toolbox's export back-fills a script that is not scriptLength bytes long from the
	// raw transaction (see fillScript); with no length it keeps what is stored.
	if _, err := db.Exec("UPDATE outputs SET scriptLength = 0 WHERE lockingScript IS NULL OR length(lockingScript) = 0"); err != nil {
		tb.Fatal(err)
	}
	return changed
}

// shapes counts, for each column, the NULLs and the empty values by their SQLite type.
func shapes(tb testing.TB, path string, columns []string) map[string]string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	for _, tc := range columns {
		table, col, _ := strings.Cut(tc, ".")
		var nulls, emptyText, emptyBlob int
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE "%[1]s" IS NULL),
			count(*) FILTER (WHERE typeof("%[1]s") = 'text' AND length("%[1]s") = 0),
			count(*) FILTER (WHERE typeof("%[1]s") = 'blob' AND length("%[1]s") = 0) FROM "%[2]s"`, col, table)
		if err := db.QueryRow(q).Scan(&nulls, &emptyText, &emptyBlob); err != nil {
			tb.Fatalf("%s: %v", tc, err)
		}
		out[tc] = fmt.Sprintf("null=%d empty-text=%d empty-blob=%d", nulls, emptyText, emptyBlob)
	}
	return out
}

// TestImport_EmptyAndNullValuesStayExact: an empty text or binary value (a zero-length
// locking script, an empty description) arrives as an empty value and NULL as NULL, in every
// text and binary column, through a BRC-39 export, an import (staging, then the page sync
// into the new wallet) and the toolbox's own reading of the restored wallet.
func TestImport_EmptyAndNullValuesStayExact(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	columns := emptyAndNull(t, src)
	if !slices.Contains(columns, "outputs.lockingScript") {
		t.Fatalf("changed %v: want outputs.lockingScript among them", columns)
	}
	want := shapes(t, src, columns)
	if want["outputs.lockingScript"] != "null=1 empty-text=0 empty-blob=1" {
		t.Fatalf("source outputs.lockingScript: %s", want["outputs.lockingScript"])
	}

	file, _ := backupFile(t, src, identity)
	dst := filepath.Join(t.TempDir(), "restored.sqlite")
	if _, err := Import(context.Background(), file, importPassword, Target{Path: dst}, importOptions(t), nil); err != nil {
		t.Fatal(err)
	}
	if got := shapes(t, dst, columns); !reflect.DeepEqual(got, want) {
		for _, c := range columns {
			if got[c] != want[c] {
				t.Errorf("%s: restored %s, source %s", c, got[c], want[c])
			}
		}
	}

	// A merge into a wallet that holds the user's older rows moves the values through Go
	// (the page sync's merge), where a restore into a new file copies them in SQL.
	t.Run("Merge", func(t *testing.T) {
		into, _ := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
		opts := importOptions(t)
		opts.Mode = wallet.ImportMerge
		if _, err := Import(context.Background(), file, importPassword, Target{Path: into}, opts, nil); err != nil {
			t.Fatal(err)
		}
		var merged []string
		for _, c := range columns {
			table, col, _ := strings.Cut(c, ".")
			if tb, err := wallet.LookupTable(wallet.TableName(table)); err == nil && slices.Contains(tb.Merge, col) {
				merged = append(merged, c)
			}
		}
		if !slices.Contains(merged, "outputs.lockingScript") {
			t.Fatalf("merged columns %v lack outputs.lockingScript", merged)
		}
		got := shapes(t, into, merged)
		for _, c := range merged {
			if got[c] != want[c] {
				t.Errorf("%s: merged %s, source %s", c, got[c], want[c])
			}
		}
	})

	// The toolbox reads both wallets into the same document: the same values present, empty
	// and absent.
	g, w := backuptest.Generic(t, backuptest.ToolboxExport38(t, dst, identity)), backuptest.Generic(t, backuptest.ToolboxExport38(t, src, identity))
	for _, doc := range []map[string]any{g, w} {
		delete(doc, "sourceStorage")
		delete(doc["user"].(map[string]any), "activeStorage")
	}
	if !reflect.DeepEqual(g["tables"], w["tables"]) {
		t.Fatal("the toolbox reads the restored wallet unlike the source")
	}
}
