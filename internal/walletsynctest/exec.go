package walletsynctest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildSelf compiles the walletsync command (the module's root package) into exe, for
// tests that need a real child process.
func BuildSelf(tb testing.TB, exe string) {
	tb.Helper()
	if out, err := exec.Command("go", "build", "-o", exe, "walletsync").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
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

// RunBenchJSON builds this binary (a bench re-executes itself for each phase), runs
// `walletsync bench NAME --fixture small --dir TMP --json` and decodes its report into rep.
func RunBenchJSON(tb testing.TB, name string, rep any) {
	tb.Helper()
	exe := filepath.Join(tb.TempDir(), "walletsync")
	BuildSelf(tb, exe)
	out := RunBinary(tb, exe, "bench", name, "--fixture", "small", "--dir", tb.TempDir(), "--json")
	if err := json.Unmarshal(out, rep); err != nil {
		tb.Fatalf("bench %s output %q: %v", name, out, err)
	}
}
