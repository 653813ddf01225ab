package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"walletsync/agent/api"

	"walletsync/localstore"
)

// TestAgent_CheckPath: through the API, each wrong path is named with what is wrong with
// it, and the right ones pass.
func TestAgent_CheckPath(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	notes := filepath.Join(e.dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("my notes, not a wallet"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(e.dir, "no-such-folder")
	tests := []struct {
		name    string
		req     api.PathCheckRequest
		ok      bool
		path    string // the path the answer names
		message string
	}{
		{"relative", api.PathCheckRequest{Path: "backups", Purpose: api.PathBackupFolder}, false, "backups", "is not a full path"},
		{"new folder", api.PathCheckRequest{Path: e.folder, Purpose: api.PathBackupFolder}, true, e.folder, ""},
		{"folder that is a file", api.PathCheckRequest{Path: notes, Purpose: api.PathBackupFolder}, false, notes, "is a file, not a folder"},
		{"folder in a missing folder", api.PathCheckRequest{Path: filepath.Join(missing, "b"), Purpose: api.PathBackupFolder}, false, missing, "does not exist"},
		{"the wallet itself", api.PathCheckRequest{Path: e.wallet, Purpose: api.PathBackupWallet}, false, e.wallet, "is the wallet itself"},
		{"a text file as backup wallet", api.PathCheckRequest{Path: notes, Purpose: api.PathBackupWallet}, false, notes, "is not a wallet file"},
		{"a new backup wallet", api.PathCheckRequest{Path: e.backupWallet, Purpose: api.PathBackupWallet}, true, e.backupWallet, ""},
		{"inside the data folder", api.PathCheckRequest{Path: filepath.Join(string(e.opts.Dir), "x.sqlite"), Purpose: api.PathNewFile}, false, "", "walletsync's own data folder"},
		{"a missing backup file", api.PathCheckRequest{Path: filepath.Join(e.dir, "gone.brc39"), Purpose: api.PathBackupFile}, false, filepath.Join(e.dir, "gone.brc39"), "does not exist"},
		{"a folder as backup file", api.PathCheckRequest{Path: e.dir, Purpose: api.PathBackupFile}, false, e.dir, "is a folder"},
		{"the wallet as backup file", api.PathCheckRequest{Path: e.wallet, Purpose: api.PathBackupFile}, false, e.wallet, "is a wallet (SQLite database), not a backup file"},
		{"a text file as backup file", api.PathCheckRequest{Path: notes, Purpose: api.PathBackupFile}, false, notes, "is not a backup file"},
		{"the wallet as new file, replacing", api.PathCheckRequest{Path: e.wallet, Purpose: api.PathNewFile, Overwrite: true}, false, e.wallet, "is the wallet itself"},
		{"a text file as new file, replacing", api.PathCheckRequest{Path: notes, Purpose: api.PathNewFile, Overwrite: true}, false, notes, "is not a backup file"},
		{"an existing new file", api.PathCheckRequest{Path: notes, Purpose: api.PathNewFile}, false, notes, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.CheckPath(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != tt.ok || tt.path != "" && got.Path != tt.path || !strings.Contains(got.Message, tt.message) || !tt.ok && got.Hint == "" {
				t.Errorf("got %+v", got)
			}
		})
	}
	if _, err := c.CheckPath(t.Context(), api.PathCheckRequest{Path: "/x", Purpose: "anything"}); err == nil {
		t.Error("an unknown purpose is accepted")
	}
}
