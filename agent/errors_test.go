package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"walletsync/agent/api"

	"walletsync/localstore"
)

// TestAgent_ErrorsAreTypedAndSayOnce: an unknown API path answers a JSON error (it used to
// get the dashboard's page), a body a field refuses says "invalid argument" once, a
// destination that is the wallet itself (through a symbolic link) is refused when added, and
// an import of a file that is not a backup says so without repeating any of its bytes.
func TestAgent_ErrorsAreTypedAndSayOnce(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := context.Background()
	code := func(err error) string {
		var ae *api.APIError
		if !errors.As(err, &ae) {
			return "not an API error: " + err.Error()
		}
		return ae.Code
	}

	for _, m := range []string{"GET", "POST"} {
		if err := c.Call(ctx, api.Route(m+" /api/v1/no-such-thing"), nil, nil); code(err) != "not_found" {
			t.Fatalf("%s of an unknown API path: %v; want a not_found JSON error", m, err)
		}
	}

	err := c.Call(ctx, api.Route("POST /api/v1/destinations"), map[string]any{"id": "x", "name": "x", "kind": "folder", "path": e.dir,
		"schedule": map[string]any{"kind": "interval", "every": "soon"}}, nil)
	if code(err) != "invalid_argument" || strings.Count(err.Error(), "invalid argument") != 1 {
		t.Fatalf("a bad duration: %v; want invalid_argument said once", err)
	}

	link := filepath.Join(t.TempDir(), "same.sqlite")
	if err := os.Symlink(e.wallet, link); err != nil {
		t.Fatal(err)
	}
	err = c.Call(ctx, api.Route("POST /api/v1/destinations"), map[string]any{"id": "self", "name": "Self", "kind": "sqlite", "path": link,
		"schedule": map[string]any{"kind": "interval", "every": "1h"}}, nil)
	if code(err) != "invalid_argument" || !strings.Contains(err.Error(), "is the wallet it would back up") {
		t.Fatalf("a destination that is the wallet: %v", err)
	}

	secret := []byte("KEYMATERIAL-0123456789-not-a-backup-at-all")
	file := filepath.Join(t.TempDir(), "notes.brc39")
	if err := os.WriteFile(file, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	var task api.Task
	if err := c.Call(ctx, api.Route("POST /api/v1/import/preview"), map[string]any{"path": file, "password": "pw"}, &task); err != nil {
		t.Fatal(err)
	}
	done, err := a.tasks.Wait(waitCtx(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != api.TaskFailed || !strings.Contains(done.Error, "not a backup file") {
		t.Fatalf("import of a file that is not a backup: %+v", done)
	}
	for _, leak := range []string{string(secret[:4]), hex.EncodeToString(secret[:4])} {
		if strings.Contains(strings.ToLower(done.Error+string(done.Result)), strings.ToLower(leak)) {
			t.Fatalf("the answer repeats the file's bytes (%q): %s %s", leak, done.Error, done.Result)
		}
	}
}

// TestAgent_RefusesATokenOthersCanRead: an agent.token that other users can read is refused,
// by the agent and by the command line's client, as the secrets file is.
func TestAgent_RefusesATokenOthersCanRead(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	if _, err := e.opts.Dir.Token(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.opts.Dir.tokenPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), e.opts); !errors.Is(err, api.ErrOpenToOthers) {
		t.Fatalf("start with a token others can read: %v; want ErrOpenToOthers", err)
	}
	if _, err := e.opts.Dir.Token(); !errors.Is(err, api.ErrOpenToOthers) {
		t.Fatalf("read a token others can read: %v; want ErrOpenToOthers", err)
	}
}
