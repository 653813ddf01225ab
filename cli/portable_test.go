package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/cli/command"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/testkit"
	"walletsync/wallet"
)

// TestCLI_ExportVerifyImport walks a backup through the three commands: an encrypted export
// (one full-strength Argon2id run) and its restore into a new wallet file, then a plaintext
// export, its verification, a merge preview into the source, and a repeat that is refused.
func TestCLI_ExportVerifyImport(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("Caf\u00e9 au lait\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	backup := filepath.Join(dir, "wallet.brc39")
	code, out, stderr := walletsync(t, "export", "--db", src, "--out", backup, "--password-file", pw, "--json")
	var exp portable.ExportResult
	if err := json.Unmarshal([]byte(out), &exp); code != 0 || err != nil || exp.Path != backup || exp.Stats.Rows[wallet.TableUsers] != 1 {
		t.Fatalf("export: exit %d, %+v (%v)\n%s", code, exp, err, stderr)
	}
	restored := filepath.Join(dir, "restored.sqlite")
	code, out, stderr = walletsync(t, "import", "--db", restored, "--in", backup, "--password-file", pw, "--data-dir", dataDir)
	// A new wallet file: no wallet app can have it open, so nobody is asked to close one.
	if code != 0 || !strings.Contains(out, "restored into "+restored) || !strings.Contains(out, "BRC-39 (Argon2id t=7 m=131072 KiB p=1") ||
		strings.Contains(out, "close the wallet app") {
		t.Fatalf("import: exit %d\n%s%s", code, out, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(dataDir, "staging")); len(entries) > 0 {
		t.Fatalf("the staging folder keeps %d files", len(entries))
	}

	doc := filepath.Join(dir, "wallet.json")
	if code, out, stderr := walletsync(t, "export", "--db", restored, "--out", doc, "--plaintext"); code != 0 || !strings.Contains(out, "NOT encrypted") {
		t.Fatalf("plaintext export: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = walletsync(t, "verify", "--in", doc, "--plaintext", "--data-dir", dataDir, "--json")
	var sum portable.Summary
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Encrypted || sum.Chain != wallet.ChainTest || sum.Counts[wallet.TableTransactions] != exp.Stats.Rows[wallet.TableTransactions] {
		t.Fatalf("verify: exit %d, %+v (%v)\n%s", code, sum, err, stderr)
	}
	code, out, stderr = walletsync(t, "import", "--db", src, "--in", doc, "--plaintext", "--preview", "--data-dir", dataDir, "--json")
	var prev portable.PreviewResult
	// The source holds every row already, its sync state included: nothing to insert or
	// update.
	if err := json.Unmarshal([]byte(out), &prev); code != 0 || err != nil || prev.Mode != wallet.ImportMerge ||
		prev.Total.Inserts != 0 || prev.Total.Updates != 0 || prev.Plan[wallet.TableSyncStates].Unchanged != 1 {
		t.Fatalf("preview: exit %d, %+v (%v)\n%s", code, prev.Total, err, stderr)
	}
	// Into an existing wallet, the person is told to close the wallet app first.
	if code, out, stderr := walletsync(t, "import", "--db", restored, "--in", backup, "--password-file", pw, "--data-dir", dataDir); code != 1 || !strings.Contains(stderr, "already imported, nothing to do") ||
		!strings.Contains(out, "note: "+localstore.WriteIntoWalletNotice) {
		t.Fatalf("repeat: exit %d\n%s%s", code, out, stderr)
	}
}

func TestCLI_PortableUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--help"}, 0, "Usage: walletsync export"},
		{[]string{"verify", "--help"}, 0, "without one trailing newline"},
		{[]string{"import", "--help"}, 0, "--preview"},
		{[]string{"export", "--db", "w"}, 2, "--out is required"},
		{[]string{"export", "--db", "w", "--out", "o", "--plaintext", "--password-file", "p"}, 2, "leave out --password-file"},
		{[]string{"import", "--in", "f"}, 2, "--db is required"},
		{[]string{"import", "--db", "w", "--in", "f", "--mode", "replace", "--data-dir", dir}, 2, "merge or restore"},
		{[]string{"verify", "--in", filepath.Join(dir, "missing.brc39"), "--plaintext", "--data-dir", dir}, 1, "no such file"},
		// Refused before the wallet is opened and the password asked for (no --password-file,
		// and no terminal here).
		{[]string{"export", "--db", "w", "--out", filepath.Join(dir, "missing", "b.brc39")}, 1, "its folder " + filepath.Join(dir, "missing") + " does not exist"},
		{[]string{"export", "--db", "w", "--out", dir}, 1, "is a folder; name the file to write"},
		{[]string{"verify", "--in", filepath.Join(dir, "missing.brc39"), "--data-dir", dir}, 1, "no such file"},
	}
	for _, tt := range tests {
		code, out, stderr := walletsync(t, tt.args...)
		if code != tt.code || !strings.Contains(out+stderr, tt.want) {
			t.Errorf("walletsync %v: exit %d, output %q %q; want exit %d mentioning %q", tt.args, code, out, stderr, tt.code, tt.want)
		}
	}
}

// fakeTerminal answers password prompts from a list.
type fakeTerminal struct {
	tty     bool
	answers []string
	warned  string
	prompts []string
}

func (f *fakeTerminal) IsTerminal() bool { return f.tty }
func (f *fakeTerminal) Warn(text string) { f.warned += text }
func (f *fakeTerminal) ReadPassword(prompt string) (string, error) {
	f.prompts = append(f.prompts, prompt)
	if len(f.answers) == 0 {
		return "", errors.New("no more answers")
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a, nil
}

func TestReadPassword_FileAndTerminal(t *testing.T) {
	dir := t.TempDir()
	files := 0
	file := func(content string) string {
		files++
		p := filepath.Join(dir, fmt.Sprint("password", files))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		file    string
		confirm bool
		tty     *fakeTerminal
		want    string
		err     error
		warned  bool
	}{
		{name: "file: one newline stripped", file: file(" secret \n"), tty: &fakeTerminal{}, want: " secret "},
		{name: "file: CRLF stripped", file: file("secret\r\n"), tty: &fakeTerminal{}, want: "secret"},
		{name: "file: only one newline", file: file("secret\n\n"), tty: &fakeTerminal{}, want: "secret\n"},
		{name: "file: empty for a new backup", file: file(""), confirm: true, tty: &fakeTerminal{}, err: command.ErrUsage},
		{name: "no terminal", tty: &fakeTerminal{}, err: command.ErrUsage},
		{name: "terminal", tty: &fakeTerminal{tty: true, answers: []string{"pw"}}, want: "pw"},
		{name: "terminal, confirmed", confirm: true, tty: &fakeTerminal{tty: true, answers: []string{"pw", "pw"}}, want: "pw", warned: true},
		{name: "terminal, confirmation differs", confirm: true, tty: &fakeTerminal{tty: true, answers: []string{"pw", "wp"}}, err: command.ErrUsage, warned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := command.ReadPassword(tt.file, tt.confirm, tt.tty, "Password: ")
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if warned := strings.Contains(tt.tty.warned, "A lost password means a lost backup"); warned != tt.warned {
				t.Fatalf("warning shown %v, want %v", warned, tt.warned)
			}
		})
	}
}

// TestCLI_ExportNeverReplacesAWallet: `export --out` naming the wallet itself is refused with
// and without --force, leaving the wallet as it was (it used to succeed and destroy it); an
// existing backup is refused without --force and replaced with it.
func TestCLI_ExportNeverReplacesAWallet(t *testing.T) {
	src := testkit.SeededWallet(t, localstore.FixtureSmall, 1)
	before, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, force := range []string{"--force=false", "--force"} {
		code, out, stderr := walletsync(t, "export", "--db", src, "--out", src, "--plaintext", force)
		if code != 1 || !strings.Contains(stderr, "is a wallet (SQLite database): walletsync never replaces it") {
			t.Fatalf("export over its own wallet %s: exit %d\n%s%s", force, code, out, stderr)
		}
		if now, _ := os.ReadFile(src); string(now) != string(before) {
			t.Fatalf("export %s changed the wallet", force)
		}
	}
	doc := filepath.Join(t.TempDir(), "wallet.json")
	if code, out, stderr := walletsync(t, "export", "--db", src, "--out", doc, "--plaintext"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := walletsync(t, "export", "--db", src, "--out", doc, "--plaintext"); code != 1 || !strings.Contains(stderr, "exists (a backup file)") {
		t.Fatalf("export over a backup without --force: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := walletsync(t, "export", "--db", src, "--out", doc, "--plaintext", "--force"); code != 0 {
		t.Fatalf("export over a backup with --force: exit %d\n%s%s", code, out, stderr)
	}
}
