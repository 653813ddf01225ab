package portable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/crash"
	"walletsync/wallet"
)

// importRaceEnv turns the test binary into an importRaceChild; its value is the task.
const importRaceEnv = "WALLETSYNC_TEST_IMPORT_RACE"

// importRaceTask is a restore of File into the new wallet file Target, staged in Staging.
type importRaceTask struct{ File, Target, Staging string }

// importRaceChild waits for the other child (crash.WaitForStart), runs
// the restore and says how it ended: "ok", "locked PID", "exists" or "error ...". It never
// returns.
func importRaceChild(task string) {
	var c importRaceTask
	if err := json.Unmarshal([]byte(task), &c); err != nil {
		fmt.Println("error bad task:", err)
		os.Exit(2)
	}
	crash.WaitForStart()
	opts := ImportOptions{StagingDir: c.Staging, Open: testOpener(localstore.Options{}), Mode: wallet.ImportRestore}
	_, err := Import(context.Background(), c.File, importPassword, Target{Path: c.Target}, opts, nil)
	var le *wallet.LockedError
	switch {
	case err == nil:
		fmt.Println("ok")
	case errors.As(err, &le):
		fmt.Println("locked", le.PID)
	case errors.Is(err, fs.ErrExist), errors.Is(err, ErrAlreadyImported), errors.Is(err, wallet.ErrNotEmpty):
		fmt.Println("exists") // the other child had finished: the path was taken
	default:
		fmt.Println("error", err)
	}
	os.Exit(0)
}

// TestImport_TwoRestoresIntoOneNewFile starts two processes restoring one backup into the
// same new wallet file at the same moment, 10 times, half of them with one shared staging
// folder and half with one each. Exactly one may report success, the other fails with the
// winner's *wallet.LockedError (or, had the winner already finished, finds the file taken),
// and the wallet is the backup's. Before the writer lock was taken ahead of the copy and the
// copy stopped renaming over the path, both reported success.
func TestImport_TwoRestoresIntoOneNewFile(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	want := readWallet(t, src, identity)
	for round := range 10 {
		dir := t.TempDir()
		target := filepath.Join(dir, "restored.sqlite")
		env := func(i int) []string {
			staging := filepath.Join(dir, "staging")
			if round%2 == 1 {
				staging += strconv.Itoa(i)
			}
			b, _ := json.Marshal(importRaceTask{File: file, Target: target, Staging: staging})
			return []string{importRaceEnv + "=" + string(b)}
		}
		outs := crash.Together(t, env(0), env(1))
		ok := 0
		for i, o := range outs {
			switch {
			case o.Verb == "ok":
				ok++
			case o.Verb != "exists" && !o.LockedBy(outs[1-i]):
				t.Fatalf("round %d: child %d: %s; want ok, exists or the other child's lock", round, i, o.Output)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d restores reported success; want exactly one\n%s\n%s", round, ok, outs[0].Output, outs[1].Output)
		}
		requireSameWallet(t, readWallet(t, target, identity), want)
	}
}
