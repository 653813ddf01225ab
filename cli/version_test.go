package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"walletsync/testkit/walletsynctest"
)

// TestCLI_Version prints the version, the Go version and the platform, as text and as JSON,
// and refuses a stray argument.
func TestCLI_Version(t *testing.T) {
	t.Parallel()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"text", []string{"version"}, 0, []string{"walletsync " + Version + " ", runtime.Version(), platform}},
		{"json", []string{"version", "--json"}, 0, []string{`"version": "` + Version + `"`, `"go": "` + runtime.Version() + `"`, `"os": "` + runtime.GOOS + `"`, `"arch": "` + runtime.GOARCH + `"`}},
		{"stray argument", []string{"version", "now"}, 2, []string{"unexpected argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := walletsync(t, tt.args...)
			for _, want := range tt.want {
				if code != tt.code || !strings.Contains(out+stderr, want) {
					t.Errorf("walletsync %v: exit %d, output %q %q; want exit %d mentioning %q", tt.args, code, out, stderr, tt.code, want)
				}
			}
		})
	}
}

// TestCLI_VersionSetAtBuildTime builds the binary as a release is built, with the version
// given to the linker, and finds it in `walletsync version --json`: the -X path in
// Version's doc comment is the one that works. A build without it says "dev".
func TestCLI_VersionSetAtBuildTime(t *testing.T) {
	t.Parallel()
	const release = "v0.0.0-test.1"
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"release build", []string{"-ldflags", "-X walletsync/cli.Version=" + release}, release},
		{"plain build", nil, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			exe := filepath.Join(t.TempDir(), "walletsync")
			args := append(append([]string{"build"}, tt.flags...), "-o", exe, "walletsync")
			if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
				t.Fatalf("go %v: %v\n%s", args, err, out)
			}
			var got buildInfo
			if out := walletsynctest.RunBinary(t, exe, "version", "--json"); json.Unmarshal(out, &got) != nil || got.Version != tt.want {
				t.Fatalf("version of the %s: %s, want %q", tt.name, out, tt.want)
			}
		})
	}
}
