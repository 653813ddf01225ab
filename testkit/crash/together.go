// Together's children: a child is the test binary run with "-test.run=^$" and an
// environment variable its package's TestMain recognises; it calls WaitForStart, does its
// work, and prints one line: a verb and what follows it ("ok IDENTITY", "locked PID").

package crash

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Outcome is what one child said.
type Outcome struct {
	Verb, Arg string // the first word of its output, and the rest, trimmed
	PID       int
	Output    string // everything it wrote
}

// LockedBy reports that the child was refused with the writer lock of other, naming its pid.
func (o Outcome) LockedBy(other Outcome) bool {
	return o.Verb == "locked" && o.Arg == strconv.Itoa(other.PID)
}

// Together starts one child per env (os.Environ plus that env), lets them all start their
// work at once (they wait in WaitForStart until every one has been started), and returns
// what each said, in order. A child that fails to run or exits with an error fails the test.
func Together(t testing.TB, envs ...[]string) []Outcome {
	t.Helper()
	cmds := make([]*exec.Cmd, len(envs))
	outs := make([]bytes.Buffer, len(envs))
	starts := make([]io.Closer, len(envs))
	for i, env := range envs {
		cmd := childCommand(t.Context(), env...)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], starts[i] = cmd, stdin
	}
	for _, s := range starts {
		s.Close() // go: every child reads the end of its stdin now
	}
	res := make([]Outcome, len(envs))
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
		verb, arg, _ := strings.Cut(strings.TrimSpace(outs[i].String()), " ")
		res[i] = Outcome{Verb: verb, Arg: arg, PID: cmd.Process.Pid, Output: outs[i].String()}
	}
	return res
}

// WaitForStart blocks a child until Together has started every child.
func WaitForStart() { _, _ = io.Copy(io.Discard, os.Stdin) } // any end of stdin, even an error, is the go
