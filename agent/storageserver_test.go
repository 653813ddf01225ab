package agent

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// writeKeyFile writes the fixture identity n's root key as a key file (0600) and returns
// its path.
func writeKeyFile(t *testing.T, n uint64, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "identity.key")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(localstore.FixtureRootKey(n))+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// serverDestination is a storage-server destination of srvURL, paused (runs only by hand).
func serverDestination(srvURL string) api.Destination {
	return api.Destination{ID: "server", Name: "Storage server", Kind: api.DestinationStorageServer, Path: srvURL,
		Schedule: api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}, Pause: &api.Pause{}}
}

// TestAgent_AddServerDestination_RefusesInWords adds a storage-server destination through
// the API against a real toolbox StorageServer and servers that are not one: each refusal
// says in words what went wrong, matches its typed error, and leaves neither a destination
// nor a key behind. The good one keeps the key in the secrets, not in the config.
func TestAgent_AddServerDestination_RefusesInWords(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall) // identity FixtureIdentity(4), test network
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	notToolbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>a web page</html>")) }))
	t.Cleanup(notToolbox.Close)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	goodKey := writeKeyFile(t, 4, 0o600)

	for _, tc := range []struct {
		name    string
		url     string
		signer  api.ServerSigner
		problem api.ServerProblem
		is      error
		words   string
	}{
		{"unreachable", closedURL(t), api.ServerSigner{KeyFile: goodKey}, api.ServerUnreachable, wallet.ErrUnavailable, "nothing answers there"},
		{"not a toolbox server", notToolbox.URL, api.ServerSigner{KeyFile: goodKey}, api.ServerNotToolbox, toolbox.ErrNotStorageServer, "not a wallet-toolbox storage server"},
		{"another identity", srv.URL, api.ServerSigner{KeyFile: writeKeyFile(t, 5, 0o600)}, api.ServerUnauthorized, wallet.ErrUnauthorized, "not one of your wallet's identities"},
		{"key file others can read", srv.URL, api.ServerSigner{KeyFile: writeKeyFile(t, 4, 0o644)}, api.ServerBadKey, auth.ErrKeyFileMode, "cannot sign"},
		{"not a key", srv.URL, api.ServerSigner{Key: api.NewSecret("not a key")}, api.ServerBadKey, auth.ErrKeyFile, "cannot sign"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := api.ServerDestinationRequest{Destination: serverDestination(tc.url), Signer: tc.signer}
			_, err := a.addServerDestination(t.Context(), req)
			var sc *api.ServerCheckError
			if !errors.As(err, &sc) || sc.Problem != tc.problem || !errors.Is(err, tc.is) || !errors.Is(err, api.ErrServerCheck) {
				t.Fatalf("got %v, want %s matching %v", err, tc.problem, tc.is)
			}
			// Through the API: the same refusal, in words.
			apiErr := c.Call(context.Background(), api.RouteServerDestinationAdd, req, nil)
			var ae *api.APIError
			if !errors.As(apiErr, &ae) || ae.Code != "server_check" || !strings.Contains(ae.Message, tc.words) || ae.Hint == "" {
				t.Fatalf("the API says %#v", apiErr)
			}
			if _, err := findDestination(a.config(), "server"); err == nil {
				t.Fatal("a refused destination was saved")
			}
			if _, err := a.secrets.Get(storageKeySecret("server")); err == nil {
				t.Fatal("a refused destination's key was kept")
			}
			if tc.url == srv.URL {
				assertNoServerUser(t, srv.DB, localstore.FixtureIdentity(5))
			}
		})
	}

	// The wrong network: the server keeps test-network wallets.
	if _, err := checkServer(t.Context(), srv.URL, fixtureSigner(t, 4), wallet.ChainMain, nil); !errors.Is(err, wallet.ErrWrongChain) ||
		!strings.Contains(api.Explain(err).Message, "keeps test network wallets, and your wallet is on the main network") {
		t.Fatalf("wrong chain: %v (%q)", err, api.Explain(err).Message)
	}

	// The good one.
	req := api.ServerDestinationRequest{Destination: serverDestination(srv.URL), Signer: api.ServerSigner{KeyFile: goodKey}}
	if err := c.Call(context.Background(), api.RouteServerDestinationAdd, req, nil); err != nil {
		t.Fatal(err)
	}
	cfgText, err := os.ReadFile(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfgText), srv.URL) || strings.Contains(string(cfgText), hex.EncodeToString(localstore.FixtureRootKey(4))) {
		t.Fatalf("config: %s", cfgText)
	}
	if sec, err := a.secrets.Get(storageKeySecret("server")); err != nil || sec.Reveal() != hex.EncodeToString(localstore.FixtureRootKey(4)) {
		t.Fatalf("the key in the secrets: %v", err)
	}

	// An edit that moves it to another URL is checked too; a rename is not.
	moved := serverDestination(closedURL(t))
	if err := c.Call(context.Background(), api.RouteServerDestinationPut, moved, nil, "server"); err == nil || !strings.Contains(err.Error(), "nothing answers there") {
		t.Fatalf("moved to a closed port: %v", err)
	}
	renamed := serverDestination(srv.URL)
	renamed.Name = "Renamed"
	if err := c.Call(context.Background(), api.RouteServerDestinationPut, renamed, nil, "server"); err != nil {
		t.Fatal(err)
	}
	if d, err := findDestination(a.config(), "server"); err != nil || d.Name != "Renamed" || d.Path != srv.URL {
		t.Fatalf("after the edits: %+v %v", d, err)
	}
}

// fixtureSigner signs as the fixture identity n.
func fixtureSigner(t *testing.T, n uint64) auth.Signer {
	t.Helper()
	key, err := auth.ParseKeyFile([]byte(hex.EncodeToString(localstore.FixtureRootKey(n)) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return auth.NewProtoWallet(key)
}

// TestAgent_ServerLastConfirmed_SurvivesRestart pushes to a real toolbox StorageServer and
// reads, in the overview, when the server confirmed the push; a new agent on the same data
// folder says the same. Another signer is another place, with a history of its own.
func TestAgent_ServerLastConfirmed_SurvivesRestart(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	// A Secret never marshals its value: the body is written as the page writes it.
	req := map[string]any{"destination": serverDestination(srv.URL), "signer": map[string]string{"key": hex.EncodeToString(localstore.FixtureRootKey(4))}}
	if err := c.Call(context.Background(), api.RouteServerDestinationAdd, req, nil); err != nil {
		t.Fatal(err)
	}
	overview := func(c *api.Client) api.DestinationView {
		t.Helper()
		var ov api.Overview
		if err := c.Call(context.Background(), api.RouteOverview, nil, &ov); err != nil {
			t.Fatal(err)
		}
		for _, d := range ov.Destinations {
			if d.ID == "server" {
				return d
			}
		}
		t.Fatal("no server in the overview")
		return api.DestinationView{}
	}
	if v := overview(c); !v.LastConfirmed.IsZero() {
		t.Fatalf("confirmed before any push: %v", v.LastConfirmed)
	}
	task := runAndWait(t, c, a, api.RouteRun, "server")
	if task.State != api.TaskSucceeded {
		t.Fatalf("push: %+v", task)
	}
	before := overview(c)
	if before.LastConfirmed.IsZero() || before.LastConfirmed.After(task.FinishedAt) || before.LastConfirmed.Before(task.StartedAt) {
		t.Fatalf("last confirmed %v, task ran %v to %v", before.LastConfirmed, task.StartedAt, task.FinishedAt)
	}
	// Another signer is another place: it holds nothing yet, and its failure (a key of
	// another identity fails at once) is its own.
	if err := a.secrets.Set(storageKeySecret("server"), api.NewSecret(hex.EncodeToString(localstore.FixtureRootKey(5)))); err != nil {
		t.Fatal(err)
	}
	if failed := runAndWait(t, c, a, api.RouteRun, "server"); failed.State != api.TaskFailed {
		t.Fatalf("push signed by another identity: %+v", failed)
	}
	if v := overview(c); !v.LastConfirmed.IsZero() || !v.LastSuccess.IsZero() || v.LastFailure.IsZero() {
		t.Fatalf("another signer kept the first one's history: %+v", v)
	}
	// The first signer back: its confirmation is there again, and after a restart.
	if err := a.secrets.Set(storageKeySecret("server"), api.NewSecret(hex.EncodeToString(localstore.FixtureRootKey(4)))); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	launchAgent(t, e.opts)
	after := overview(apiClient(t, e.opts.Dir))
	if !after.LastConfirmed.Equal(before.LastConfirmed) || !after.LastFailure.IsZero() {
		t.Fatalf("after a restart: last confirmed %v (was %v), last failure %v", after.LastConfirmed, before.LastConfirmed, after.LastFailure)
	}
}

// TestAgent_RestoreFromServer fills a real toolbox StorageServer from one wallet, then
// restores it through the agent into another, empty one: the preview counts what the
// server holds and writes nothing to the wallet; the confirmed restore makes the wallet
// hold the same rows as the original, table by table.
func TestAgent_RestoreFromServer(t *testing.T) {
	ctx := waitCtx(t)
	e := newAgentEnv(t, localstore.FixtureSmall)
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	key := hex.EncodeToString(localstore.FixtureRootKey(4))
	orig, err := localstore.Open(ctx, e.wallet, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	client, err := toolbox.Dial(srv.URL, fixtureSigner(t, 4), toolbox.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syncer.RunChunks(ctx, orig, client, e.identity, syncer.ChunkOptions{Active: wallet.KeepSourceActive}); err != nil {
		t.Fatal(err)
	}

	// The agent protects a new, empty wallet.
	empty := filepath.Join(e.dir, "new-laptop.sqlite")
	s, err := localstore.Create(ctx, empty, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Wallets, cfg.Destinations = []api.WalletRef{{Path: empty}}, nil
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)

	var pt api.Task
	if err := c.Call(ctx, api.RouteServerRestorePreview, map[string]any{"url": srv.URL, "signer": map[string]string{"key": key}}, &pt); err != nil {
		t.Fatal(err)
	}
	if pt, err = a.tasks.Wait(ctx, pt.ID); err != nil || pt.State != api.TaskSucceeded {
		t.Fatalf("preview: %+v %v", pt, err)
	}
	var p api.ServerRestorePreview
	if err := json.Unmarshal(pt.Result, &p); err != nil {
		t.Fatal(err)
	}
	want, err := orig.Summary(ctx, e.identity)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range wallet.Entities {
		if p.Counts[tb.Name] != want.Counts[tb.Name] {
			t.Errorf("preview counts %d %s, the original holds %d", p.Counts[tb.Name], tb.Name, want.Counts[tb.Name])
		}
	}
	if p.IdentityKey != e.identity || p.Chain != wallet.ChainTest || p.StorageIdentityKey != srv.IdentityKey || p.Total < 20 {
		t.Fatalf("preview: %+v", p)
	}
	if w, err := a.wallet(ctx, empty); err != nil {
		t.Fatal(err)
	} else if _, err := w.store.Summary(ctx, e.identity); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("the preview wrote to the wallet: %v", err)
	}

	var ae *api.APIError
	if err := c.Call(ctx, api.RouteServerRestore, api.ServerRestoreRequest{Preview: pt.ID}, nil); !errors.As(err, &ae) || ae.Code != "invalid_argument" {
		t.Fatalf("a restore without confirm: %v", err)
	}
	// The restore writes as a background writer: while the wallet app holds the write
	// slot it waits, at its first commit, and a cancel then stops it with no row of the
	// server written; the staged rows stay, so confirming the same preview again finishes.
	w, err := a.wallet(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	app := w.queue.NewSession("", "wallet app")
	g, err := app.Acquire(ctx, scheduler.Foreground, scheduler.Write)
	if err != nil {
		t.Fatal(err)
	}
	var rt api.Task
	if err := c.Call(ctx, api.RouteServerRestore, api.ServerRestoreRequest{Preview: pt.ID, Confirm: true}, &rt); err != nil {
		t.Fatal(err)
	}
	for !strings.HasPrefix(rt.Detail, string(syncer.StateCommitting)) && !rt.State.Terminal() {
		if err := ctx.Err(); err != nil {
			t.Fatalf("the restore never reached its first commit: %+v", rt)
		}
		time.Sleep(10 * time.Millisecond)
		rt, _ = a.tasks.Get(rt.ID)
	}
	if err := c.Call(ctx, api.RouteTaskCancel, nil, nil, rt.ID); err != nil {
		t.Fatal(err)
	}
	if rt, err = a.tasks.Wait(ctx, rt.ID); err != nil || rt.State != api.TaskCancelled {
		t.Fatalf("the cancelled restore: %+v %v", rt, err)
	}
	app.Release(g)
	if sum, err := w.store.Summary(ctx, e.identity); err == nil && sum.Counts[wallet.Transactions.Name] != 0 {
		t.Fatalf("a cancelled restore wrote %d transactions", sum.Counts[wallet.Transactions.Name])
	}
	if err := c.Call(ctx, api.RouteServerRestore, api.ServerRestoreRequest{Preview: pt.ID, Confirm: true}, &rt); err != nil {
		t.Fatal(err)
	}
	if rt, err = a.tasks.Wait(ctx, rt.ID); err != nil || rt.State != api.TaskSucceeded || rt.Counters.Inserts == 0 {
		t.Fatalf("restore: %+v %v", rt, err)
	}
	if left, _ := filepath.Glob(filepath.Join(a.serverStagingDir(), "*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
	// The same wallet, table by table, but for what each store keeps of its own.
	opts := compare.Options{Ignore: []string{"users.created_at", "users.activeStorage", "output_baskets.created_at", "proven_tx_reqs.notified"}}
	got, err := compare.Read(ctx, w.store, e.identity, opts)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := compare.Read(ctx, orig, e.identity, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := compare.Diff(exp, got); d != "" {
		t.Fatalf("the restored wallet differs from the original:\n%s", d)
	}
}

// assertNoServerUser fails if the toolbox server's store at db holds a user of identity:
// checking a server before saving a destination must not make one for a refused key.
func assertNoServerUser(t *testing.T, db, identity string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM users WHERE identityKey = ?", identity).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the check made a user of the refused identity %s on the server", wallet.ShortKey(identity, 16))
	}
}
