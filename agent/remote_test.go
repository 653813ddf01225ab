package agent

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/testkit/toolboxpeer"
)

// TestAgent_StorageServerDestination backs the wallet up to the toolbox's own StorageServer
// through the API: the identity's key in the secrets, a run, and the server's rows through
// the toolbox. Without the key the run fails with a hint, and the config refuses a path that
// is not a URL.
func TestAgent_StorageServerDestination(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall) // FixtureIdentity(4)
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.Destinations = append(bad.Destinations, api.Destination{ID: "server", Name: "Storage server", Kind: api.DestinationStorageServer, Path: "/not/a/url"})
	if err := validateConfig(bad); err == nil || !strings.Contains(err.Error(), "http(s) URL") {
		t.Fatalf("a storage server with a file path: %v", err)
	}
	cfg.Destinations = append(cfg.Destinations, api.Destination{ID: "server", Name: "Storage server", Kind: api.DestinationStorageServer, Path: srv.URL,
		Schedule: cfg.Destinations[0].Schedule, Pause: &api.Pause{}})
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
	if task.State != api.TaskSucceeded || !strings.Contains(string(task.Result), `"state":"completed"`) {
		t.Fatalf("push to the storage server: %+v %s", task, task.Result)
	}
	var dump toolboxpeer.Dump
	toolboxpeer.Run(t, &dump, "dump", "--db", srv.DB, "--identity", e.identity)
	if len(dump["transactions"]) != 6 || len(dump["users"]) != 1 || dump["users"][0]["activeStorage"] == srv.IdentityKey {
		t.Fatalf("the server holds %d transactions, user %v", len(dump["transactions"]), dump["users"])
	}
}
