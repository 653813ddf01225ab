package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit"
	"walletsync/testkit/importtest"
	"walletsync/wallet"
)

// TestCLI_ImportOtherIdentityAndAbandon walks the import refusals through the command line:
// the backup of a copy of the wallet made for another identity is previewed (the preview
// says so, and lists the transaction references both hold), refused without
// --allow-other-identity, and refused with it for its conflicts, the wallet untouched each
// time. Then a merge stopped half-way marks the wallet: `wallet info` says the import is in
// progress, `export` refuses, and `import --abandon` takes it back.
func TestCLI_ImportOtherIdentityAndAbandon(t *testing.T) {
	ctx := context.Background()
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	copyPath := filepath.Join(dir, "copy.sqlite")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("UPDATE users SET identityKey = '%s'", localstore.FixtureIdentity(99))); err != nil {
		t.Fatal(err)
	}
	db.Close()
	doc := filepath.Join(dir, "other.json")
	if code, out, stderr := walletsync(t, "export", "--db", copyPath, "--out", doc, "--plaintext"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, stderr)
	}
	before, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}

	code, out, stderr := walletsync(t, "import", "--db", src, "--in", doc, "--plaintext", "--preview", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "IDENTITY the backup's identity is not the wallet's") ||
		!strings.Contains(out, "rows of the backup cannot be merged") || !strings.Contains(out, "transactions row") {
		t.Fatalf("preview: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = walletsync(t, "import", "--db", src, "--in", doc, "--plaintext", "--data-dir", dataDir)
	if code == 0 || !strings.Contains(stderr, "--allow-other-identity") {
		t.Fatalf("import of another identity: exit %d\n%s", code, stderr)
	}
	code, _, stderr = walletsync(t, "import", "--db", src, "--in", doc, "--plaintext", "--allow-other-identity", "--data-dir", dataDir)
	if code == 0 || !strings.Contains(stderr, "cannot be merged") || !strings.Contains(stderr, "nothing was written") {
		t.Fatalf("import with conflicts: exit %d\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(src); string(after) != string(before) {
		t.Fatal("the refused imports changed the wallet")
	}

	// A merge of the wallet's own backup into an empty wallet, stopped after two pages.
	own := filepath.Join(dir, "own.json")
	if code, out, stderr := walletsync(t, "export", "--db", src, "--out", own, "--plaintext"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, stderr)
	}
	dst := filepath.Join(dir, "dst.sqlite")
	s, err := localstore.Create(ctx, dst, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	importtest.HalfMerge(t, own, dst, filepath.Join(dataDir, "staging"), 2)
	if code, out, stderr := walletsync(t, "wallet", "info", "--db", dst); code != 0 || !strings.Contains(out, "import in progress: finish or abandon") {
		t.Fatalf("wallet info mid-merge: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := walletsync(t, "export", "--db", dst, "--out", filepath.Join(dir, "half.json"), "--plaintext"); code == 0 || !strings.Contains(stderr, "import in progress: finish or abandon") {
		t.Fatalf("export mid-merge: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := walletsync(t, "import", "--db", dst, "--abandon", "--in", own); code != 2 {
		t.Fatalf("--abandon with --in: exit %d, want 2 (usage)\n%s", code, stderr)
	}
	if code, out, stderr := walletsync(t, "import", "--db", dst, "--abandon", "--data-dir", dataDir); code != 0 || !strings.Contains(out, "as it was before it") {
		t.Fatalf("abandon: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := walletsync(t, "wallet", "info", "--db", dst); code != 0 || strings.Contains(out, "import in progress") || !strings.Contains(out, "no identities yet") {
		t.Fatalf("wallet info after abandon: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := walletsync(t, "import", "--db", dst, "--abandon", "--data-dir", dataDir); code == 0 || !strings.Contains(stderr, "no unfinished import") {
		t.Fatalf("abandon again: exit %d\n%s", code, stderr)
	}
}
