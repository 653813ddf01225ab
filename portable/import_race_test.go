package portable

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/wallet"
)

// importRaceEnv turns the test binary into an importRaceChild; its value is the task.
const importRaceEnv = "WALLETSYNC_TEST_IMPORT_RACE"

// importRaceTask is a restore of File into the new wallet file Target, staged in Staging.
type importRaceTask struct{ File, Target, Staging string }

// importRaceChild waits for a line on stdin (so that two children start at one moment), runs
// the restore and says how it ended: "ok", "locked PID", "exists" or "error ...". It never
// returns.
func importRaceChild(task string) {
	var c importRaceTask
	if err := json.Unmarshal([]byte(task), &c); err != nil {
		fmt.Println("error bad task:", err)
		os.Exit(2)
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
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
// same new wallet file at the same moment, 20 times, half of them with one shared staging
// folder and half with one each. Exactly one may report success, the other fails with the
// winner's *wallet.LockedError (or, had the winner already finished, finds the file taken),
// and the wallet is the backup's. Before the writer lock was taken ahead of the copy and the
// copy stopped renaming over the path, both reported success.
func TestImport_TwoRestoresIntoOneNewFile(t *testing.T) {
	src, identity := mustStore(t, localstore.FixtureSmall, smallSeed)
	file, _ := backupFile(t, src, identity)
	want := readWallet(t, src, identity)
	for round := range 20 {
		dir := t.TempDir()
		target := filepath.Join(dir, "restored.sqlite")
		var cmds [2]*exec.Cmd
		var outs [2]bytes.Buffer
		var gos [2]interface{ Close() error }
		for i := range cmds {
			staging := filepath.Join(dir, "staging")
			if round%2 == 1 {
				staging += strconv.Itoa(i)
			}
			b, _ := json.Marshal(importRaceTask{File: file, Target: target, Staging: staging})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), importRaceEnv+"="+string(b))
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[i], gos[i] = cmd, stdin
		}
		for _, g := range gos {
			g.Close()
		}
		ok := 0
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("round %d: child %d: %v\n%s", round, i, err, outs[i].String())
			}
			verb, arg, _ := strings.Cut(strings.TrimSpace(outs[i].String()), " ")
			switch verb {
			case "ok":
				ok++
			case "locked":
				if other := cmds[1-i].Process.Pid; arg != strconv.Itoa(other) {
					t.Errorf("round %d: child %d was refused by pid %s; the other child is %d", round, i, arg, other)
				}
			case "exists":
			default:
				t.Fatalf("round %d: child %d: %s", round, i, outs[i].String())
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d restores reported success; want exactly one\n%s\n%s", round, ok, outs[0].String(), outs[1].String())
		}
		requireSameWallet(t, readWallet(t, target, identity), want)
	}
}
