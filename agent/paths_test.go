package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		req     PathCheckRequest
		ok      bool
		path    string // the path the answer names
		message string
	}{
		{"relative", PathCheckRequest{Path: "backups", Purpose: PathBackupFolder}, false, "backups", "is not a full path"},
		{"new folder", PathCheckRequest{Path: e.folder, Purpose: PathBackupFolder}, true, e.folder, ""},
		{"folder that is a file", PathCheckRequest{Path: notes, Purpose: PathBackupFolder}, false, notes, "is a file, not a folder"},
		{"folder in a missing folder", PathCheckRequest{Path: filepath.Join(missing, "b"), Purpose: PathBackupFolder}, false, missing, "does not exist"},
		{"the wallet itself", PathCheckRequest{Path: e.wallet, Purpose: PathBackupWallet}, false, e.wallet, "is the wallet itself"},
		{"a text file as backup wallet", PathCheckRequest{Path: notes, Purpose: PathBackupWallet}, false, notes, "is not a wallet file"},
		{"a new backup wallet", PathCheckRequest{Path: e.backupWallet, Purpose: PathBackupWallet}, true, e.backupWallet, ""},
		{"inside the data folder", PathCheckRequest{Path: filepath.Join(string(e.opts.Dir), "x.sqlite"), Purpose: PathNewFile}, false, "", "walletsync's own data folder"},
		{"a missing backup file", PathCheckRequest{Path: filepath.Join(e.dir, "gone.brc39"), Purpose: PathBackupFile}, false, filepath.Join(e.dir, "gone.brc39"), "does not exist"},
		{"a folder as backup file", PathCheckRequest{Path: e.dir, Purpose: PathBackupFile}, false, e.dir, "is a folder"},
		{"an existing new file", PathCheckRequest{Path: notes, Purpose: PathNewFile}, false, notes, "already exists"},
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
	if _, err := c.CheckPath(t.Context(), PathCheckRequest{Path: "/x", Purpose: "anything"}); err == nil {
		t.Error("an unknown purpose is accepted")
	}
}
