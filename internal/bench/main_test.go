package bench

import (
	"os"
	"testing"

	"walletsync/internal/pgtest"
)

// cluster is the package's throwaway PostgreSQL (internal/pgtest), for the load runs on
// PostgreSQL in this process.
var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }
