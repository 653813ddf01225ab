package walletsynctest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"walletsync/testkit/tier"
)

// BuildSelf compiles the walletsync command (the module's root package) into exe, for
// tests that need a real child process.
func BuildSelf(tb testing.TB, exe string) {
	tb.Helper()
	tier.Full(tb, "the walletsync binary, built and run as processes")
	build(tb, exe, "walletsync")
}

// BuildLab compiles the lab's binary (cmd/walletsync-bench) into exe.
func BuildLab(tb testing.TB, exe string) {
	tb.Helper()
	tier.Full(tb, "the lab's binary and its runs (Node, PostgreSQL, minutes of CPU)")
	build(tb, exe, "walletsync/cmd/walletsync-bench")
}

func build(tb testing.TB, exe, pkg string) {
	tb.Helper()
	if out, err := exec.Command("go", "build", "-o", exe, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
}

// RunBinary runs exe with args and returns its standard output, failing on a non-zero exit.
func RunBinary(tb testing.TB, exe string, args ...string) []byte {
	tb.Helper()
	cmd := exec.Command(exe, args...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			tb.Fatalf("%s %v: %v\n%s", exe, args, err, ee.Stderr)
		}
		tb.Fatal(err)
	}
	return out
}

// RunBenchJSON builds the lab's binary (a bench re-executes itself for each phase), runs
// `walletsync-bench NAME --fixture small --dir TMP --json` and decodes its report into rep.
func RunBenchJSON(tb testing.TB, name string, rep any) {
	tb.Helper()
	exe := filepath.Join(tb.TempDir(), "walletsync-bench")
	BuildLab(tb, exe)
	out := RunBinary(tb, exe, name, "--fixture", "small", "--dir", tb.TempDir(), "--json")
	if err := json.Unmarshal(out, rep); err != nil {
		tb.Fatalf("bench %s output %q: %v", name, out, err)
	}
}
