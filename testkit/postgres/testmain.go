// What the tests add to a cluster: one per test package, started by Main, and a database
// per test.
//
// When WALLETSYNC_PG_URL is set, the tests use that server instead (its URL names a role
// that may CREATE DATABASE). When neither is available the tests fail with a message that
// says how to get one: a backend that was never tested must not look like one that passed.
// Only the quick tier (-short, see testkit/tier) goes without: Main starts no cluster and
// NewDatabase skips.
package postgres

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"walletsync/testkit/tier"
)

// EnvURL names the variable that points the tests at an existing server instead of a
// throwaway cluster, e.g. postgres://user:pass@host:5432/postgres.
const EnvURL = "WALLETSYNC_PG_URL"

// Main starts a cluster (EnvURL's server when that is set), stores it in *c, runs the
// package's tests and stops the cluster, whatever the tests did; it returns the exit code
// for os.Exit. A cluster that cannot start fails the package (exit code 1) with the reason
// on stderr. Under -short it starts none and leaves *c nil (NewDatabase skips then). Use
// it from TestMain:
//
//	var cluster *postgres.Cluster
//	func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }
func Main(m *testing.M, c **Cluster) int {
	flag.Parse() // testing.Short reads the flags, which m.Run would parse only later
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	cl, err := startForTests(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testkit/postgres: %v\n", err)
		return 1
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testkit/postgres: %v\n", err)
		}
	}()
	*c = cl
	return m.Run()
}

// startForTests returns EnvURL's server when that is set, else a throwaway cluster.
func startForTests(ctx context.Context) (*Cluster, error) {
	if u := os.Getenv(EnvURL); u != "" {
		c, err := Attach(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		return c, nil
	}
	c, err := Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (or set %s)", err, EnvURL)
	}
	return c, nil
}

// NewDatabase creates a database of its own for tb (named after the test, with a random
// suffix) and returns its URL; the database is dropped when tb ends. It fails tb when the
// server refuses.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	tier.Full(tb, "a PostgreSQL server")
	if c == nil {
		tb.Fatal("testkit/postgres: no cluster: call postgres.Main from TestMain")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, drop, err := c.CreateDatabase(ctx, tb.Name())
	if err != nil {
		tb.Fatalf("testkit/postgres: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			tb.Errorf("testkit/postgres: %v", err)
		}
	})
	return u
}
