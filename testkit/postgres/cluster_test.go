package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"walletsync/testkit/tier"
)

// A throwaway cluster starts, makes databases of their own that an attached handle of the
// same server sees too, drops them (connections still open to them are closed), and
// stops, leaving no folder behind; Stop leaves an attached server running.
func TestCluster_StartCreateDropStop(t *testing.T) {
	tier.Full(t, "the PostgreSQL server binaries")
	ctx, cancel := context.WithTimeout(t.Context(), StartTimeout)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A second Stop does nothing, so this one reports only a cluster the test left running.
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	attached, err := Attach(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	u, drop, err := attached.CreateDatabase(ctx, "Bench Load/1")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text)"); err != nil {
		t.Fatal(err)
	}
	if err := attached.Stop(); err != nil {
		t.Fatalf("stop an attached server: %v", err)
	}
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, u); err == nil {
		t.Fatal("the dropped database still takes connections")
	}
	dir := c.dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.ping(ctx); err == nil {
		t.Fatal("the stopped cluster still answers")
	}
	if fi, err := os.Stat(dir); err == nil {
		t.Fatalf("the cluster's folder is still there: %v", fi.Name())
	}
}
