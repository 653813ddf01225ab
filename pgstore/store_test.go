package pgstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/testkit/postgres"
	"walletsync/wallet"
)

var cluster *postgres.Cluster

func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }

const serverKey = "03a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0"

func newOptions() pgstore.Options {
	return pgstore.Options{Chain: wallet.ChainTest, StorageIdentityKey: serverKey, StorageName: "pg test"}
}

// openPG opens a store on a database of its own; it closes with the test.
func openPG(t testing.TB, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, newOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openSQLite creates an empty SQLite store with the same settings as newOptions.
func openSQLite(t testing.TB) *localstore.Store {
	t.Helper()
	o := newOptions()
	s, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), "server.sqlite"), localstore.CreateOptions{Chain: o.Chain, StorageIdentityKey: o.StorageIdentityKey, StorageName: o.StorageName}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func count(t testing.TB, url, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Server processes that start together over a new database migrate it once: every Open
// succeeds, the ledger holds each step once and there is one settings row.
func TestOpen_ConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	url := cluster.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pgstore.Open(t.Context(), url, newOptions())
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	// Each step once: as many rows as names, numbered 1 to n.
	if n := count(t, url, "SELECT count(*) FROM walletsync_migrations HAVING count(*) = count(DISTINCT name) AND max(version) = count(*)"); n < 2 {
		t.Fatalf("the ledger holds a step twice or skips one (%d rows)", n)
	}
	if n := count(t, url, "SELECT count(*) FROM settings"); n != 1 {
		t.Fatalf("%d settings rows, want 1", n)
	}
	st, err := openPG(t, url).Settings(t.Context())
	if err != nil || st.StorageIdentityKey != serverKey || st.Chain != wallet.ChainTest || st.DBType != pgstore.DBType {
		t.Fatalf("settings %+v, %v", st, err)
	}
}

// A database migrated by a newer walletsync is refused with the typed schema error, and a
// ledger that disagrees with this binary's history with the unknown-schema one; neither is
// changed.
func TestOpen_RefusesUnknownLedger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sql   string
		want  error
		added int // the ledger's rows the statement adds, which the refused Open keeps
	}{
		{"newer", "INSERT INTO walletsync_migrations (version, name) SELECT max(version) + 1, 'from the future' FROM walletsync_migrations", wallet.ErrSchemaTooNew, 1},
		{"renamed", "UPDATE walletsync_migrations SET name = 'something else' WHERE version = 1", wallet.ErrUnknownSchema, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := cluster.NewDatabase(t)
			openPG(t, url).Close()
			rows := count(t, url, "SELECT count(*) FROM walletsync_migrations") + tc.added
			exec(t, url, tc.sql)
			_, err := pgstore.Open(t.Context(), url, newOptions())
			var se *wallet.SchemaError
			if !errors.Is(err, tc.want) || !errors.As(err, &se) {
				t.Fatalf("open: %v, want a *wallet.SchemaError matching %v", err, tc.want)
			}
			if n := count(t, url, "SELECT count(*) FROM walletsync_migrations"); n != rows {
				t.Fatalf("the ledger changed: %d rows", n)
			}
		})
	}
}
