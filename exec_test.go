package main

import (
	"os/exec"
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
