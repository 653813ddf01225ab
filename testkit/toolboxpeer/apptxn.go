package toolboxpeer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"walletsync/testkit/tier"
)

// AppTxn is a wallet app's transaction on a toolbox store (interop/app-txn.mjs), held open
// between its first read and its first write: the moment in which, in SQLite's WAL mode, a
// commit by any other connection makes its write fail at once with SQLITE_BUSY_SNAPSHOT.
type AppTxn struct {
	tb     testing.TB
	cancel context.CancelFunc
	done   chan error // the process's exit
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer
}

// AppTxnResult is how the transaction ended.
type AppTxnResult struct {
	Committed bool   `json:"committed"`
	TxLabelID int64  `json:"txLabelId"`
	Error     string `json:"error"`
	// Code is SQLite's code of a failure, such as SQLITE_BUSY_SNAPSHOT.
	Code string `json:"code"`
}

// StartAppTxn begins the transaction on db as the toolbox does for identity's user, and
// returns once it has read (its snapshot is fixed). label names the tx label it inserts
// when it writes. The test fails if it cannot get there; Finish ends it.
func StartAppTxn(tb testing.TB, db, identity, label string) *AppTxn {
	tb.Helper()
	tier.Full(tb, needs)
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	cmd, err := nodeCommand(ctx, "app-txn.mjs", "txn", "--db", db, "--identity", identity, "--label", label)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	a := &AppTxn{tb: tb, cancel: cancel, done: make(chan error, 1)}
	cmd.Stderr = &a.stderr
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatal(err)
	}
	go func() { a.done <- cmd.Wait() }()
	tb.Cleanup(func() {
		cancel()
		_ = <-a.done // cancelled or finished: Finish reports how it ended
	})
	a.lines = bufio.NewScanner(out)
	var read struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	if !a.lines.Scan() || json.Unmarshal(a.lines.Bytes(), &read) != nil || read.State != "read" {
		tb.Fatalf("app transaction did not get to its read: %q %s\nstderr: %s", a.lines.Text(), read.Error, lastLines(a.stderr.String(), 20))
	}
	return a
}

// Finish lets the transaction write and commit, and returns how it ended.
func (a *AppTxn) Finish() AppTxnResult {
	a.tb.Helper()
	if _, err := fmt.Fprintln(a.stdin, "write"); err != nil {
		a.tb.Fatal(err)
	}
	var res AppTxnResult
	if !a.lines.Scan() || json.Unmarshal(a.lines.Bytes(), &res) != nil {
		a.tb.Fatalf("app transaction's end: %q\nstderr: %s", a.lines.Text(), lastLines(a.stderr.String(), 20))
	}
	a.stdin.Close()
	_ = <-a.done  // res, read above, is how it ended
	a.done <- nil // for the cleanup
	return res
}
