// Package crash runs this test binary again as child processes, for what only real
// processes show: a child killed with SIGKILL at the Nth passing of one durable boundary
// (Run), whose files the parent then opens to check what survived; and children that start
// their work at one moment (Together), for what two walletsync processes do to one file at
// once (create it, restore into it), since a race only shows when they really overlap.
//
// SIGKILL, not a panic or an exit, because nothing runs after it: no deferred function, no
// finaliser, no buffered write, exactly as when the machine loses power between two
// syscalls. A package's TestMain hands the process to the child when Child says it is one:
//
//	func TestMain(m *testing.M) {
//		if k, task, ok := crash.Child(); ok {
//			runChild(k, task) // calls k.Reach at every boundary; never returns
//		}
//		os.Exit(m.Run())
//	}
//
// and a test calls Run with the boundary and its task, and gets back what the child
// reported just before it died. Unix only, as SIGKILL is. The quick tier (-short, see
// testkit/tier) leaves crash tests out: each costs a process start and a kill.
package crash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"walletsync/testkit/tier"
)

// env carries a child's Point and task from Run to Child.
const env = "WALLETSYNC_CRASHTEST"

// marker starts the line a child prints just before it kills itself.
const marker = "crash: killed at"

// Point is where a child dies: at the Nth passing (from 1) of the boundary At.
type Point struct {
	At string
	N  int
}

// String names p as "at #n".
func (p Point) String() string { return fmt.Sprintf("%s #%d", p.At, p.N) }

// order is what Run hands a child.
type order struct {
	Point Point
	Task  json.RawMessage
}

// Killer kills this process at its Point. It is not safe for concurrent use: a child's
// boundaries are passed by one goroutine at a time.
type Killer struct {
	Point
	hits int
}

// Reach counts a passing of the boundary point. At the Nth passing of the Killer's
// boundary it prints the marker line, with report as JSON, on stdout and kills the
// process with SIGKILL; otherwise it returns. report is what the parent needs to judge
// what survived (nil when it needs nothing).
func (k *Killer) Reach(point string, report any) {
	if point != k.At {
		return
	}
	if k.hits++; k.hits < k.N {
		return
	}
	line, err := json.Marshal(report)
	if err != nil {
		Fail("encode the crash report: %v", err)
	}
	fmt.Println(marker, k.Point.String()+":", string(line)) // os.Stdout is unbuffered: the line is out before the kill
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)          // if it failed, the panic below says so
	panic("still running after SIGKILL")                    // SIGKILL cannot be caught: the kernel stops the process first
}

// Fail ends a child that cannot do its task, with a message the parent reports.
func Fail(format string, args ...any) {
	fmt.Printf("crash child failed: "+format+"\n", args...)
	os.Exit(1)
}

// Child reports whether this process is a crash child started by Run; if so it returns
// the Killer of its Point and the JSON of its task. The caller then does the task, calls
// the Killer's Reach at every boundary, and never returns: a task that ends without
// reaching its Point should Fail.
func Child() (k *Killer, task []byte, ok bool) {
	spec := os.Getenv(env)
	if spec == "" {
		return nil, nil, false
	}
	var o order
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		Fail("bad order %q: %v", spec, err)
	}
	return &Killer{Point: o.Point}, o.Task, true
}

// Run starts this test binary as a crash child with task (encoded as JSON) and p, waits
// for it, and returns the JSON of the report the child printed just before it died. It
// fails t unless the child died by SIGKILL right after reporting p, or when the race
// detector found a race in the child (a killed child never reaches the exit status that
// would say so; its report is on stderr).
func Run(t testing.TB, p Point, task any) []byte {
	t.Helper()
	cmd := Command(t, p, task)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("crash child at %s: %v, want death by SIGKILL\nstdout:\n%s\nstderr:\n%s", p, err, &stdout, &stderr)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crash child at %s: %v, want death by SIGKILL\nstdout:\n%s\nstderr:\n%s", p, err, &stdout, &stderr)
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Fatalf("crash child at %s raced:\n%s", p, &stderr)
	}
	var line string
	for sc := bufio.NewScanner(&stdout); sc.Scan(); {
		line = sc.Text()
	}
	report, ok := strings.CutPrefix(line, marker+" "+p.String()+": ")
	if !ok {
		t.Fatalf("crash child's last line %q; want its report at %s", line, p)
	}
	return []byte(report)
}

// Command returns the command that starts this test binary as a crash child with task
// (encoded as JSON) and p, for a test whose child may also end before it reaches p and that
// reads the child's output itself. The child is killed when the test ends.
func Command(t testing.TB, p Point, task any) *exec.Cmd {
	t.Helper()
	tier.Full(t, "a child process killed with SIGKILL")
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(order{Point: p, Task: b})
	if err != nil {
		t.Fatal(err)
	}
	return childCommand(t.Context(), env+"="+string(spec))
}

// childCommand returns the command that runs this test binary again with no test selected
// ("-test.run=^$"), so that only its TestMain acts, on os.Environ plus env.
func childCommand(ctx context.Context, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
