package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/testkit/postgres"
	"walletsync/testkit/tier"
	"walletsync/wallet"
)

// TestCLI_ServeHelpSaysWhatEachStoreServes runs `walletsync serve` on every store its help
// lists (a SQLite file, a PostgreSQL database) and asks each live server, as a client would,
// which wires it answers and whether the paged wire's view quotas hold; for every store the
// help's line says a wire or the quotas exactly when the server serves them. An operator
// reading --help is told what the server does, not what it did once.
func TestCLI_ServeHelpSaysWhatEachStoreServes(t *testing.T) {
	t.Parallel()
	const clientSeed = 92
	client := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(clientSeed)))
	// Each capability a store may offer: the words of the help that claim it, and how a
	// client finds out whether the server has it.
	capabilities := []struct {
		name  string
		claim string
		has   func(t *testing.T, url string) bool
	}{
		{"the toolbox's JSON-RPC", "the toolbox's JSON-RPC on POST /", func(t *testing.T, url string) bool {
			c, err := toolbox.Dial(url, client, toolbox.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.MakeAvailable(t.Context())
			return err == nil
		}},
		{"walletsync's paged wire", "on " + wire.Prefix, func(t *testing.T, url string) bool {
			return wire.Detect(t.Context(), url)
		}},
		{"the view quotas", "view quotas apply", func(t *testing.T, url string) bool {
			// The server runs with --max-views-per-identity 1: a second view of one identity
			// is refused by the quota, not by the store.
			c, err := auth.NewClient(url, client, auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes})
			if err != nil {
				t.Fatal(err)
			}
			p, err := wire.NewProvider(c, wire.ProviderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			first, err := p.OpenView(t.Context(), time.Minute)
			if err != nil {
				return false
			}
			defer first.Close()
			_, err = p.OpenView(t.Context(), time.Minute)
			var busy *wallet.BusyError
			return errors.As(err, &busy) && strings.Contains(busy.Reason, "quota")
		}},
	}

	code, help, stderr := walletsync(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d\n%s", code, stderr)
	}
	for _, st := range serveStores() {
		t.Run(st.db, func(t *testing.T) {
			url := startServeCommand(t, storeURL(t, st.db), writeKeyFile(t, 93), "--max-views-per-identity", "1")
			line := helpLineOf(t, help, st.db)
			for _, c := range capabilities {
				if has, claims := c.has(t, url), strings.Contains(line, c.claim); has != claims {
					t.Errorf("%s: the server has %s: %v; its help line claims it (%q): %v\n%s", st.db, c.name, has, c.claim, claims, line)
				}
			}
		})
	}
}

// storeURL returns a new, empty store of the kind the help names db, as --db takes it.
func storeURL(t *testing.T, db string) string {
	t.Helper()
	switch {
	case strings.HasPrefix(db, "sqlite:"):
		return "sqlite:" + filepath.Join(t.TempDir(), "server.sqlite")
	case strings.HasPrefix(db, "postgres://"):
		tier.Full(t, "a PostgreSQL server")
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cluster, err := postgres.Start(ctx)
		if err != nil {
			t.Fatalf("PostgreSQL for `serve --db %s`: %v", db, err)
		}
		t.Cleanup(func() {
			if err := cluster.Stop(); err != nil {
				t.Errorf("stop PostgreSQL: %v", err)
			}
		})
		return cluster.NewDatabase(t)
	}
	t.Fatalf("the help lists a store this test cannot make: %s", db)
	return ""
}

// helpLineOf returns the line under the store db in the help's list of stores: the wires it
// serves.
func helpLineOf(t *testing.T, help, db string) string {
	t.Helper()
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  "+db+":") && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	t.Fatalf("serve --help lists no store %s:\n%s", db, help)
	return ""
}

// startServeCommand runs `walletsync serve` on db until the test ends and returns its URL.
func startServeCommand(t *testing.T, db, keyFile string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	var stderr strings.Builder
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--db", db, "--key-file", keyFile, "--log-level", "error"}, args...)
	go func() {
		code := Run(ctx, args, w, &stderr)
		w.Close()
		done <- code
	}()
	drained := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("walletsync %v: exit %d\n%s", args, code, stderr.String())
		}
		if err := <-drained; err != nil {
			t.Errorf("walletsync %v: read its output: %v", args, err)
		}
	})
	first, err := bufio.NewReader(r).ReadString('\n')
	go func() {
		_, err := io.Copy(io.Discard, r)
		drained <- err
	}()
	url, ok := strings.CutPrefix(first, "walletsync serve: listening on ")
	if !ok {
		t.Fatalf("walletsync %v: %q (%v)", args, first, err)
	}
	return strings.Fields(url)[0]
}

// TestCLI_ServeQuotaFlags: `walletsync serve --quota-sync-states 1` bounds each identity to
// one store to sync from (a second sync state is refused as wallet.ErrQuotaExceeded, and
// another identity still gets its first), and a negative quota is a usage error.
func TestCLI_ServeQuotaFlags(t *testing.T) {
	url := startServeCommand(t, storeURL(t, "sqlite:"), writeKeyFile(t, 95), "--quota-sync-states", "1")
	for i, seed := range []uint64{96, 97} {
		identity := localstore.FixtureIdentity(seed)
		c, err := toolbox.Dial(url, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(seed))), toolbox.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.FindOrInsertSyncState(t.Context(), identity, "02"+strings.Repeat("11", 32), "first"); err != nil {
			t.Fatalf("identity %d's first sync state: %v", i+1, err)
		}
		if i == 0 {
			if _, err := c.FindOrInsertSyncState(t.Context(), identity, "02"+strings.Repeat("22", 32), "second"); !errors.Is(err, wallet.ErrQuotaExceeded) {
				t.Fatalf("a second sync state past --quota-sync-states 1: %v", err)
			}
		}
	}
	if code, _, stderr := walletsync(t, "serve", "--listen", "127.0.0.1:0", "--db", storeURL(t, "sqlite:"), "--key-file", writeKeyFile(t, 95), "--quota-rows", "-1"); code == 0 || !strings.Contains(stderr, "--quota-rows") {
		t.Fatalf("--quota-rows -1: exit %d, %s", code, stderr)
	}
}
