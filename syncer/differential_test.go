package syncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// differentialIgnore is what a BRC-40 destination does not take from its source by design,
// beyond syncIgnore: the columns of a proof request that mergeExisting never overwrites
// once the destination holds the request (its status, attempts, wasBroadcast flag and
// proof link stay as they first arrived; history, notify and batch do merge).
var differentialIgnore = append(append([]string{}, syncIgnore.Ignore...),
	"proven_tx_reqs.status", "proven_tx_reqs.attempts", "proven_tx_reqs.wasBroadcast", "proven_tx_reqs.provenTxId")

// appBatch is app-writes.mjs's answer to a batch.
type appBatch struct {
	Writes int            `json:"writes"`
	Ops    map[string]int `json:"ops"`
	Failed []struct {
		Op, Error, Code string
	} `json:"failed"`
}

func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		tb.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// TestDifferential_ToolboxAppWritesBesideIncrementalSyncs is the generated differential
// test against the real toolbox: a wallet app on @bsv/wallet-toolbox 2.1.26
// (interop/app-writes.mjs) writes its own SQLite file through StorageKnex, in seeded random
// batches of realistic writes (actions with outputs, labels, tags and commissions, spends,
// proof requests moving forward, two-commit proofs, tombstones and revivals, certificates
// and their fields, basket changes), while walletsync, with its journal installed in the
// same file, pushes the file to a second one by BRC-40's merge rules (as a pull or an import
// merges into a live wallet). Every third round the pushes run while the batch is being
// written (so some land between the two commits of a proof); every round ends with a push
// after the batch. Then the destination must equal the source, but for what BRC-40 keeps
// by design (differentialIgnore), read both by walletsync (testkit/compare) and by the
// toolbox's own finders (dump.mjs), and no toolbox write may have failed.
//
// WALLETSYNC_DIFF_ROUNDS, WALLETSYNC_DIFF_WRITES (per round) and WALLETSYNC_DIFF_SEED set
// the run; the README has the long-run command.
func TestDifferential_ToolboxAppWritesBesideIncrementalSyncs(t *testing.T) {
	t.Parallel()
	differential(t, false, compare.Options{Ignore: differentialIgnore})
}

// TestDifferential_ExactCopyBesideToolboxAppWrites is the same differential test for a
// backup (syncer.Options.Mirror, as the agent's backup wallet files and walletsync serve's
// paged wire take it): the app also writes rows twice in one millisecond (two commits with
// the same updated_at, a push possibly between them), lets writes share a millisecond, and
// moves outputs between baskets, and the backup must equal the source in every column of
// every table, with nothing left out: a proof request's status, attempts and proof link
// after the toolbox's two-step proof with a push between the steps, the user's times, the
// default basket's.
func TestDifferential_ExactCopyBesideToolboxAppWrites(t *testing.T) {
	t.Parallel()
	differential(t, true, compare.Options{})
}

// differential runs the differential test: pushes with mirror set or not, compared with
// opts.
func differential(t *testing.T, mirror bool, opts compare.Options) {
	rounds := envInt(t, "WALLETSYNC_DIFF_ROUNDS", 12)
	writes := envInt(t, "WALLETSYNC_DIFF_WRITES", 40)
	seed := envInt(t, "WALLETSYNC_DIFF_SEED", 1)
	ctx := context.Background()
	id := localstore.FixtureIdentity(90)
	srcPath := filepath.Join(t.TempDir(), "app.sqlite")
	toolboxpeer.Run(t, nil, "create", "--db", srcPath, "--chain", "test", "--sik", localstore.FixtureIdentity(91), "--name", "app wallet")
	src, err := localstore.Open(ctx, srcPath, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	dst := newStore(t, wallet.ChainTest)
	from := src
	sync := syncer.Options{Mirror: mirror}

	app := toolboxpeer.StartScript(t, "app-writes.mjs")
	if err := app.Call(map[string]any{"cmd": "open", "db": srcPath, "identity": id, "seed": seed, "exact": mirror}, nil); err != nil {
		t.Fatal(err)
	}
	push(t, from, dst, id, sync)

	ops := map[string]int{}
	var total, during, between int
	for round := range rounds {
		var res appBatch
		if round%3 == 1 {
			done := make(chan error, 1)
			go func() { done <- app.Call(map[string]any{"cmd": "batch", "writes": writes}, &res) }()
			for running := true; running; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					running = false
				default:
					r := push(t, from, dst, id, sync)
					if r.Kind != syncer.KindUnchanged {
						during++
					}
				}
			}
		} else if err := app.Call(map[string]any{"cmd": "batch", "writes": writes}, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Failed) > 0 {
			t.Fatalf("round %d: %d toolbox writes failed, the first: %+v", round, len(res.Failed), res.Failed[0])
		}
		total += res.Writes
		for k, n := range res.Ops {
			ops[k] += n
		}
		push(t, from, dst, id, sync)
		between++
		sameThroughBoth(t, app, src, dst, srcPath, id, opts, fmt.Sprintf("round %d (seed %d)", round, seed))
	}
	if again := push(t, from, dst, id, sync); again.Kind != syncer.KindUnchanged {
		t.Fatalf("a push after the last round: %+v; want unchanged", again)
	}
	t.Logf("%d rounds, %d toolbox writes %v, %d pushes after batches and %d that moved rows while a batch ran", rounds, total, ops, between, during)
}

// sameThroughBoth fails unless dst equals src for the user (but for what opts leaves out),
// read by walletsync and read by the toolbox's finders.
func sameThroughBoth(t *testing.T, app *toolboxpeer.Script, src, dst *localstore.Store, srcPath, id string, opts compare.Options, step string) {
	t.Helper()
	ws, err := compare.Read(context.Background(), src, id, opts)
	if err != nil {
		t.Fatalf("%s: read the source: %v", step, err)
	}
	wd, err := compare.Read(context.Background(), dst, id, opts)
	if err != nil {
		t.Fatalf("%s: read the destination: %v", step, err)
	}
	if d := compare.Diff(ws, wd); d != "" {
		t.Fatalf("%s: the destination differs from the source (walletsync's reading):\n%s", step, d)
	}
	ts, td := toolboxReading(t, app, srcPath, id, opts), toolboxReading(t, app, dst.Path(), id, opts)
	if d := compare.Diff(ts, td); d != "" {
		t.Fatalf("%s: the destination differs from the source (the toolbox's reading):\n%s", step, d)
	}
	if d := compare.Diff(ws, ts); d != "" {
		t.Fatalf("%s: walletsync and the toolbox read the source differently:\n%s", step, d)
	}
}

// toolboxReading is the canonical form of the user's rows of the store at path as the
// toolbox's finders read them.
func toolboxReading(t *testing.T, app *toolboxpeer.Script, path, id string, opts compare.Options) compare.Wallet {
	t.Helper()
	var d toolboxpeer.Dump
	if err := app.Call(map[string]any{"cmd": "dump", "db": path, "identity": id}, &d); err != nil {
		t.Fatal(err)
	}
	raw, err := d.Rows()
	if err != nil {
		t.Fatal(err)
	}
	w, err := compare.FromRows(raw, opts)
	if err != nil {
		t.Fatalf("canonical form of the toolbox's reading of %s: %v", path, err)
	}
	return w
}
