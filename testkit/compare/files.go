// The file-by-file comparison: two files are equal when every table holds the same rows.

package compare

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Digests reads every table of the SQLite file at path (its WAL included) read-only and
// returns, per table, its row count and a digest of its rows in no particular order: two
// files with equal digests hold the same rows in every table.
func Digests(tb testing.TB, path string) map[string]string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	names := Strings(tb, db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	out := map[string]string{}
	for _, n := range names {
		rows, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%#v", vals))
		}
		if err := rows.Close(); err != nil {
			tb.Fatal(err)
		}
		slices.Sort(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[n] = fmt.Sprintf("%d rows %s", len(lines), hex.EncodeToString(h[:8]))
	}
	return out
}

// Strings returns the first column of every row of query q.
func Strings(tb testing.TB, db *sql.DB, q string) []string {
	tb.Helper()
	rows, err := db.Query(q)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			tb.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// Same fails the test when two sets of Digests differ, naming each table that differs.
func Same(tb testing.TB, what string, got, want map[string]string) {
	tb.Helper()
	seen := map[string]bool{}
	var names []string
	for _, m := range []map[string]string{got, want} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if got[n] != want[n] {
			tb.Errorf("%s: table %s: %q, want %q", what, n, got[n], want[n])
		}
	}
}
