package cli

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/testkit/httpproxy"
	"walletsync/testkit/toolboxpeer"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
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
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1) // FixtureIdentity(1)
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

// TestCLI_SyncServeChoosesTheWire pushes a wallet to `walletsync serve` and pulls it back:
// with --wire auto the command finds the paged wire and speaks it, with --wire toolbox it
// speaks the toolbox's JSON-RPC to the same server, and both pulls equal the wallet; against
// the toolbox's own StorageServer, --wire walletsync is refused with the reason.
func TestCLI_SyncServeChoosesTheWire(t *testing.T) {
	t.Parallel()
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1) // FixtureIdentity(1)
	own := writeKeyFile(t, 1)
	srv, err := serve.Open(t.Context(), serve.Options{DBPath: filepath.Join(t.TempDir(), "server.sqlite"),
		Signer: auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(78))), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler), Mounts: []serve.Mount{serve.WireMount(wire.ViewOptions{}, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls, done := make(chan serve.Listening, 1), make(chan error, 1)
	go func() { done <- srv.Run(ctx, func(at serve.Listening) { urls <- at }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	url := (<-urls).URL

	for _, tc := range []struct{ wire, says string }{
		{"auto", "over walletsync's paged wire"},
		{"toolbox", "chunks"},
	} {
		code, out, stderr := walletsync(t, "sync", "--from", src, "--to", url, "--key-file", own, "--wire", tc.wire)
		if code != 0 || !strings.Contains(out, "completed:") || !strings.Contains(out, tc.says) {
			t.Fatalf("push, --wire %s: exit %d\n%s%s", tc.wire, code, out, stderr)
		}
		pulled := filepath.Join(t.TempDir(), "pulled.sqlite")
		code, out, stderr = walletsync(t, "sync", "--from", url, "--to", pulled, "--key-file", own, "--wire", tc.wire, "--json")
		if code != 0 || !strings.Contains(out, `"state":"completed"`) {
			t.Fatalf("pull, --wire %s: exit %d\n%s%s", tc.wire, code, out, stderr)
		}
		a, b := openReadOnly(t, src), openReadOnly(t, pulled)
		compare.SameWallet(t, a, b, localstore.FixtureIdentity(1))
	}

	// An unchanged push from a fresh command is 4 HTTP requests: the unauthenticated
	// wire.Detect, the handshake, the capabilities the probe asks (which the Provider
	// reuses), and begin, which finds nothing to send.
	proxy, err := httpproxy.Start(strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	code, out, stderr := walletsync(t, "sync", "--from", src, "--to", proxy.URL(), "--key-file", own)
	if code != 0 || !strings.Contains(out, "completed:") {
		t.Fatalf("unchanged push: exit %d\n%s%s", code, out, stderr)
	}
	if n := proxy.Requests(); n != 4 {
		t.Errorf("an unchanged push took %d HTTP requests, want 4", n)
	}

	tb := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(77)))
	code, out, stderr = walletsync(t, "sync", "--from", src, "--to", tb.URL, "--key-file", own, "--wire", "walletsync")
	if code != 1 || !strings.Contains(stderr, "walletsync's wire") {
		t.Fatalf("--wire walletsync against a toolbox server: exit %d\n%s%s", code, out, stderr)
	}
}

func openReadOnly(t *testing.T, path string) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), path, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startGoServe starts `walletsync serve` (both wires) on a SQLite file in t.TempDir and
// returns its URL; it stops when the test ends.
func startGoServe(t *testing.T) string {
	t.Helper()
	srv, err := serve.Open(t.Context(), serve.Options{DBPath: filepath.Join(t.TempDir(), "server.sqlite"),
		Signer: auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(79))), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler), Mounts: []serve.Mount{serve.WireMount(wire.ViewOptions{}, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls, done := make(chan serve.Listening, 1), make(chan error, 1)
	go func() { done <- srv.Run(ctx, func(at serve.Listening) { urls <- at }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return (<-urls).URL
}

// TestCLI_SyncPullIntoNewFile: a pull into a new file says which identity it restored and
// how many rows; signed by a key that is not the wallet's, it would restore an empty wallet
// of that key's identity, which is refused (no file is left) unless asked (--allow-empty).
func TestCLI_SyncPullIntoNewFile(t *testing.T) {
	t.Parallel()
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1) // FixtureIdentity(1)
	url := startGoServe(t)
	own, other := writeKeyFile(t, 1), writeKeyFile(t, 2)
	if code, out, stderr := walletsync(t, "sync", "--from", src, "--to", url, "--key-file", own); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, stderr)
	}
	for _, w := range []string{"walletsync", "toolbox"} {
		t.Run(w, func(t *testing.T) {
			dir := t.TempDir()
			mine := filepath.Join(dir, "mine.sqlite")
			code, out, stderr := walletsync(t, "sync", "--from", url, "--to", mine, "--key-file", own, "--wire", w)
			if code != 0 || !strings.Contains(out, "restored identity "+localstore.FixtureIdentity(1)+" (the signer's identity) into "+mine) {
				t.Fatalf("pull with the wallet's key: exit %d\n%s%s", code, out, stderr)
			}

			empty := filepath.Join(dir, "empty.sqlite")
			code, out, stderr = walletsync(t, "sync", "--from", url, "--to", empty, "--key-file", other, "--wire", w)
			says := "no transactions and no outputs of identity " + localstore.FixtureIdentity(2)
			if w == "walletsync" { // the paged wire makes no user for a signer the server does not know
				says = "holds no wallet of identity " + localstore.FixtureIdentity(2)
			}
			if code != 1 || !strings.Contains(stderr, says) || !strings.Contains(stderr, "was not kept") {
				t.Fatalf("pull with another key: exit %d\n%s%s", code, out, stderr)
			}
			if left, _ := filepath.Glob(empty + "*"); len(left) != 0 {
				t.Fatalf("a refused empty pull left %v", left)
			}
			if w == "walletsync" {
				return
			}

			code, out, stderr = walletsync(t, "sync", "--from", url, "--to", empty, "--key-file", other, "--wire", w, "--allow-empty")
			if code != 0 || !strings.Contains(out, "restored identity "+localstore.FixtureIdentity(2)) || !strings.Contains(out, "0 transactions, 0 outputs") {
				t.Fatalf("pull with another key, --allow-empty: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}

// TestCLI_SyncWithAStoppedServer pushes to and pulls from a URL where nothing listens: the
// push says on its progress line (printed line by line off a terminal) that it cannot reach
// the host, attempt by attempt, and fails once --give-up has passed with the reason in words
// and the bound; the pull, which has created nothing yet, says so at once. Neither prints an
// empty line or a zero-chunk summary, nor leaves a file.
func TestCLI_SyncWithAStoppedServer(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	host := strings.TrimPrefix(dead, "http://")
	key := writeKeyFile(t, 1)
	pulled := filepath.Join(t.TempDir(), "pulled.sqlite")
	tests := []struct {
		name       string
		args       []string
		out        []string
		stderrLine string
	}{
		{"push", []string{"sync", "--from", src, "--to", dead, "--key-file", key, "--give-up", "1s"},
			[]string{"cannot reach " + host + " (attempt 1, next try in 0.1 s)\n", "cannot reach " + host + " (attempt 2, next try in 0.2 s)\n"},
			"walletsync sync: cannot reach " + dead + ": connection refused; gave up after 1 s"},
		{"pull", []string{"sync", "--from", dead, "--to", pulled, "--key-file", key}, nil,
			"walletsync sync: cannot reach " + dead + ": connection refused; nothing was written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := walletsync(t, tt.args...)
			if code != 1 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			if first, _, _ := strings.Cut(stderr, "\n"); first != tt.stderrLine {
				t.Errorf("stderr %q; want its first line %q", stderr, tt.stderrLine)
			}
			if !strings.Contains(stderr, "that the server is running") {
				t.Errorf("stderr %q gives no hint", stderr)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
			if strings.HasPrefix(out, "\n") || strings.Contains(out, "0 chunks") || strings.Contains(stderr, "dial tcp") {
				t.Errorf("output %q %q: an empty line, a zero summary or the raw error chain", out, stderr)
			}
		})
	}
	if _, err := os.Stat(pulled); !os.IsNotExist(err) {
		t.Errorf("the failed pull left %s: %v", pulled, err)
	}
}
