// Package toolboxpeer runs @bsv/wallet-toolbox 2.1.26, the independent implementation that
// every compatibility claim of walletsync is tested against. It calls interop/peer.mjs on
// Node as a subprocess; each command prints one JSON object.
//
// The peer must be installed (`npm ci` in interop/, which the README's test command does). A
// test that needs it and finds it missing fails with that instruction: it never skips.
package toolboxpeer

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"walletsync/wallet"
)

// dir is interop/ at the module root, found from this file's location.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "interop")
}

// Run runs one peer command and decodes its JSON result into out (when out is not nil). It
// fails the test when the peer is missing or the command fails.
func Run(tb testing.TB, out any, command string, args ...string) {
	tb.Helper()
	if err := Try(tb.Context(), out, command, args...); err != nil {
		tb.Fatal(err)
	}
}

// Try runs one peer command and returns its failure as an error, for tests that expect the
// toolbox to refuse something.
func Try(ctx context.Context, out any, command string, args ...string) error {
	d := dir()
	if _, err := os.Stat(filepath.Join(d, "node_modules", "@bsv", "wallet-toolbox")); err != nil {
		return fmt.Errorf("the @bsv/wallet-toolbox peer is not installed in %s: run ./scripts/test.sh (or npm ci there)", d)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is not on PATH; the toolbox peer needs Node 20: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(d, "peer.mjs"), command}, args...)...)
	// The toolbox's localeCompare takes its locale from LC_ALL first; pin the one BRC-38's
	// canonical order is defined in.
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "TZ=UTC")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if runErr != nil {
		return fmt.Errorf("toolbox peer %s %v: %w\nstdout: %s\nstderr: %s", command, args, runErr, stdout.String(), lastLines(stderr.String(), 20))
	}
	if out != nil {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return fmt.Errorf("toolbox peer %s: decode %q: %w", command, stdout.String(), err)
		}
	}
	return nil
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
// table, so that a store the toolbox read can be compared with logical.FromRows whatever
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
