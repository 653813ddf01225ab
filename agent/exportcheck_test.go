package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/portable/brc39"
)

// TestAgent_ExportRefusesToReplace posts exports that would destroy a file: the wallet the
// agent holds, its own token, a backup without "overwrite", and an export without a
// password. Each is refused before a task starts, with the error's stable code, and every
// file stays as it was; with "overwrite": true a backup file is replaced.
func TestAgent_ExportRefusesToReplace(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := context.Background()
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded { // the agent now holds the wallet
		t.Fatalf("backup: %+v", task)
	}
	backup := filepath.Join(e.dir, "old.brc39")
	if err := os.WriteFile(backup, []byte(brc39.Magic+"\x01 an older backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(string(e.opts.Dir), "agent.token")
	for _, tc := range []struct {
		name string
		body map[string]any
		code string
	}{
		{"the wallet itself", map[string]any{"path": e.wallet, "password": testPassword}, "protected_file"},
		{"the wallet itself, overwrite", map[string]any{"path": e.wallet, "password": testPassword, "overwrite": true}, "protected_file"},
		{"the agent's token, overwrite", map[string]any{"path": token, "password": testPassword, "overwrite": true}, "protected_file"},
		{"a new file in the data folder", map[string]any{"path": filepath.Join(string(e.opts.Dir), "x.brc39"), "password": testPassword}, "protected_file"},
		{"a backup, not asked", map[string]any{"path": backup, "password": testPassword}, "file_exists"},
		{"an empty password", map[string]any{"path": filepath.Join(e.dir, "new.brc39"), "password": ""}, "invalid_argument"},
		{"no password", map[string]any{"path": filepath.Join(e.dir, "new.brc39")}, "invalid_argument"},
		{"a password shorter than the dashboard allows", map[string]any{"path": filepath.Join(e.dir, "new.brc39"), "password": "seven77"}, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string][]byte{}
			for _, p := range []string{e.wallet, token, backup} {
				before[p], _ = os.ReadFile(p)
			}
			err := c.Call(ctx, api.Route("POST /api/v1/export"), tc.body, nil)
			var ae *api.APIError
			if !errors.As(err, &ae) || ae.Code != tc.code {
				t.Fatalf("POST /api/v1/export: %v; want the code %s", err, tc.code)
			}
			for p, b := range before {
				if now, _ := os.ReadFile(p); string(now) != string(b) {
					t.Fatalf("%s changed", p)
				}
			}
			if _, err := os.Stat(filepath.Join(e.dir, "new.brc39")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused export wrote a file: %v", err)
			}
		})
	}
	var task api.Task
	if err := c.Call(ctx, api.Route("POST /api/v1/export"), map[string]any{"path": backup, "password": testPassword, "overwrite": true}, &task); err != nil {
		t.Fatal(err)
	}
	if done, err := a.tasks.Wait(waitCtx(t), task.ID); err != nil || done.State != api.TaskSucceeded {
		t.Fatalf("export over a backup with overwrite: %+v, %v", done, err)
	}
	if b, _ := os.ReadFile(backup); len(b) < 1000 || string(b[:4]) != brc39.Magic {
		t.Fatalf("the backup was not replaced: %d bytes", len(b))
	}
}
