package localstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"walletsync/testkit/crash"
	"walletsync/testkit/testfs"
	"walletsync/wallet"
)

// createRaceEnv names the wallet a createRaceChild process creates or opens.
const createRaceEnv = "WALLETSYNC_TEST_CREATE_RACE"

// createRaceChild is a process of TestOpenOrCreate_TwoProcessesOneWallet: it waits for the
// other (crash.WaitForStart), opens or creates the
// wallet at path as a backup destination's first run does, writes a user's rows as a sync
// would, and says what happened: "ok IDENTITY", "locked PID" or "error ...".
func createRaceChild(path string) {
	seed, _ := strconv.ParseUint(os.Getenv(createRaceEnv+"_SEED"), 10, 64)
	crash.WaitForStart()
	ctx := context.Background()
	s, err := OpenOrCreate(ctx, path, CreateOptions{Chain: wallet.ChainTest}, Options{})
	var le *wallet.LockedError
	if errors.As(err, &le) {
		fmt.Println("locked", le.PID)
		return
	}
	if err != nil {
		fmt.Println("error", err)
		return
	}
	res, err := Seed(ctx, s, FixtureSmall, SeedOptions{Seed: seed})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println("ok", res.IdentityKey)
}

// TestOpenOrCreate_TwoProcessesOneWallet starts two processes that create the same new
// wallet at the same moment, 10 times. Each round must end with one sound wallet holding the
// rows of every process that reported success; a process that lost the race fails with the
// winner's *wallet.LockedError. Before creation took the writer lock first and stopped
// renaming over the path, about half the rounds ended with a malformed file or a "success"
// whose rows were in a file the other process had replaced, so 10 rounds miss that bug
// with a chance of about 1 in 1,000.
func TestOpenOrCreate_TwoProcessesOneWallet(t *testing.T) {
	const rounds = 10
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "backup.sqlite")
		env := func(i int) []string {
			return []string{createRaceEnv + "=" + path, fmt.Sprintf("%s_SEED=%d", createRaceEnv, round*2+i+1)}
		}
		outs := crash.Together(t, env(0), env(1))
		var succeeded []string
		for i, o := range outs {
			switch {
			case o.Verb == "ok":
				succeeded = append(succeeded, o.Arg)
			case !o.LockedBy(outs[1-i]):
				t.Fatalf("round %d: child %d: %s; want ok or the other child's lock", round, i, o.Output)
			}
		}
		if len(succeeded) == 0 {
			t.Fatalf("round %d: neither child created the wallet", round)
		}
		checkHolds(t, round, path, succeeded)
	}
}

// checkHolds fails unless the wallet at path is sound and holds a user for each identity.
func checkHolds(t *testing.T, round int, path string, identities []string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("round %d: open the wallet: %v", round, err)
	}
	defer s.Close()
	var check string
	if err := s.readDB.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("round %d: integrity check: %q, %v", round, check, err)
	}
	for _, id := range identities {
		var n int
		if err := s.readDB.QueryRowContext(ctx, "SELECT count(*) FROM users WHERE identityKey = ?", id).Scan(&n); err != nil || n != 1 {
			t.Fatalf("round %d: a child reported success for %s, and the wallet holds %d such users (%v)", round, id, n, err)
		}
	}
}

// TestCreate_FailedBuildReportsItsError: when building the new file fails (a full disk, a
// cancelled context), Create returns that failure and leaves no wallet at path. A shadowed
// error once let the failure fall through to the open, which reported wallet.ErrNotFound.
func TestCreate_FailedBuildReportsItsError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		dir  func(t *testing.T) string
		want error
	}{
		{"DiskFull", context.Background(), func(t *testing.T) string { return testfs.Tmpfs(t, "64k") }, wallet.ErrDiskFull},
		{"Cancelled", cancelled, func(t *testing.T) string { return t.TempDir() }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(tt.dir(t), "wallet.sqlite")
			s, err := Create(tt.ctx, path, CreateOptions{Chain: wallet.ChainTest}, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Create succeeded")
			}
			if !errors.Is(err, tt.want) || errors.Is(err, wallet.ErrNotFound) {
				t.Fatalf("Create: %v; want %v", err, tt.want)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a failed Create left %s: %v", path, err)
			}
		})
	}
}
