// Package toolboxpeer runs @bsv/wallet-toolbox 2.1.26, the independent implementation that
// every compatibility claim of walletsync is tested against. It calls interop/peer.mjs on
// Node as a subprocess, where each command prints one JSON object, and keeps longer-lived
// scripts (Script) that answer requests line by line.
//
// The peer must be installed (`npm ci` in interop/, which the README's test command does). A
// test that needs it and finds it missing fails with that instruction; only the quick tier
// (-short, see testkit/tier) skips it, at the entry points that take a testing.TB.
package toolboxpeer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"walletsync/testkit/tier"
	"walletsync/wallet"
)

// needs is what the quick tier does not have (see testkit/tier).
const needs = "Node and the @bsv/wallet-toolbox peer"

// dir is interop/ at the module root, found from this file's location.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "interop")
}

// Run runs one peer command and decodes its JSON result into out (when out is not nil). It
// fails the test when the peer is missing or the command fails.
func Run(tb testing.TB, out any, command string, args ...string) {
	tb.Helper()
	tier.Full(tb, needs)
	if err := Try(tb.Context(), out, command, args...); err != nil {
		tb.Fatal(err)
	}
}

// Try runs one peer command and returns its failure as an error, for tests that expect the
// toolbox to refuse something.
func Try(ctx context.Context, out any, command string, args ...string) error {
	return TryScript(ctx, out, "peer.mjs", command, args...)
}

// RunScript is Run for another script of interop/ that follows peer.mjs's conventions
// (cli.mjs: one JSON object on stdout, exit code 1 on failure).
func RunScript(tb testing.TB, out any, script, command string, args ...string) {
	tb.Helper()
	tier.Full(tb, needs)
	if err := TryScript(tb.Context(), out, script, command, args...); err != nil {
		tb.Fatal(err)
	}
}

// TryScript is Try for another script of interop/ (see RunScript).
func TryScript(ctx context.Context, out any, script, command string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd, err := nodeCommand(ctx, script, append([]string{command}, args...)...)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if runErr != nil {
		return fmt.Errorf("toolbox peer %s %s %v: %w\nstdout: %s\nstderr: %s", script, command, args, runErr, stdout.String(), lastLines(stderr.String(), 20))
	}
	if out != nil {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return fmt.Errorf("toolbox peer %s: decode %q: %w", command, stdout.String(), err)
		}
	}
	return nil
}

// nodeCommand returns the command that runs script of interop/ on Node with args, or an error
// that says how to install what is missing.
func nodeCommand(ctx context.Context, script string, args ...string) (*exec.Cmd, error) {
	d := dir()
	if _, err := os.Stat(filepath.Join(d, "node_modules", "@bsv", "wallet-toolbox")); err != nil {
		return nil, fmt.Errorf("the @bsv/wallet-toolbox peer is not installed in %s: run ./scripts/test.sh (or npm ci there)", d)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not on PATH; the toolbox peer needs Node 20: %w", err)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(d, script)}, args...)...)
	// The toolbox's localeCompare takes its locale from LC_ALL first; pin the one BRC-38's
	// canonical order is defined in.
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "TZ=UTC")
	return cmd, nil
}

// Script is a running interop script that answers one JSON request per line with one JSON
// line (interop/app-writes.mjs). Calls are serialized; the test's cleanup closes it.
type Script struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr string // the file its diagnostics go to
	mu     sync.Mutex
}

// StartScript starts interop/<name> for the test. It fails the test when the peer is missing.
func StartScript(tb testing.TB, name string) *Script {
	tb.Helper()
	tier.Full(tb, needs)
	cmd, err := nodeCommand(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Script{name: name, cmd: cmd, stderr: filepath.Join(tb.TempDir(), "stderr.txt")}
	errFile, err := os.Create(s.stderr)
	if err != nil {
		tb.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	if s.in, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(nil, 256<<20) // a dump of a large wallet is one line
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	tb.Cleanup(func() {
		s.in.Close() // the script ends at the end of its input
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case _ = <-done: // the test is over: its calls reported what went wrong
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			_ = <-done
		}
	})
	return s
}

// Call sends req and decodes the answer into out (when not nil). An answer with an "error"
// member, or a script that died, is an error carrying the end of the script's stderr.
func (s *Script) Call(req, out any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: send %s: %w\n%s", s.name, line, err, s.tail())
	}
	if !s.out.Scan() {
		return fmt.Errorf("%s: no answer to %s: %v\n%s", s.name, line, s.out.Err(), s.tail())
	}
	answer := s.out.Bytes()
	var failure struct{ Error, Name, Code string }
	if json.Unmarshal(answer, &failure) == nil && failure.Error != "" {
		return fmt.Errorf("%s: %s failed: %s (%s %s)\n%s", s.name, line, failure.Error, failure.Name, failure.Code, s.tail())
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("%s: decode %.200q: %w", s.name, answer, err)
	}
	return nil
}

func (s *Script) tail() string {
	b, _ := os.ReadFile(s.stderr)
	return "stderr: " + lastLines(string(b), 20)
}

func lastLines(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Dump is the peer's `dump`: every row of one user per SQL table name, as JSON values
// (dates ISO, binary lowercase hex, booleans, nulls), sorted by key.
type Dump map[string][]map[string]any

// DumpRows renders walletsync rows in the form Dump uses, for field-by-field comparison.
func DumpRows(t *wallet.Table, rows []wallet.Row) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		m := map[string]any{}
		for j, c := range t.Columns {
			m[c.Name] = dumpValue(r[j])
		}
		out[i] = m
	}
	return out
}

func dumpValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return wallet.FormatTime(x)
	case []byte:
		return hex.EncodeToString(x)
	case int64:
		return float64(x) // as encoding/json decodes a number into any
	}
	return v
}

// Rows returns the dump as walletsync rows (in the types wallet.Row documents), table by
// table, so that a store the toolbox read can be compared with compare.FromRows whatever
// ids it gave the rows. Tables the dump has that walletsync does not know are left out.
func (d Dump) Rows() (map[wallet.TableName][]wallet.Row, error) {
	out := map[wallet.TableName][]wallet.Row{}
	for name, list := range d {
		t, err := wallet.LookupTable(wallet.TableName(name))
		if err != nil {
			continue
		}
		rows := make([]wallet.Row, len(list))
		for i, m := range list {
			r := make(wallet.Row, len(t.Columns))
			for j, c := range t.Columns {
				v := m[c.Name]
				if s, ok := v.(string); ok && c.Kind == wallet.KindBlob {
					b, err := hex.DecodeString(s)
					if err != nil {
						return nil, fmt.Errorf("%s.%s: %w", name, c.Name, err)
					}
					v = b
				}
				r[j] = v
			}
			if err := t.Normalize(r); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
			}
			rows[i] = r
		}
		out[t.Name] = rows
	}
	return out, nil
}
