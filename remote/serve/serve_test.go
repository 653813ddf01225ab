package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/testkit/crash"
	"walletsync/testkit/tier"
	"walletsync/testkit/toolboxpeer"
	"walletsync/testkit/walletsynctest"
	"walletsync/wallet"
)

// startBinary runs `walletsync serve` (the built binary exe) on db (a SQLite path or a
// postgres:// URL) with keyFile and returns its URL and the process.
func startBinary(t *testing.T, exe, db, keyFile string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	if !strings.HasPrefix(db, "postgres://") {
		db = "sqlite:" + db
	}
	cmd := exec.Command(exe, append([]string{"serve", "--listen", "127.0.0.1:0", "--db", db, "--key-file", keyFile}, extra...)...)
	line, _ := startChild(t, cmd)
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[2] != "listening" {
		t.Fatalf("walletsync serve said %q", line)
	}
	return fields[4], cmd
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The real toolbox (WalletStorageManager and StorageClient of 2.1.26, signing as the
// fixture's user) backs the toolbox fixture up to the walletsync serve binary, and a second
// user's small fixture beside it, and restores the second from there (a TS pull of the
// toolbox fixture takes minutes in the toolbox's own merge): the server's rows, and the
// restored ones, equal the source's in both walletsync's and the toolbox's reading; an
// unchanged backup moves nothing; errors arrive as WERR_* classes; health, readiness and
// metrics answer; SIGTERM stops it cleanly.
func TestServe_ToolboxClientBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "walletsync")
	walletsynctest.BuildSelf(t, exe)
	src := seedWallet(t, localstore.FixtureToolbox, 1)
	keyFile := filepath.Join(dir, "server.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "server.sqlite")
	url, cmd := startBinary(t, exe, db, keyFile)

	if status, body := get(t, url+"/"); status != 200 || body != "BRC-100 testNet Storage Provider." {
		t.Fatalf("GET / = %d %q", status, body)
	}
	if status, body := get(t, url+"/healthz"); status != 200 {
		t.Fatalf("healthz = %d %q", status, body)
	}
	if status, body := get(t, url+"/readyz"); status != 200 {
		t.Fatalf("readyz = %d %q", status, body)
	}

	res := backup(t, url, src)
	requireFirstBackup(t, res)

	// Typed errors, rebuilt by the TypeScript client.
	other := pubHex(randomKey(t))
	for _, c := range []struct {
		method string
		params []any
		want   string
	}{
		{"listActions", []any{map[string]any{"identityKey": src.Identity}, map[string]any{}}, "WERR_NOT_IMPLEMENTED"},
		{"findOrInsertUser", []any{other}, "WERR_UNAUTHORIZED"},
		{"getSyncChunk", []any{map[string]any{"identityKey": other, "maxRoughSize": 1000, "maxItems": 10, "offsets": []any{},
			"fromStorageIdentityKey": res.Server, "toStorageIdentityKey": other}}, "WERR_UNAUTHORIZED"},
	} {
		ans := clientCall(t, url, src.KeyHex, c.method, c.params...)
		if ans.Error == nil || ans.Error.Name != c.want || !ans.Error.IsWERR {
			t.Fatalf("%s: %+v, want %s", c.method, ans, c.want)
		}
	}

	small := seedWallet(t, localstore.FixtureSmall, 5)
	backup(t, url, small)
	restored := filepath.Join(dir, "restored.sqlite")
	var pulled step
	toolboxpeer.RunScript(t, &pulled, "storage-client.mjs", "restore", "--url", url, "--key", small.KeyHex, "--db", restored)
	if pulled.Inserts == 0 {
		t.Fatalf("restore: %+v", pulled)
	}

	status, metrics := get(t, url+"/metrics")
	for _, want := range []string{
		`walletsync_serve_requests_total{method="processSyncChunk",outcome="ok"}`,
		`walletsync_serve_requests_total{method="listActions",outcome="WERR_NOT_IMPLEMENTED"} 1`,
		`walletsync_serve_requests_total{method="findOrInsertUser",outcome="WERR_UNAUTHORIZED"} 1`,
		"walletsync_serve_commit_seconds_count ", "walletsync_serve_received_bytes_total ", "walletsync_serve_sent_bytes_total ",
	} {
		if status != 200 || !strings.Contains(metrics, want) {
			t.Fatalf("metrics (%d) lack %q:\n%s", status, want, metrics)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("walletsync serve after SIGTERM: %v", err)
	}
	sameWallet(t, src.Path, db, src.Identity)
	sameWallet(t, small.Path, db, small.Identity)
	// A pull keeps the puller's own activeStorage (syncFromReader), as it must.
	sameWallet(t, small.Path, restored, small.Identity, "users.activeStorage")
}

// The answers of walletsync serve have the shape of the toolbox StorageServer's own: the
// same calls, made by the same identity to both, answer with the same HTTP status, the
// same keys with the same JSON types, the same error classes and the same flags. On every
// backend.
func TestServe_AnswersLikeToolboxServer(t *testing.T) {
	theirs := startNodeServer(t)
	for _, be := range serverBackends {
		t.Run(be.name, func(t *testing.T) { answersLikeToolbox(t, theirs, startServer(t, be.options(t))) })
	}
}

func answersLikeToolbox(t *testing.T, theirs string, ours *running) {
	user := randomKey(t)
	me := pubHex(user)
	other := pubHex(randomKey(t))
	producer := pubHex(randomKey(t))

	type call struct {
		method string
		params func(server string) []any
	}
	offsets := []map[string]any{}
	for _, e := range wallet.Entities {
		offsets = append(offsets, map[string]any{"name": e.Entity, "offset": 0})
	}
	emptyChunk := func(server string) map[string]any {
		c := map[string]any{"fromStorageIdentityKey": producer, "toStorageIdentityKey": server, "userIdentityKey": me}
		for _, e := range wallet.Entities {
			c[e.Plural] = []any{}
		}
		return c
	}
	none := func(string) []any { return []any{} }
	calls := []call{
		{"makeAvailable", none},
		{"migrate", func(string) []any { return []any{"client"} }},
		{"destroy", none},
		{"findOrInsertUser", func(string) []any { return []any{me} }},
		{"findOrInsertUser", func(string) []any { return []any{other} }},
		{"findOrInsertSyncStateAuth", func(string) []any { return []any{map[string]any{"identityKey": me}, producer, "prod"} }},
		{"findOrInsertSyncStateAuth", func(string) []any { return []any{map[string]any{"identityKey": me}, producer, "prod"} }},
		{"findOrInsertSyncStateAuth", func(string) []any { return []any{map[string]any{"identityKey": other}, producer, "prod"} }},
		{"processSyncChunk", func(s string) []any {
			return []any{map[string]any{"identityKey": me, "maxRoughSize": 100000, "maxItems": 100, "offsets": offsets,
				"fromStorageIdentityKey": producer, "toStorageIdentityKey": s}, emptyChunk(s)}
		}},
		{"setActive", func(string) []any { return []any{map[string]any{"identityKey": me}, producer} }},
		{"getSyncChunk", func(s string) []any {
			return []any{map[string]any{"identityKey": me, "maxRoughSize": 100000, "maxItems": 100, "offsets": []any{},
				"fromStorageIdentityKey": s, "toStorageIdentityKey": producer}}
		}},
		{"getSyncChunk", func(s string) []any {
			return []any{map[string]any{"identityKey": other, "maxRoughSize": 100000, "maxItems": 100, "offsets": []any{},
				"fromStorageIdentityKey": s, "toStorageIdentityKey": producer}}
		}},
		{"getSettings", none},
		{"listActions", func(string) []any { return []any{map[string]any{"identityKey": other}, map[string]any{}} }},
		{"noSuchMethod", none},
	}
	run := func(url string) []string {
		c := newCaller(t, url, user)
		_, settings := c.mustCall("getSettings")
		var s struct {
			Result struct{ StorageIdentityKey string }
		}
		if err := json.Unmarshal(settings, &s); err != nil {
			t.Fatalf("getSettings %s: %v", settings, err)
		}
		var out []string
		for _, cl := range calls {
			status, body := c.mustCall(cl.method, cl.params(s.Result.StorageIdentityKey)...)
			out = append(out, cl.method+": "+shape(t, status, body))
		}
		return out
	}
	want, got := run(theirs), run(ours.URL)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d:\n toolbox:    %s\n walletsync: %s", i, want[i], got[i])
		} else {
			t.Logf("%s", got[i])
		}
	}
}

// shape renders an answer as its status, its keys and their JSON types, and the values
// that do not depend on the server (error names and codes, isNew, done, counts, the
// setActive and migrate results).
func shape(t testing.TB, status int, body []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("answer %.200q: %v", body, err)
	}
	var sb strings.Builder
	sb.WriteString(http.StatusText(status))
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(path+"."+k, x[k])
			}
			return
		case []any:
			sb.WriteString(" " + path + ":array")
			for _, e := range x {
				walk(path+"[]", e)
			}
			return
		}
		sb.WriteString(" " + path + ":" + jsonType(v))
		last := path[strings.LastIndexByte(path, '.')+1:]
		switch last {
		case "name", "code", "isNew", "done", "inserts", "updates", "isError", "status", "init":
			b, _ := json.Marshal(v)
			sb.WriteString("=" + string(b))
		case "result":
			if _, isString := v.(string); isString || jsonType(v) == "number" {
				b, _ := json.Marshal(v)
				sb.WriteString("=" + string(b))
			}
		}
	}
	walk("", v)
	return sb.String()
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "?"
}

// startNodeServer runs the toolbox's own StorageServer (interop/storage-server.mjs) on a
// new store and returns its URL.
func startNodeServer(t *testing.T) string {
	t.Helper()
	tier.Full(t, "Node and the @bsv/wallet-toolbox peer")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "interop", "storage-server.mjs")
	cmd := exec.Command(node, script, "--db", filepath.Join(t.TempDir(), "toolbox.sqlite"), "--key", keyHex(randomKey(t)))
	cmd.Env = append(os.Environ(), "TZ=UTC")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("storage-server.mjs after its stdin closed: %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("storage-server.mjs: %v\n%s", err, stderr.String())
	}
	var ready struct{ Port int }
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("storage-server.mjs said %q: %v", line, err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(ready.Port)
}

// A graceful shutdown lets a processSyncChunk that is already running commit and answer:
// readiness turns false at once, the commit's rows are in the store afterwards, and Run
// returns without error.
func TestServe_ShutdownDrainsCommit(t *testing.T) {
	src := seedWallet(t, localstore.FixtureSmall, 3)
	started, release := make(chan struct{}), make(chan struct{})
	srv := startServer(t, Options{wrapStore: func(s toolbox.Store) toolbox.Store { return &heldStore{Store: s, started: started, release: release} }})
	sik := srv.Settings().StorageIdentityKey
	key := secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(3))
	c := newCaller(t, srv.URL, key)

	source, err := localstore.Open(t.Context(), src.Path, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	from, err := source.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if status, body := c.mustCall("findOrInsertSyncStateAuth", map[string]any{"identityKey": src.Identity}, from.StorageIdentityKey, from.StorageName); status != 200 || errorName(t, body) != "" {
		t.Fatalf("findOrInsertSyncStateAuth: %d %s", status, body)
	}
	args := brc40.SyncState{StorageIdentityKey: from.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(src.Identity, sik, 0, 0)
	chunk, err := source.GetSyncChunk(t.Context(), args)
	source.Close()
	if err != nil {
		t.Fatal(err)
	}
	argsJSON, _ := args.MarshalJSON()
	chunkJSON, _ := chunk.MarshalJSON()

	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		status, body, err := c.call(context.Background(), "processSyncChunk", json.RawMessage(argsJSON), json.RawMessage(chunkJSON))
		answered <- answer{status, body, err}
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- srv.stop() }()
	waitFor(t, "readiness to turn false", func() bool {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code == http.StatusServiceUnavailable
	})
	close(release)
	a := <-answered
	if a.err != nil || a.status != 200 || errorName(t, a.body) != "" {
		t.Fatalf("the commit in flight: %d %s %v", a.status, a.body, a.err)
	}
	var res struct{ Result brc40.ProcessSyncChunkResult }
	if err := json.Unmarshal(a.body, &res); err != nil || res.Result.Inserts == 0 {
		t.Fatalf("result %s: %v", a.body, err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run after the shutdown: %v", err)
	}
	want, got := logicalWallet(t, src.Path, src.Identity), logicalWallet(t, srv.opts.DBPath, src.Identity)
	for _, table := range []wallet.TableName{wallet.Transactions.Name, wallet.Outputs.Name, wallet.ProvenTxReqs.Name} {
		if len(got[table]) != len(want[table]) {
			t.Fatalf("%s: %d rows after the drained commit, want %d", table, len(got[table]), len(want[table]))
		}
	}
}

// heldStore holds every processSyncChunk until release is closed, after closing started.
type heldStore struct {
	toolbox.Store
	started, release chan struct{}
}

func (h *heldStore) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	close(h.started)
	<-h.release
	return h.Store.ProcessSyncChunk(ctx, args, chunk)
}

// A server killed (SIGKILL) in the middle of a chunk's commit, its rows written and not
// committed, restarts on the same store, and the toolbox client's next backup completes
// with the rows exact.
func TestServe_KilledMidCommitThenBackupCompletes(t *testing.T) {
	dir := t.TempDir()
	src := seedWallet(t, localstore.FixtureSmall, 4)
	keyFile := filepath.Join(dir, "server.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "server.sqlite")
	url, wait := startChild(t, crash.Command(t, crash.Point{At: localstore.HookRowsWritten, N: 1}, crashTask{DB: db, KeyFile: keyFile}))
	var res backupResult
	if err := toolboxpeer.TryScript(t.Context(), &res, "storage-client.mjs", "backup", "--url", url, "--key", src.KeyHex, "--db", src.Path); err == nil {
		t.Fatalf("the backup completed against a server killed mid-commit: %+v", res)
	}
	if rest, err := wait(); !killedAt(err, rest) {
		t.Fatalf("crash child: %v, want death by SIGKILL at its boundary\n%s", err, rest)
	}

	exe := filepath.Join(dir, "walletsync")
	walletsynctest.BuildSelf(t, exe)
	url2, _ := startBinary(t, exe, db, keyFile)
	res = backup(t, url2, src)
	if res.SetActive.Inserts == 0 {
		t.Fatalf("the backup after the restart inserted nothing: %+v", res)
	}
	for _, u := range res.Updates {
		if u.Inserts != 0 || u.Updates != 0 {
			t.Fatalf("an unchanged backup moved rows: %+v", res)
		}
	}
	sameWallet(t, src.Path, db, src.Identity)
}

// The metrics listener serves /metrics, /healthz and /readyz on its own address; the main
// one then keeps them behind authentication.
func TestServe_MetricsListen(t *testing.T) {
	l := startServer(t, Options{MetricsListen: "127.0.0.1:0"})
	if l.MetricsURL == l.URL {
		t.Fatalf("one address for both: %+v", l.Listening)
	}
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if status, body := get(t, l.MetricsURL+p); status != 200 {
			t.Fatalf("%s on the metrics listener: %d %q", p, status, body)
		}
		if status, _ := get(t, l.URL+p); status != http.StatusUnauthorized {
			t.Fatalf("%s on the main listener: %d, want 401", p, status)
		}
	}
	if status, body := get(t, l.MetricsURL+"/metrics"); status != 200 || !strings.Contains(body, "walletsync_serve_in_flight_requests 0") {
		t.Fatalf("metrics: %d %s", status, body)
	}
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
}

// A store of another chain is refused before the server listens.
func TestServe_RefusesStoreOfAnotherChain(t *testing.T) {
	db := filepath.Join(t.TempDir(), "main.sqlite")
	s, err := localstore.Create(t.Context(), db, localstore.CreateOptions{Chain: wallet.ChainMain}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(t.Context(), Options{DBPath: db, Chain: wallet.ChainTest, Signer: auth.NewProtoWallet(randomKey(t)), Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, wallet.ErrWrongChain) {
		t.Fatalf("open a main-chain store as test: %v, want ErrWrongChain", err)
	}
}

// A body declared larger than the toolbox's 30 MB is refused with 413 before it is read.
func TestServe_RefusesLargeBodyUnread(t *testing.T) {
	srv := startServer(t, Options{})
	const size = 31 << 20
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if n := srv.metrics.bytesIn.Load(); n > 1<<20 {
		t.Fatalf("the server read %d bytes of a body it refused", n)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
