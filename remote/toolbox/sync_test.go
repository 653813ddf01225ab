package toolbox_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	_ "modernc.org/sqlite"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/testkit/toolboxpeer"
	"walletsync/testkit/walletsynctest"
	"walletsync/wallet"
)

// These tests push walletsync wallets to the toolbox's own StorageServer
// (interop/storage-server.mjs) and pull them back, and check the result through the
// toolbox itself. SeededWallet's fixtures belong to FixtureIdentity(1), whose key the
// clients sign with.

const fixtureSeed = 1

// randomServerKey returns a fresh server identity key as hex.
func randomServerKey(t *testing.T) string {
	b := make([]byte, 32)
	rng := rand.NewChaCha8([32]byte{byte(time.Now().UnixNano()), byte(len(t.Name()))})
	if _, err := rng.Read(b); err != nil {
		t.Fatal(err)
	}
	b[0] |= 1 // never zero
	return hex.EncodeToString(b)
}

func openStore(t *testing.T, path string) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestClient returns a client of srv signing as the fixture identity of seed.
func newTestClient(t *testing.T, srv *toolboxpeer.Server, seed uint64) *toolbox.Client {
	t.Helper()
	c, err := toolbox.Dial(srv.URL, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))), toolbox.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// push runs a BRC-40 push of the wallet at path to c and returns its result.
func push(t *testing.T, path string, c *toolbox.Client, opts syncer.ChunkOptions) syncer.Result {
	t.Helper()
	s := openStore(t, path)
	defer s.Close()
	opts.Active = wallet.KeepSourceActive
	res, err := syncer.RunChunks(t.Context(), s, c, localstore.FixtureIdentity(fixtureSeed), opts)
	if err != nil {
		t.Fatalf("push: %v (%+v)", err, res)
	}
	return res
}

// toolboxRows is one user's rows of the store at db as the toolbox reads them.
func toolboxRows(t *testing.T, db, identity string) map[wallet.TableName][]wallet.Row {
	t.Helper()
	var d toolboxpeer.Dump
	toolboxpeer.Run(t, &d, "dump", "--db", db, "--identity", identity)
	rows, err := d.Rows()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// canonical is the id-free form of rows, without what two stores of one wallet keep of
// their own: their user row's and default basket's creation times (findOrInsertUser's
// "now" in each store), and, when ignoreActive, the user's activeStorage. A proof request's
// notified flag is left out too: a BRC-40 consumer, the toolbox's own included, clears it
// on every request whose notify list it maps (EntityProvenTxReq.mergeNew and
// mergeExisting call addNotifyTransactionId, which sets notified = false), so that the
// consumer notifies those transactions itself.
func canonical(t *testing.T, rows map[wallet.TableName][]wallet.Row, ignoreActive bool) compare.Wallet {
	t.Helper()
	ob := wallet.OutputBaskets
	for _, r := range rows[ob.Name] {
		if r[ob.Col("name")] == "default" {
			r[ob.Col("created_at")] = time.Time{}
		}
	}
	ignore := []string{"users.created_at", "proven_tx_reqs.notified"}
	if ignoreActive {
		ignore = append(ignore, "users.activeStorage")
	}
	w, err := compare.FromRows(rows, compare.Options{Ignore: ignore})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sameThroughToolbox fails t unless the toolbox reads the same wallet in both stores.
func sameThroughToolbox(t *testing.T, a, b string, ignoreActive bool) {
	t.Helper()
	id := localstore.FixtureIdentity(fixtureSeed)
	wa, wb := canonical(t, toolboxRows(t, a, id), ignoreActive), canonical(t, toolboxRows(t, b, id), ignoreActive)
	if d := compare.Diff(wa, wb); d != "" {
		t.Fatalf("the toolbox reads different wallets in %s and %s:\n%s", a, b, d)
	}
	rows := 0
	for _, list := range wa {
		rows += len(list)
	}
	if rows < 20 {
		t.Fatalf("only %d rows compared", rows)
	}
}

func rowCount(t *testing.T, path string) int64 {
	t.Helper()
	s := openStore(t, path)
	defer s.Close()
	sum, err := s.Summary(t.Context(), localstore.FixtureIdentity(fixtureSeed))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, tb := range wallet.Entities {
		n += sum.Counts[tb.Name]
	}
	return n
}

// TestRunChunks_ToolboxFixture pushes the toolbox fixture (10,000 labels, 64 proofs of
// 32 KiB) to a real StorageServer, checks the server's rows through the toolbox, pushes
// again (nothing moves), changes 1% and pushes (only the change moves), then pulls the
// server into a new wallet, which equals the original and which the toolbox opens.
func TestRunChunks_ToolboxFixture(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := testkit.SeededWallet(t, localstore.FixtureToolbox, 1)
	srv := toolboxpeer.StartServer(t, randomServerKey(t))
	c := newTestClient(t, srv, fixtureSeed)
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		t.Fatal(err)
	}
	total := rowCount(t, src)

	var seen []syncer.State
	first := push(t, src, c, syncer.ChunkOptions{Budget: budget, Total: total, Progress: func(p syncer.Progress) error {
		if len(seen) == 0 || seen[len(seen)-1] != p.State {
			seen = append(seen, p.State)
		}
		if p.Total != total {
			return fmt.Errorf("progress total %d, want %d", p.Total, total)
		}
		return nil
	}})
	t.Logf("first push: %d chunks, %d rows, %d inserts, %d updates, %d requests, %v; client %+v", first.Pages, first.Rows, first.Inserts, first.Updates, first.Requests, first.Elapsed, c.Stats())
	if first.State != syncer.StateCompleted || first.Kind != syncer.KindFull || first.Rows != total || first.Inserts < total-1 {
		t.Fatalf("first push %+v, want all %d rows", first, total)
	}
	if seen[0] != syncer.StateReading || seen[1] != syncer.StatePreparing || seen[2] != syncer.StateCommitting || seen[3] != syncer.StateCommitted || seen[len(seen)-1] != syncer.StateCompleted {
		t.Fatalf("progress states %v", seen)
	}
	// The server's user names the wallet's active store, and the toolbox reads the same
	// wallet there as here.
	sameThroughToolbox(t, src, srv.DB, false)

	second := push(t, src, c, syncer.ChunkOptions{Settle: -1})
	t.Logf("second push: %+v", second.Counters)
	if second.Kind != syncer.KindIncremental || second.Inserts != 0 || second.Updates != 0 || second.Rows > 2 {
		t.Fatalf("second push moved something: %+v", second)
	}

	// 1% of the rows change: 100 labels and 100 of their map rows.
	db, err := sql.Open("sqlite", "file:"+src+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	// A changed label takes its map rows with it (they reach the user through it), whether
	// or not they changed: those are sent again and change nothing at the server.
	var linked int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM tx_labels_map WHERE txLabelId % 100 = 0 AND rowid % 100 <> 0`).Scan(&linked); err != nil {
		t.Fatal(err)
	}
	later := "2027-01-01T00:00:00.000Z"
	for _, q := range []string{
		`UPDATE tx_labels SET isDeleted = 1 - isDeleted, updated_at = ? WHERE txLabelId % 100 = 0`,
		`UPDATE tx_labels_map SET isDeleted = 1 - isDeleted, updated_at = ? WHERE rowid % 100 = 0`,
	} {
		if _, err := db.ExecContext(ctx, q, later); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	third := push(t, src, c, syncer.ChunkOptions{Settle: -1})
	t.Logf("1%% change push: %+v", third.Counters)
	// BRC-40's since is inclusive: a cycle sends again the rows stamped at the last
	// cycle's end, which the second push shows are second.Rows; nothing else moves.
	if third.Updates != 200 || third.Inserts != 0 || third.Rows > 200+linked+second.Rows {
		t.Fatalf("1%% change: %+v, want the 200 changed rows, their %d linked map rows and the %d boundary rows", third, linked, second.Rows)
	}
	sameThroughToolbox(t, src, srv.DB, false)

	// Pull into a new wallet: the same wallet, active where it is (the new file).
	dstPath := filepath.Join(t.TempDir(), "pulled.sqlite")
	dst, err := localstore.Create(ctx, dstPath, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := syncer.RunChunks(ctx, c, dst, localstore.FixtureIdentity(fixtureSeed), syncer.ChunkOptions{Active: wallet.KeepDestinationActive, Settle: -1})
	t.Logf("pull: %d chunks, %d rows, %d requests, %v", pulled.Pages, pulled.Rows, pulled.Requests, pulled.Elapsed)
	dstSettings, _ := dst.Settings(ctx)
	dst.Close()
	if err != nil {
		t.Fatal(err)
	}
	var opened struct{ MigrationsBefore, MigrationsAfter int }
	toolboxpeer.Run(t, &opened, "open", "--db", dstPath)
	if opened.MigrationsBefore != opened.MigrationsAfter {
		t.Fatalf("the toolbox migrated the pulled wallet: %+v", opened)
	}
	sameThroughToolbox(t, src, dstPath, true)
	u, err := openStore(t, dstPath).FindOrInsertUser(ctx, localstore.FixtureIdentity(fixtureSeed))
	if err != nil || u.ActiveStorage != dstSettings.StorageIdentityKey {
		t.Fatalf("the pulled wallet's user %+v (%v): a pull keeps the wallet's own active store %s", u, err, dstSettings.StorageIdentityKey)
	}
}

// TestRunChunks_ServerRestart restarts the server twice during a push: once between
// chunks (the client's session is unknown to the new process: it hand-shakes again), once
// with a merge about to be sent (the merge finds the server down; the session reads the
// server's state again, with backoff, once it is back). The push completes with every row.
func TestRunChunks_ServerRestart(t *testing.T) {
	t.Parallel()
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	srv := toolboxpeer.StartServer(t, randomServerKey(t))
	c := newTestClient(t, srv, fixtureSeed)
	committed, committing := 0, 0
	restarted := make(chan error, 1)
	res := push(t, src, c, syncer.ChunkOptions{MaxItems: 5, Backoff: 100 * time.Millisecond, Progress: func(p syncer.Progress) error {
		switch p.State {
		case syncer.StateCommitted:
			if committed++; committed == 2 {
				srv.Stop()
				srv.Restart()
			}
		case syncer.StateCommitting:
			if committing++; committing == 6 {
				srv.Kill()
				go func() {
					time.Sleep(500 * time.Millisecond)
					restarted <- srv.TryRestart()
				}()
			}
		}
		return nil
	}})
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Logf("push across restarts: %+v; client %+v", res.Counters, c.Stats())
	if res.Retries == 0 || res.Rows < rowCount(t, src) {
		t.Fatalf("push across restarts: %+v", res)
	}
	sameThroughToolbox(t, src, srv.DB, false)
}

// TestRunChunks_WrongKey signs with a key that is not the wallet's identity: the server
// refuses it with WERR_UNAUTHORIZED, a typed error, and nothing is written locally.
func TestRunChunks_WrongKey(t *testing.T) {
	t.Parallel()
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	srv := toolboxpeer.StartServer(t, randomServerKey(t))
	c := newTestClient(t, srv, fixtureSeed+1)
	s := openStore(t, src)
	defer s.Close()
	before, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	statesBefore := syncStates(t, src)
	for _, active := range []wallet.ActivePolicy{wallet.KeepSourceActive, wallet.KeepDestinationActive} {
		var res syncer.Result
		var err error
		if active == wallet.KeepSourceActive {
			res, err = syncer.RunChunks(t.Context(), s, c, localstore.FixtureIdentity(fixtureSeed), syncer.ChunkOptions{Active: active})
		} else {
			res, err = syncer.RunChunks(t.Context(), c, s, localstore.FixtureIdentity(fixtureSeed), syncer.ChunkOptions{Active: active})
		}
		var we *toolbox.WalletError
		if !errors.Is(err, wallet.ErrUnauthorized) || !errors.As(err, &we) || we.Name != "WERR_UNAUTHORIZED" || res.State != syncer.StateFailed {
			t.Fatalf("%s with another identity's key: %+v, %v", active, res, err)
		}
	}
	after, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if *after.Journal != *before.Journal {
		t.Fatalf("the wallet changed: journal %+v, then %+v", before.Journal, after.Journal)
	}
	if n := syncStates(t, src); n != statesBefore {
		t.Fatalf("%d sync states, %d before", n, statesBefore)
	}
}

// syncStates counts the sync_states rows of the wallet at path.
func syncStates(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sync_states").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSyncCLI_KilledPushResumes kills `walletsync sync --to URL` with SIGKILL at random
// moments during a push (between chunks, while a chunk is merging, while a run settles),
// then lets a run complete: the server holds every row exactly once, and one more run
// moves nothing.
func TestSyncCLI_KilledPushResumes(t *testing.T) {
	t.Parallel()
	exe := filepath.Join(t.TempDir(), "walletsync")
	walletsynctest.BuildSelf(t, exe)
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	keyFile := filepath.Join(t.TempDir(), "identity.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(localstore.FixtureRootKey(fixtureSeed))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := toolboxpeer.StartServer(t, randomServerKey(t))
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 15))
	t.Logf("kill times from seed %d", seed)
	args := []string{"sync", "--from", src, "--to", srv.URL, "--key-file", keyFile, "--max-items", "5", "--json"}
	kills, landed := 0, 0
	for i := 0; i < 4; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, exe, args...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		// Die after a random number of acknowledged chunks, a random moment later: between
		// chunks, while reading, or with a merge on its way or being applied.
		killAt, delay := 1+rng.IntN(6), time.Duration(rng.IntN(250))*time.Millisecond
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 0; sc.Scan(); {
			var p syncer.Progress
			if json.Unmarshal(sc.Bytes(), &p) == nil && p.State == syncer.StateCommitted {
				if n++; n == killAt {
					time.AfterFunc(delay, func() { cmd.Process.Kill() })
				}
				landed++
			}
		}
		err = cmd.Wait()
		cancel()
		var exit *exec.ExitError
		switch {
		case err == nil: // finished before the kill
		case errors.As(err, &exit) && exit.ExitCode() == -1:
			kills++
		default:
			t.Fatalf("run %d: %v", i, err)
		}
	}
	t.Logf("%d runs killed after %d acknowledged chunks in all", kills, landed)
	if kills == 0 {
		t.Fatal("no run was killed")
	}
	out := walletsynctest.RunBinary(t, exe, args...)
	t.Logf("after %d kills, the last run: %s", kills, lastLine(out))
	sameThroughToolbox(t, src, srv.DB, false)
	var again struct{ Inserts, Updates int64 }
	if err := jsonLast(walletsynctest.RunBinary(t, exe, args...), &again); err != nil || again.Inserts != 0 || again.Updates != 0 {
		t.Fatalf("one more run: %+v (%v)", again, err)
	}
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// jsonLast decodes the last line of a --json run, its result.
func jsonLast(out []byte, v any) error {
	return json.Unmarshal([]byte(lastLine(out)), v)
}
