package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildSelf compiles this command into exe, for tests that need a real child process.
func buildSelf(tb testing.TB, exe string) {
	tb.Helper()
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
}

// runBinary runs exe with args and returns its standard output, failing on a non-zero exit.
func runBinary(tb testing.TB, exe string, args ...string) []byte {
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

// runBenchJSON builds this binary (a bench re-executes itself for each phase), runs
// `walletsync bench NAME --fixture small --dir TMP --json` and decodes its report into rep.
func runBenchJSON(tb testing.TB, name string, rep any) {
	tb.Helper()
	exe := filepath.Join(tb.TempDir(), "walletsync")
	buildSelf(tb, exe)
	out := runBinary(tb, exe, "bench", name, "--fixture", "small", "--dir", tb.TempDir(), "--json")
	if err := json.Unmarshal(out, rep); err != nil {
		tb.Fatalf("bench %s output %q: %v", name, out, err)
	}
}
