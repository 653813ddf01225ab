package agent

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/localstore"
)

// noWalletEnv is an agent environment whose config protects no wallet yet, as after a
// fresh install: its destinations name no wallet.
func noWalletEnv(t *testing.T) agentEnv {
	t.Helper()
	e := newAgentEnv(t, localstore.FixtureSmall)
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Wallets = nil
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAgent_AddWallet_SaysWhatTheFileIs(t *testing.T) {
	e := noWalletEnv(t)
	launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bundleDir := filepath.Join(dir, "wallet.bundle")
	if err := os.Mkdir(bundleDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("wallet.bundle", bundle.ManifestName), []byte("{}"))
	plainSQLite := filepath.Join(dir, "notes.sqlite")
	db, err := sql.Open("sqlite", plainSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	tests := []struct {
		name, path, want string
	}{
		{"relative path", "wallet.sqlite", "not a full path"},
		{"missing", filepath.Join(dir, "nope.sqlite"), "nothing is there"},
		{"folder", dir, "a folder, not a file"},
		{"bundle", bundleDir, "a walletsync bundle folder, not a wallet"},
		{"BRC-39 file", write("w.brc39", []byte("WDAT\x00\x00\x00\x01rest of a header")), "an encrypted BRC-39 backup file, not a wallet"},
		{"empty file", write("empty.sqlite", nil), "an empty file"},
		{"text file", write("notes.txt", []byte("hello, this is not a database at all")), "not a SQLite database"},
		{"unknown SQLite", plainSQLite, "is a database, but not a wallet-toolbox wallet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.AddWallet(ctx, api.WalletRef{Path: tt.path})
			ae, ok := errors.AsType[*api.APIError](err)
			if !ok || !strings.Contains(ae.Message, tt.want) || ae.Hint == "" {
				t.Fatalf("add %s: %v; want an API error saying %q, with a hint", tt.path, err, tt.want)
			}
		})
	}
	cfg, err := c.AddWallet(ctx, api.WalletRef{Path: e.wallet})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != e.wallet {
		t.Fatalf("wallets after adding %s: %+v", e.wallet, cfg.Wallets)
	}
	for _, d := range cfg.Destinations {
		if d.Wallet != e.wallet {
			t.Errorf("destination %s added before the wallet backs up %q; want %s", d.ID, d.Wallet, e.wallet)
		}
	}
}

// TestAgent_ReplaceWallet_FirstWallet: "Make it the wallet walletsync protects" after a
// restore, when nothing was protected before, makes the restored file the first wallet.
func TestAgent_ReplaceWallet_FirstWallet(t *testing.T) {
	e := noWalletEnv(t)
	launchAgent(t, e.opts)
	cfg, err := apiClient(t, e.opts.Dir).ReplaceWallet(context.Background(), api.WalletReplaceRequest{New: e.wallet})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Wallets) != 1 || cfg.Wallets[0].Path != e.wallet || cfg.Destinations[0].Wallet != e.wallet {
		t.Fatalf("config after the first replace: %+v", cfg)
	}
}

// TestAgent_FindWallets_OffersWhatWalletAppsKeep lists BSV Desktop's wallets under the
// home folder with their identity and network, names a file that is not a wallet with the
// reason, and never lists the private-key backups beside them.
func TestAgent_FindWallets_OffersWhatWalletAppsKeep(t *testing.T) {
	e := noWalletEnv(t)
	home := t.TempDir()
	desk := filepath.Join(home, ".bsv-desktop")
	if err := os.Mkdir(desk, 0o700); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(desk, "wallet-"+e.identity+"-test.sqlite")
	copyFile := func(to string) {
		b, err := os.ReadFile(e.wallet)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(current)
	if err := os.WriteFile(filepath.Join(desk, "wallet.db"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(desk, "privatekey1700000000.txt"), []byte("secret"), 0o400); err != nil {
		t.Fatal(err)
	}
	e.opts.Home = home
	launchAgent(t, e.opts)
	found, err := apiClient(t, e.opts.Dir).FoundWallets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Fatalf("found %+v; want the current wallet and wallet.db", found)
	}
	w := found[0]
	if w.Path != current || w.App != "BSV Desktop" || w.Chain != "test" || len(w.Identities) != 1 || w.Identities[0] != e.identity ||
		w.SizeBytes == 0 || w.Modified.IsZero() || w.Error != "" {
		t.Errorf("the current wallet: %+v", w)
	}
	if found[1].Path != filepath.Join(desk, "wallet.db") || !strings.Contains(found[1].Error, "not a SQLite database") {
		t.Errorf("wallet.db, not a database: %+v", found[1])
	}
}
