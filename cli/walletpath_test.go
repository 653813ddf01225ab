package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit"
)

// TestCLI_ErrorsNameThePathAndTheFix runs the mistakes a person makes with files: each
// error names the path, says what it is, and names the fix (import, mkdir, --force), and
// the CLI asks an export for the dashboard's password minimum. None of them talks about
// SQLite's "not a database" or a lock file.
func TestCLI_ErrorsNameThePathAndTheFix(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dir := t.TempDir()
	password := func(pw string) string {
		p := filepath.Join(dir, "pw-"+pw)
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	backup := filepath.Join(dir, "wallet.brc39")
	// Exactly the minimum: accepted, and a real backup file for the rows below.
	if code, out, stderr := walletsync(t, "export", "--db", src, "--out", backup, "--password-file", password("8 chars!")); code != 0 {
		t.Fatalf("export with an 8-character password: exit %d\n%s%s", code, out, stderr)
	}
	missing := filepath.Join(dir, "not-made-yet")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"a backup file as --to", []string{"sync", "--from", src, "--to", backup}, 1,
			[]string{backup + " is an encrypted BRC-39 backup file, not a wallet", "walletsync import --in " + backup}},
		{"a backup file as --from", []string{"sync", "--from", backup, "--to", filepath.Join(dir, "copy.sqlite")}, 1,
			[]string{"--from " + backup + " is an encrypted BRC-39 backup file", "import"}},
		{"a missing folder", []string{"sync", "--from", src, "--to", filepath.Join(missing, "x.sqlite")}, 1,
			[]string{"the folder " + missing + " does not exist", "mkdir -p " + missing}},
		{"an existing backup", []string{"export", "--db", src, "--out", backup, "--password-file", password("8 chars!")}, 1,
			[]string{backup + " exists (a backup file); nothing was written", "add --force to replace it"}},
		{"a short password", []string{"export", "--db", src, "--out", filepath.Join(dir, "new.brc39"), "--password-file", password("seven77")}, 2,
			[]string{"needs at least 8 characters, as on the dashboard; this one has 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := walletsync(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			for _, bad := range []string{"not a database", "lock file", "ask to replace"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr %q says %q", stderr, bad)
				}
			}
		})
	}
	for _, p := range []string{missing, filepath.Join(dir, "copy.sqlite"), filepath.Join(dir, "new.brc39")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
}
