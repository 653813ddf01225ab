package cli

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/internal/toolboxpeer"
	"walletsync/internal/walletsynctest"
	"walletsync/localstore"
)

func writeKeyFile(t *testing.T, seed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "identity.key")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(localstore.FixtureRootKey(seed))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLI_SyncRemote pushes a wallet to the toolbox's StorageServer and pulls it into a new
// wallet; a key that is not the wallet's identity is refused with WERR_UNAUTHORIZED's
// sentinel and leaves no file behind.
func TestCLI_SyncRemote(t *testing.T) {
	t.Parallel()
	src := walletsynctest.SeededWallet(t, localstore.FixtureSmall) // FixtureIdentity(1)
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(77)))
	own, other := writeKeyFile(t, 1), writeKeyFile(t, 2)

	code, out, stderr := walletsync(t, "sync", "--from", src, "--to", srv.URL, "--key-file", other)
	if code != 1 || !strings.Contains(stderr, "not authorized") || !strings.Contains(stderr, "not the wallet's identity") {
		t.Fatalf("push with another key: exit %d\n%s%s", code, out, stderr)
	}
	pulled := filepath.Join(t.TempDir(), "pulled.sqlite")
	code, out, stderr = walletsync(t, "sync", "--from", srv.URL, "--to", pulled, "--key-file", other, "--identity", localstore.FixtureIdentity(1))
	if code != 1 || !strings.Contains(stderr, "WERR_UNAUTHORIZED") {
		t.Fatalf("pull of another identity: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(pulled); !os.IsNotExist(err) {
		t.Fatalf("a refused pull left %s: %v", pulled, err)
	}

	code, out, stderr = walletsync(t, "sync", "--from", src, "--to", srv.URL, "--key-file", own)
	if code != 0 || !strings.Contains(out, "completed: full sync") {
		t.Fatalf("push: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = walletsync(t, "sync", "--from", srv.URL, "--to", pulled, "--key-file", own, "--json")
	if code != 0 || !strings.Contains(out, `"state":"completed"`) || !strings.Contains(out, `"server":{"requests"`) {
		t.Fatalf("pull: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = walletsync(t, "wallet", "info", "--db", pulled)
	if code != 0 || !strings.Contains(out, localstore.FixtureIdentity(1)) || !strings.Contains(out, "certificate_fields         12") {
		t.Fatalf("the pulled wallet: exit %d\n%s", code, out)
	}
}
