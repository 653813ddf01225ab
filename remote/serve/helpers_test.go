package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/testkit/postgres"
	"walletsync/testkit/toolboxpeer"
)

// cluster is the package's throwaway PostgreSQL (testkit/postgres): the tests that hold on
// every backend run on it too.
var cluster *postgres.Cluster

func TestMain(m *testing.M) {
	if k, task, ok := crash.Child(); ok {
		runCrashChild(k, task)
	}
	os.Exit(postgres.Main(m, &cluster))
}

// serverBackends are the stores a server runs on; options gives a test's server a store
// of its own.
var serverBackends = []struct {
	name    string
	options func(t testing.TB) Options
}{
	{"sqlite", func(t testing.TB) Options { return Options{DBPath: filepath.Join(t.TempDir(), "server.sqlite")} }},
	{"postgres", func(t testing.TB) Options { return Options{PostgresURL: cluster.NewDatabase(t)} }},
}

// backendWallet reads one user's rows from a server's store (SQLite or PostgreSQL) through
// its BRC-40 producer (compare.ReadChunks), in the id-free form of logicalWallet.
func backendWallet(t testing.TB, store toolbox.Store, identity string, ignore ...string) compare.Wallet {
	t.Helper()
	w, err := compare.ReadChunks(t.Context(), store, identity, compare.Options{Ignore: append([]string{"users.created_at", "output_baskets.created_at", "proven_tx_reqs.notified"}, ignore...)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// crashTask is what a crash child serves: the store (a SQLite file, or a PostgreSQL
// database when Postgres is set) and the key file, and walletsync's paged wire beside the
// toolbox's when Wire is set.
type crashTask struct {
	DB, Postgres, KeyFile string
	Wire                  bool
}

// runCrashChild serves until its Killer's boundary kills it; the first line on stdout is
// the server's URL.
func runCrashChild(k *crash.Killer, raw []byte) {
	var task crashTask
	if err := json.Unmarshal(raw, &task); err != nil {
		crash.Fail("task: %v", err)
	}
	key, err := auth.LoadKeyFile(task.KeyFile)
	if err != nil {
		crash.Fail("%v", err)
	}
	var mounts []Mount
	if task.Wire {
		mounts = append(mounts, WireMount(wire.ViewOptions{}, nil))
	}
	opts := Options{DBPath: task.DB, Signer: auth.NewProtoWallet(key), Listen: "127.0.0.1:0", Mounts: mounts,
		Logger: slog.New(slog.DiscardHandler), Store: localstore.Options{CommitHook: func(point string) { k.Reach(point, nil) }}}
	if task.Postgres != "" {
		opts.DBPath, opts.PostgresURL = "", task.Postgres
		opts.wrapStore = func(s toolbox.Store) toolbox.Store { return killAround{Store: s, k: k} }
	}
	srv, err := Open(context.Background(), opts)
	if err != nil {
		crash.Fail("%v", err)
	}
	err = srv.Run(context.Background(), func(at Listening) { fmt.Println(at.URL) })
	crash.Fail("the server stopped before its boundary: %v", err)
}

// startChild starts cmd, a server process, and returns the first line it prints (its URL,
// or its log line saying where it listens) and a function that waits for it to end and
// returns the rest of what it printed. The process is killed when the test ends.
func startChild(t *testing.T, cmd *exec.Cmd) (string, func() (string, error)) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		_ = cmd.Wait() // killed here, or already waited for by the func returned below
	})
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		_ = cmd.Wait() // killed: the Fatalf says why
		t.Fatalf("%s did not start: %v\n%s", cmd.Path, err, stderr.String())
	}
	return strings.TrimSpace(first), func() (string, error) {
		rest, _ := io.ReadAll(lines)
		err := cmd.Wait()
		return string(rest) + stderr.String(), err
	}
}

// killedAt reports whether a crash child ended by SIGKILL at its boundary (its output
// says so).
func killedAt(err error, output string) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(output, "killed at") {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// fixtureWallet is a seeded toolbox-schema wallet and the root key of its user.
type fixtureWallet struct {
	Path     string
	Identity string
	KeyHex   string
}

// seedWallet returns a test-chain wallet holding fixture f for the user of seed: a copy of
// the test process's template (testkit.SeededWallet). Copies of one seed share a storage
// identity; a test that seeds one twice only compares the second with what it pulled.
func seedWallet(t testing.TB, f localstore.Fixture, seed uint64) fixtureWallet {
	t.Helper()
	return fixtureWallet{Path: testkit.SeededWallet(t, f, seed), Identity: localstore.FixtureIdentity(seed), KeyHex: hex.EncodeToString(localstore.FixtureRootKey(seed))}
}

func randomKey(t testing.TB) *secp256k1.PrivateKey {
	t.Helper()
	k, err := secp256k1.GeneratePrivateKeyFromRand(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyHex(k *secp256k1.PrivateKey) string {
	b := k.Key.Bytes()
	return hex.EncodeToString(b[:])
}

func pubHex(k *secp256k1.PrivateKey) string {
	return hex.EncodeToString(k.PubKey().SerializeCompressed())
}

// running is an in-process server on 127.0.0.1.
type running struct {
	*Server
	Listening
	stop func() error // cancels Run and returns its error
}

// startServer opens a server on a new store (with opts' seams) and runs it until the test
// ends or stop is called.
func startServer(t testing.TB, opts Options) *running {
	t.Helper()
	if opts.DBPath == "" && opts.PostgresURL == "" {
		opts.DBPath = filepath.Join(t.TempDir(), "server.sqlite")
	}
	if opts.Signer == nil {
		opts.Signer = auth.NewProtoWallet(randomKey(t))
	}
	opts.Listen = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan Listening, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, func(at Listening) { urls <- at }) }()
	r := &running{Server: srv}
	select {
	case r.Listening = <-urls:
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	}
	var stopped bool
	var runErr error
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return r
}

// rpcCaller sends raw JSON-RPC calls as one identity through walletsync's BRC-104 client.
type rpcCaller struct {
	t  testing.TB
	c  *auth.Client
	id int64
}

func newCaller(t testing.TB, url string, key *secp256k1.PrivateKey) *rpcCaller {
	t.Helper()
	c, err := auth.NewClient(url, auth.NewProtoWallet(key), auth.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &rpcCaller{t: t, c: c}
}

// call sends method with params (each marshaled with encoding/json) and returns the HTTP
// status and the body.
func (r *rpcCaller) call(ctx context.Context, method string, params ...any) (int, []byte, error) {
	raw := make([]json.RawMessage, len(params))
	for i, p := range params {
		if b, ok := p.(json.RawMessage); ok {
			raw[i] = b
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			return 0, nil, err
		}
		raw[i] = b
	}
	r.id++
	body, err := toolbox.AppendRequest(nil, method, r.id, raw...)
	if err != nil {
		return 0, nil, err
	}
	resp, err := r.c.Do(ctx, "POST", "/", body)
	if err != nil {
		return 0, nil, err
	}
	return resp.Status, resp.Body, nil
}

// mustCall is call that fails the test on a transport error.
func (r *rpcCaller) mustCall(method string, params ...any) (int, []byte) {
	r.t.Helper()
	status, body, err := r.call(r.t.Context(), method, params...)
	if err != nil {
		r.t.Fatalf("%s: %v", method, err)
	}
	return status, body
}

// errorName returns the WERR_* name of an HTTP-200 error answer, or "".
func errorName(t testing.TB, body []byte) string {
	t.Helper()
	var ans struct {
		Error *struct{ Name string } `json:"error"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("answer %.200q: %v", body, err)
	}
	if ans.Error == nil {
		return ""
	}
	return ans.Error.Name
}

// logicalWallet reads one user's rows from a store file in walletsync's id-free form,
// without what each store makes its own (see idFree).
func logicalWallet(t testing.TB, path, identity string, ignore ...string) compare.Wallet {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := compare.Read(t.Context(), s, identity, compare.Options{Ignore: append([]string{"users.created_at", "output_baskets.created_at", "proven_tx_reqs.notified"}, ignore...)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sameWallet fails unless the user's rows in the two files are the same, both in
// walletsync's reading (every foreign key through the natural key it points to) and in the
// toolbox's (StorageKnex's finders, every value but the stores' own ids), leaving out the
// columns ignore names ("table.column").
func sameWallet(t testing.TB, want, got, identity string, ignore ...string) {
	t.Helper()
	if d := compare.Diff(logicalWallet(t, want, identity, ignore...), logicalWallet(t, got, identity, ignore...)); d != "" {
		t.Fatalf("walletsync reads %s and %s differently:\n%s", want, got, d)
	}
	var a, b toolboxpeer.Dump
	toolboxpeer.Run(t, &a, "dump", "--db", want, "--identity", identity)
	toolboxpeer.Run(t, &b, "dump", "--db", got, "--identity", identity)
	ta, tb := idFree(t, a, ignore), idFree(t, b, ignore)
	for table, rows := range ta {
		if !slices.Equal(rows, tb[table]) {
			t.Fatalf("the toolbox reads %s differently: %d rows vs %d\nfirst: %v\nsecond: %v", table, len(rows), len(tb[table]), first(rows), first(tb[table]))
		}
	}
	if len(ta["transactions"]) == 0 || len(ta["outputs"]) == 0 {
		t.Fatalf("the toolbox read no rows: %v", ta)
	}
}

func first(rows []string) string {
	if len(rows) == 0 {
		return "(none)"
	}
	return rows[0]
}

// idFree renders a toolbox dump without what two stores legitimately differ in: their own
// ids (every *Id column, outputs.spentBy, proven_tx_reqs.notify's transaction ids; the
// foreign keys are compared by walletsync's reading), the creation time of the user row
// and of the default basket (each store makes its own), the sync states (each store keeps
// its own), and proven_tx_reqs.notified, which BRC-40's merge clears on the consumer (the
// toolbox's addNotifyTransactionId does). Each table becomes its sorted rows as JSON.
func idFree(t testing.TB, d toolboxpeer.Dump, ignore []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table, rows := range d {
		if table == "sync_states" {
			continue
		}
		texts := []string{}
		for _, r := range rows {
			for k := range r {
				if strings.HasSuffix(k, "Id") || k == "spentBy" || (table == "proven_tx_reqs" && (k == "notify" || k == "notified")) || slices.Contains(ignore, table+"."+k) {
					delete(r, k)
				}
			}
			if table == "proven_tx_reqs" {
				// As JSON values: walletsync's merge writes united history notes with
				// their keys sorted, the toolbox in the order they arrived.
				var v any
				if err := json.Unmarshal([]byte(r["history"].(string)), &v); err != nil {
					t.Fatalf("proven_tx_reqs.history: %v", err)
				}
				r["history"] = v
			}
			if table == "users" || (table == "output_baskets" && r["name"] == "default") {
				delete(r, "created_at")
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
		slices.Sort(texts)
		out[table] = texts
	}
	return out
}

// backupResult is storage-client.mjs backup's report.
type backupResult struct {
	SetActive step   `json:"setActive"`
	Updates   []step `json:"updates"`
	Server    string `json:"server"`
}

type step struct {
	Requests int     `json:"requests"`
	Ms       float64 `json:"ms"`
	Inserts  int     `json:"inserts"`
	Updates  int     `json:"updates"`
}

// backup runs the toolbox's WalletStorageManager with src active and url as its backup.
func backup(t testing.TB, url string, src fixtureWallet) backupResult {
	t.Helper()
	var res backupResult
	toolboxpeer.RunScript(t, &res, "storage-client.mjs", "backup", "--url", url, "--key", src.KeyHex, "--db", src.Path)
	return res
}

// requireFirstBackup fails unless res is a first backup (setActive inserted rows) followed
// by two unchanged ones that moved nothing.
func requireFirstBackup(t testing.TB, res backupResult) {
	t.Helper()
	if res.SetActive.Inserts == 0 || len(res.Updates) != 2 {
		t.Fatalf("backup: %+v", res)
	}
	for i, u := range res.Updates {
		if u.Inserts != 0 || u.Updates != 0 {
			t.Fatalf("unchanged backup %d moved rows: %+v", i+1, u)
		}
	}
}

// clientCall runs one StorageClient method through storage-client.mjs call.
type clientAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		IsWERR  bool   `json:"isWERR"`
	} `json:"error"`
}

func clientCall(t testing.TB, url, keyHex, method string, params ...any) clientAnswer {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var ans clientAnswer
	toolboxpeer.RunScript(t, &ans, "storage-client.mjs", "call", "--url", url, "--key", keyHex, "--method", method, "--params", string(b))
	return ans
}

// waitFor polls cond until it holds or the test's time runs out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
