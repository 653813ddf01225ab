package main

import (
	"os"
	"strings"
	"testing"

	"walletsync/testkit/postgres"
)

// cluster is the package's throwaway PostgreSQL (testkit/postgres), for the load runs on
// PostgreSQL in this process.
var cluster *postgres.Cluster

func TestMain(m *testing.M) { os.Exit(postgres.Main(m, &cluster)) }

// TestLab_UsageErrors: the lab's commands refuse bad flags as usage errors (exit code 2)
// naming the lab's binary, before any wallet is made.
func TestLab_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"portable", "--repeat", "0"}, "walletsync-bench portable"},
		{[]string{"portable", "--fixture", "huge"}, "walletsync-bench portable"},
		{[]string{"sorcery"}, `walletsync-bench: unknown command "sorcery"`},
	} {
		var stdout, stderr strings.Builder
		if code := lab().Dispatch(t.Context(), tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("walletsync-bench %v: exit %d: %s", tc.args, code, stderr.String())
		}
	}
}
