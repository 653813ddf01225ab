package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit"
)

// TestCLI_BundleCreateVerifyRestore runs the three bundle commands on a seeded wallet and a
// damaged copy of the bundle: the restored wallet carries the bundle's counts, and the damaged
// bundle fails verify and restore with exit code 1, leaving the target alone.
func TestCLI_BundleCreateVerifyRestore(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	code, out, stderr := walletsync(t, "bundle", "create", "--db", src, "--out", b, "--json")
	var created bundleResult
	if err := json.Unmarshal([]byte(out), &created); code != 0 || err != nil || created.Action != "created" || len(created.Manifest.Identities) != 1 {
		t.Fatalf("create: exit %d, %+v (%v)\n%s", code, created, err, stderr)
	}
	if code, out, stderr = walletsync(t, "bundle", "verify", "--in", b); code != 0 || !strings.Contains(out, "is good") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
	}
	target := filepath.Join(dir, "restored.sqlite")
	if code, out, stderr = walletsync(t, "bundle", "restore", "--in", b, "--to", target); code != 0 || !strings.Contains(out, "restored bundle") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = walletsync(t, "wallet", "info", "--db", target, "--json")
	var info localstore.Info
	if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil || len(info.Identities) != 1 ||
		info.Identities[0].IdentityKey != created.Manifest.Identities[0].IdentityKey {
		t.Fatalf("wallet info of the restored wallet: exit %d, %+v (%v)", code, info, err)
	}

	data := filepath.Join(b, "wallet.sqlite.zst")
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(data, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"bundle", "verify", "--in", b}, {"bundle", "restore", "--in", b, "--to", target, "--force"}} {
		if code, _, stderr := walletsync(t, args...); code != 1 || !strings.Contains(stderr, "bundle") {
			t.Fatalf("%v on a damaged bundle: exit %d\n%s", args, code, stderr)
		}
	}
	if after, _ := os.ReadFile(target); !bytes.Equal(after, before) {
		t.Fatal("a refused restore changed the wallet file")
	}
	if kept, _ := filepath.Glob(target + ".replaced-*"); len(kept) != 0 {
		t.Fatalf("a failed restore left a copy of the wallet it did not replace: %v", kept)
	}
	if code, _, _ := walletsync(t, "bundle", "restore", "--in", b); code != 2 {
		t.Fatalf("restore without --to: exit %d, want 2", code)
	}
}

// TestCLI_BundleRestoreOntoExistingWallet: a restore onto a wallet that exists is refused
// unless asked (--force), naming the identities that would be lost, and writes nothing;
// asked, it replaces the wallet and keeps the replaced file beside it, whole.
func TestCLI_BundleRestoreOntoExistingWallet(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	if code, _, stderr := walletsync(t, "bundle", "create", "--db", src, "--out", b); code != 0 {
		t.Fatalf("create: exit %d\n%s", code, stderr)
	}
	theirs := localstore.FixtureIdentity(2)
	target := testkit.SeededWallet(t, localstore.FixtureSmall, 2)
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr := walletsync(t, "bundle", "restore", "--in", b, "--to", target)
	if code != 1 || !strings.Contains(stderr, theirs) || !strings.Contains(stderr, "not in the backup: it would be lost") || !strings.Contains(stderr, "--force") {
		t.Fatalf("restore onto another identity's wallet without --force: exit %d\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(target); !bytes.Equal(after, before) {
		t.Fatal("the refused restore changed the wallet")
	}
	if kept, _ := filepath.Glob(target + ".replaced-*"); len(kept) != 0 {
		t.Fatalf("the refused restore wrote %v", kept)
	}

	code, out, stderr := walletsync(t, "bundle", "restore", "--in", b, "--to", target, "--force", "--json")
	var res bundleResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Replaced == "" {
		t.Fatalf("restore --force: exit %d, %+v (%v)\n%s", code, res, err, stderr)
	}
	kept, _ := filepath.Glob(target + ".replaced-*")
	if len(kept) != 1 || kept[0] != res.Replaced {
		t.Fatalf("kept %v, the result says %q", kept, res.Replaced)
	}
	for path, want := range map[string]string{target: localstore.FixtureIdentity(1), res.Replaced: theirs} {
		code, out, _ := walletsync(t, "wallet", "info", "--db", path, "--json")
		var info localstore.Info
		if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil || len(info.Identities) != 1 || info.Identities[0].IdentityKey != want {
			t.Errorf("%s: exit %d, %+v (%v); want the wallet of %s", filepath.Base(path), code, info.Identities, err, want)
		}
	}
}
