package agent

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"walletsync/agent/api"

	"walletsync/wallet"
)

func TestDataDir_LockOnePerFolder(t *testing.T) {
	d := DataDir(filepath.Join(t.TempDir(), "data"))
	first, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Lock()
	held, ok := errors.AsType[*AgentRunningError](err)
	if !ok || !errors.Is(err, api.ErrAgentRunning) || held.PID != os.Getpid() || held.Dir != string(d) {
		t.Fatalf("second Lock = %v, want an *AgentRunningError naming pid %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	again, err := d.Lock()
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	if err := again.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func TestDataDir_TokenCreatedOnce(t *testing.T) {
	d := DataDir(t.TempDir())
	tok, err := d.Token()
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := hex.DecodeString(tok); err != nil || len(raw) != 32 {
		t.Fatalf("token %q is not 32 bytes of hex", tok)
	}
	if again, err := d.Token(); err != nil || again != tok {
		t.Fatalf("second Token = %q, %v; want the same token", again, err)
	}
	if info, _ := os.Stat(d.tokenPath()); runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", info.Mode())
	}
	if err := os.WriteFile(d.tokenPath(), []byte("not-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Token(); !errors.Is(err, wallet.ErrCorrupt) {
		t.Fatalf("Token over a damaged file = %v, want ErrCorrupt (never silently replaced)", err)
	}
}

func TestDataDir_Endpoint(t *testing.T) {
	d := DataDir(t.TempDir())
	if _, err := d.Endpoint(); !errors.Is(err, api.ErrAgentNotRunning) {
		t.Fatalf("Endpoint before an agent = %v", err)
	}
	tok, _ := d.Token()
	if err := d.PublishAddr("127.0.0.1:43121"); err != nil {
		t.Fatal(err)
	}
	if e, err := d.Endpoint(); err != nil || e != (api.Endpoint{Addr: "127.0.0.1:43121", Token: tok}) {
		t.Fatalf("Endpoint = %+v, %v", e, err)
	}
	for range 2 {
		if err := d.RemoveAddr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Endpoint(); !errors.Is(err, api.ErrAgentNotRunning) {
		t.Fatalf("Endpoint after the agent stopped = %v", err)
	}
}
