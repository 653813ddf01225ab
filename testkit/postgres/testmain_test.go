package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"walletsync/testkit/postgres"
)

var cluster *postgres.Cluster

func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }

// TestCluster_NewDatabase: each test gets a database of its own; what one writes, the
// other does not see, and both run at once.
func TestCluster_NewDatabase(t *testing.T) {
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, cluster.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "CREATE TABLE only_"+name+" (v text)"); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'only_%'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("database sees %d test tables, want only its own", n)
			}
		})
	}
}
