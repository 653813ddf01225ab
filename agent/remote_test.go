package agent

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"walletsync/agent/api"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/servetest"
	"walletsync/testkit/toolboxpeer"
)

// serverDestinationEnv is an agent whose config has the storage-server destination
// "server" at srvURL, the identity's key in its secrets.
func serverDestinationEnv(t *testing.T, e agentEnv, srvURL string) (*Agent, *api.Client) {
	t.Helper()
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Destinations = append(cfg.Destinations, serverDestination(srvURL))
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	if err := a.secrets.Set(storageKeySecret("server"), api.NewSecret(hex.EncodeToString(localstore.FixtureRootKey(4)))); err != nil {
		t.Fatal(err)
	}
	return a, c
}

// serverPush reads a storage-server push task's result.
func serverPush(t *testing.T, task api.Task) api.ServerPushResult {
	t.Helper()
	var res api.ServerPushResult
	if err := jsonUnmarshal(task.Result, &res); err != nil || len(res.Sessions) != 1 {
		t.Fatalf("result %s: %v", task.Result, err)
	}
	return res
}

// TestAgent_StorageServerDestination backs the wallet up through the API to walletsync
// serve and to the toolbox's own StorageServer: each push speaks the wire the server
// offers (walletsync's where it has it), says which in its result and log, and is
// confirmed; the server then holds the wallet's rows. Without the key a run fails with a
// hint, and the config refuses a path that is not a URL.
func TestAgent_StorageServerDestination(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire remote.Wire
		// start starts the server and returns its URL and a check of what it holds of the
		// identity once the push is done.
		start func(t *testing.T, e agentEnv) (string, func(t *testing.T))
	}{
		{"WalletsyncServe", remote.Walletsync, func(t *testing.T, e agentEnv) (string, func(t *testing.T)) {
			srv := servetest.Start(t, servetest.Paged())
			return srv.URL, func(t *testing.T) {
				mine, err := localstore.Open(context.Background(), e.wallet, localstore.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer mine.Close()
				compare.SameWallet(t, mine, srv.Store(), e.identity)
			}
		}},
		{"ToolboxStorageServer", remote.Toolbox, func(t *testing.T, e agentEnv) (string, func(t *testing.T)) {
			srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
			return srv.URL, func(t *testing.T) {
				var dump toolboxpeer.Dump
				toolboxpeer.Run(t, &dump, "dump", "--db", srv.DB, "--identity", e.identity)
				if len(dump["transactions"]) != 6 || len(dump["users"]) != 1 || dump["users"][0]["activeStorage"] == srv.IdentityKey {
					t.Fatalf("the server holds %d transactions, user %v", len(dump["transactions"]), dump["users"])
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAgentEnv(t, localstore.FixtureSmall) // FixtureIdentity(4)
			url, holds := tc.start(t, e)
			cfg, err := loadConfig(e.opts.ConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			bad := cfg
			bad.Destinations = append(bad.Destinations, api.Destination{ID: "server", Name: "Storage server", Kind: api.DestinationStorageServer, Path: "/not/a/url"})
			if err := validateConfig(bad); err == nil || !strings.Contains(err.Error(), "http(s) URL") {
				t.Fatalf("a storage server with a file path: %v", err)
			}
			cfg.Destinations = append(cfg.Destinations, serverDestination(url))
			if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
				t.Fatal(err)
			}
			a := launchAgent(t, e.opts)
			c := apiClient(t, e.opts.Dir)

			if task := runAndWait(t, c, a, api.RouteRun, "server"); task.State != api.TaskFailed || !strings.Contains(task.Error, "no signing key") {
				t.Fatalf("without a key: %+v", task)
			}
			body := map[string]string{"value": hex.EncodeToString(localstore.FixtureRootKey(4))}
			if err := c.Call(context.Background(), api.RouteSecretSet, body, nil, storageKeySecret("server")); err != nil {
				t.Fatal(err)
			}
			task := runAndWait(t, c, a, api.RouteRun, "server")
			res := serverPush(t, task)
			if task.State != api.TaskSucceeded || res.Wire != tc.wire || res.Sessions[0].State != syncer.StateCompleted || res.ConfirmedAt.IsZero() {
				t.Fatalf("push to the storage server: %+v %s", task, task.Result)
			}
			log, err := a.tasks.Log(task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(log, func(l api.LogLine) bool { return strings.Contains(l.Text, "over the "+string(tc.wire)+" wire") }) {
				t.Errorf("the task's log does not name the %s wire: %+v", tc.wire, log)
			}
			holds(t)
		})
	}
}

// TestAgent_StorageServerDestination_UnchangedIsOneRequest: a second push of an unchanged
// wallet to walletsync serve is, on walletsync's wire, one request (begin) after the dial
// (wire.Detect's GET, the handshake, the capabilities probe), and is confirmed again.
func TestAgent_StorageServerDestination_UnchangedIsOneRequest(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	srv := servetest.Start(t, servetest.Paged())
	a, c := serverDestinationEnv(t, e, srv.URL)
	first := runAndWait(t, c, a, api.RouteRun, "server")
	if first.State != api.TaskSucceeded || serverPush(t, first).Wire != remote.Walletsync {
		t.Fatalf("first push: %+v %s", first, first.Result)
	}
	before := len(srv.Paths())
	again := runAndWait(t, c, a, api.RouteRun, "server")
	res := serverPush(t, again)
	s := res.Sessions[0]
	if again.State != api.TaskSucceeded || s.Kind != syncer.KindUnchanged || s.Rows != 0 || s.Requests != 1 || !res.ConfirmedAt.After(serverPush(t, first).ConfirmedAt) {
		t.Fatalf("unchanged push: %+v %s", again, again.Result)
	}
	want := []string{wire.Prefix, "/.well-known/auth", wire.Prefix + "capabilities", wire.Prefix + "begin"}
	if got := srv.Paths()[before:]; !slices.Equal(got, want) {
		t.Errorf("the unchanged push sent %q, want %q", got, want)
	}
}

// TestAgent_StorageServerDestination_CancelThenResume: a push to walletsync serve cancelled
// midway keeps what the server acknowledged (its checkpoint, kept on the server), and the
// next push continues from there instead of starting over, then is confirmed.
func TestAgent_StorageServerDestination_CancelThenResume(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureToolbox)
	e.opts.SyncMaxRows = 20
	srv := servetest.Start(t, servetest.Paged())
	a, c := serverDestinationEnv(t, e, srv.URL)
	done := cancelAfterPages(t, a, "server", 3)
	if done.State != api.TaskCancelled {
		t.Fatalf("cancelled push: %+v", done)
	}
	cancelled := serverPush(t, done)
	cp := cancelled.Sessions[0].Checkpoint
	// The server's durable checkpoint, as its wire tells it to the next session.
	signer := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(4)))
	server, err := remote.Dial(context.Background(), srv.URL, signer, remote.Walletsync, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	durable, err := server.Paged.Checkpoint(context.Background(), cp.Session)
	if err != nil || durable.Seq != cp.Seq || durable.Seq < 3 || durable.Done || !cancelled.ConfirmedAt.IsZero() || cancelled.Wire != remote.Walletsync {
		t.Fatalf("durable checkpoint %+v, reported %+v (%v), result %s", durable, cp, err, done.Result)
	}
	resumed := runAndWait(t, c, a, api.RouteRun, "server")
	res := serverPush(t, resumed)
	if resumed.State != api.TaskSucceeded || res.Sessions[0].Resumed == "" || res.ConfirmedAt.IsZero() {
		t.Fatalf("resumed push: %+v %s", resumed, resumed.Result)
	}
	mine, err := localstore.Open(context.Background(), e.wallet, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	compare.SameWallet(t, mine, srv.Store(), e.identity)
}
