package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"walletsync/testkit/tier"
)

// interopDir is the module's interop/ folder, where the Node scripts live.
func interopDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "interop")
}

// nodePath finds node; these tests compare against @bsv/sdk itself, so a missing Node fails
// them rather than skipping (only the quick tier, -short, leaves them out).
func nodePath(tb testing.TB) string {
	tb.Helper()
	tier.Full(tb, "Node and @bsv/sdk")
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node is not on PATH (%v): the BRC-104 interop tests need Node 20 and interop/node_modules (npm ci there); they must not be skipped", err)
	}
	return node
}

// runNode runs interop/<script> with in as JSON on stdin and decodes its stdout into out.
func runNode(tb testing.TB, script string, in, out any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	b, err := json.Marshal(in)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, nodePath(tb), filepath.Join(interopDir(), script))
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		tb.Fatalf("node %s: decode %.300q: %v", script, stdout, err)
	}
}
