package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"walletsync/cli/command"
)

// Version is walletsync's release, set when the binary is built:
//
//	go build -ldflags "-X walletsync/cli.Version=v0.2.0" .
//
// It is "dev" in a build that does not set it (go run, go test). It is a variable only
// because the linker's -X sets variables, not constants: the one exception to the rule of no
// global mutable state, and nothing in walletsync assigns it. The agent reports it in
// GET /api/v1/status, `walletsync version` prints it, and the demo and the agent log it
// when they start.
var Version = "dev"

// buildInfo is what `walletsync version` reports.
type buildInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func currentBuild() buildInfo {
	return buildInfo{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
}

// String is the one line the version command, the demo and the agent print.
func (b buildInfo) String() string {
	return fmt.Sprintf("walletsync %s (%s, %s/%s)", b.Version, b.Go, b.OS, b.Arch)
}

// runVersion is `walletsync version`: what a bug report needs to name the binary.
func runVersion(_ context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("version", "[--json]", out)
	asJSON := fs.Bool("json", false, "print the version as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	b := currentBuild()
	return command.Report(out, *asJSON, b, func(w io.Writer) { fmt.Fprintln(w, b) })
}
