package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"walletsync/agent"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/wallet"
)

// The portable backup commands: export, verify, import. Passwords never come from the
// command line, where other users' `ps` and the shell's history would see them: they are
// typed at a prompt without echo, or read from a file (--password-file).

func runExport(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("export", "--db WALLET [--identity HEX] --out FILE.brc39 [--password-file P] [--plaintext] [--json]", out)
	db := fs.String("db", "", "the wallet to export")
	identity := fs.String("identity", "", "the user to export (default: the wallet's only user)")
	outPath := fs.String("out", "", "the backup file to write (replaced atomically when it exists)")
	passwordFile := fs.String("password-file", "", passwordFileUsage+" (default: asked twice at the terminal)")
	plaintext := fs.Bool("plaintext", false, "write the unencrypted BRC-38 JSON document instead: it holds the wallet's keys in the clear")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("db", *db); err != nil {
		return err
	}
	if err := required("out", *outPath); err != nil {
		return err
	}
	if *plaintext && *passwordFile != "" {
		return fmt.Errorf("%w: --plaintext writes no password; leave out --password-file", errUsage)
	}
	// Before the password is asked for: a file that cannot land is better said at once.
	if err := checkOutPath(*outPath); err != nil {
		return err
	}
	s, err := localstore.Open(ctx, *db, localstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	if *identity == "" {
		if *identity, err = onlyIdentity(ctx, s); err != nil {
			return err
		}
	}
	settings, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	var password string
	if !*plaintext {
		if password, err = readPassword(*passwordFile, true, stdinTerminal{}, ""); err != nil {
			return err
		}
	}
	var total int64
	if sum, err := s.Summary(ctx, *identity); err == nil {
		for _, n := range sum.Counts {
			total += n
		}
	}
	snap, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return err
	}
	defer snap.Close()
	bar := newProgressLine(out)
	v := &countingView{Snapshot: snap, report: func(rows int64) {
		bar.update(false, "exporting %s: %d/%d rows", filepath.Base(*outPath), rows, total)
	}}
	var res portable.ExportResult
	if *plaintext {
		res, err = portable.ExportBRC38(ctx, v, settings, *identity, *outPath, portable.ExportOptions{})
	} else {
		bar.update(true, "deriving the file key (Argon2id, a few seconds)")
		res, err = portable.ExportBRC39(ctx, v, settings, *identity, password, portable.DefaultKDFParams, *outPath, portable.ExportOptions{})
	}
	if err != nil {
		return err
	}
	bar.update(true, "exported %d rows", v.rows)
	return report(out, *asJSON, res, func(w io.Writer) {
		format := "BRC-39, encrypted (Argon2id t=7, m=128 MiB, p=1; key derived in " + res.KDFTime.Round(time.Millisecond).String() + ")"
		if *plaintext {
			format = "BRC-38 JSON, NOT encrypted: anyone who reads this file can spend the wallet's coins"
		}
		fmt.Fprintf(w, "wrote    %s (%s)\n", res.Path, humanBytes(res.Size))
		fmt.Fprintf(w, "format   %s\n", format)
		fmt.Fprintf(w, "sha256   %s\n", hex.EncodeToString(res.SHA256[:]))
		fmt.Fprintf(w, "identity %s\n", *identity)
		printCounts(w, res.Stats.Rows)
		fmt.Fprintf(w, "took     %s\n", res.Elapsed.Round(time.Millisecond))
	})
}

// countingView is a snapshot that reports the rows an export has read; it keeps the
// snapshot's LookupRow, which the export's closure needs.
type countingView struct {
	*localstore.Snapshot
	rows   int64
	report func(rows int64)
}

func (v *countingView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	p, err := v.Snapshot.ReadPage(ctx, req)
	v.rows += int64(len(p.Rows))
	v.report(v.rows)
	return p, err
}

func runVerify(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("verify", "--in FILE [--password-file P] [--plaintext] [--data-dir DIR] [--json]", out)
	bf := addBackupFileFlags(fs, "the backup file to check")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	in := bf.in
	opts, password, err := bf.prepare()
	if err != nil {
		return err
	}
	bar := newProgressLine(out)
	sum, err := portable.Verify(ctx, *in, password, opts, importProgress(bar, *asJSON))
	if err != nil {
		return cancelled(ctx, err)
	}
	bar.update(true, "verified")
	return report(out, *asJSON, sum, func(w io.Writer) {
		printSummary(w, sum)
		fmt.Fprintln(w, "ok: the password, the tag and the whole document verify")
	})
}

func runImport(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("import", "--db WALLET (--in FILE [--password-file P] [--preview] [--mode merge|restore] [--allow-other-identity] [--plaintext] | --abandon) [--data-dir DIR] [--json]", out)
	db := fs.String("db", "", "the wallet to import into; a restore may name a file that does not exist yet")
	bf := addBackupFileFlags(fs, "the backup file")
	preview := fs.Bool("preview", false, "show what the import would do, and write nothing to the wallet")
	mode := fs.String("mode", "", "merge (BRC-40 rules, the wallet's own rows kept where newer) or restore (into an empty or new wallet, ids kept); default: restore for a new file, merge otherwise")
	allowOther := fs.Bool("allow-other-identity", false, "merge a backup of another identity than the wallet's; the wallet then holds both")
	abandon := fs.Bool("abandon", false, "take back the wallet's unfinished import: the wallet becomes exactly what it was before that import started (no --in, no password)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("db", *db); err != nil {
		return err
	}
	if *abandon {
		if *bf.in != "" || *preview || *mode != "" || *allowOther {
			return fmt.Errorf("%w: --abandon takes only --db, --data-dir and --json", errUsage)
		}
		return runAbandon(ctx, *db, *bf.dataDir, *asJSON, out)
	}
	var importMode wallet.ImportMode
	if *mode != "" { // checked before the password is asked for
		var err error
		if importMode, err = wallet.ParseImportMode(*mode); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	in := bf.in
	opts, password, err := bf.prepare()
	if err != nil {
		return err
	}
	opts.Mode, opts.AllowOtherIdentity = importMode, *allowOther
	bar := newProgressLine(out)
	progress := importProgress(bar, *asJSON)
	if *preview {
		target := portable.Target{Path: *db}
		if _, err := os.Stat(*db); err == nil {
			// Read-only: a preview works beside a running agent and cannot write.
			s, err := localstore.Open(ctx, *db, localstore.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer s.Close()
			target.Store = s
		}
		res, err := portable.Preview(ctx, *in, password, target, opts, progress)
		bar.update(true, "previewed")
		if res.Digest == "" && err != nil {
			return cancelled(ctx, err)
		}
		if rerr := report(out, *asJSON, res, func(w io.Writer) { printPreview(w, res, err) }); rerr != nil {
			return rerr
		}
		return cancelled(ctx, err)
	}
	res, err := portable.Import(ctx, *in, password, portable.Target{Path: *db}, opts, progress)
	if err != nil {
		return cancelled(ctx, err)
	}
	bar.update(true, "imported")
	return report(out, *asJSON, res, func(w io.Writer) {
		printSummary(w, res.Summary)
		verb := "merged into"
		if res.Mode == wallet.ImportRestore {
			verb = "restored into"
		}
		if res.Resumed {
			verb = "finished an interrupted import: " + verb
		}
		fmt.Fprintf(w, "%s %s\n", verb, res.Target)
		printPlan(w, res.Tables)
		fmt.Fprintf(w, "done: %d rows inserted, %d updated in %s\n", res.Inserts, res.Updates, res.Elapsed.Round(time.Millisecond))
	})
}

// runAbandon takes back the unfinished imports of the wallet db.
func runAbandon(ctx context.Context, db, dataDir string, asJSON bool, out io.Writer) error {
	opts, err := portableOptions(dataDir, false)
	if err != nil {
		return err
	}
	recs, err := portable.Abandon(ctx, portable.Target{Path: db}, opts)
	if err != nil {
		return err
	}
	return report(out, asJSON, recs, func(w io.Writer) {
		for _, rec := range recs {
			fmt.Fprintf(w, "abandoned the %s of backup %s (started %s): %s is as it was before it\n",
				rec.Mode, wallet.ShortKey(rec.Digest, 16), wallet.FormatTime(rec.StartedAt), db)
		}
	})
}

// cancelled turns an error caused by Ctrl-C into errCancelled (exit code 130): the import
// stopped at a safe point and a rerun continues it.
func cancelled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return errCancelled
	}
	return err
}

const (
	passwordFileUsage = "read the password from this file: its UTF-8 bytes, without one trailing newline (\\n or \\r\\n)"
	dataDirUsage      = "walletsync's private data folder; the import stages its files in DIR/staging " +
		"(default: the agent's data folder when it exists, else the user cache folder's walletsync)"
)

// backupFileFlags are the flags of the commands that read a backup file (verify, import).
type backupFileFlags struct {
	in, passwordFile, dataDir *string
	plaintext                 *bool
}

func addBackupFileFlags(fs *flag.FlagSet, inUsage string) backupFileFlags {
	return backupFileFlags{
		in:           fs.String("in", "", inUsage),
		passwordFile: fs.String("password-file", "", passwordFileUsage+" (default: asked at the terminal)"),
		plaintext:    fs.Bool("plaintext", false, "the file is a plaintext BRC-38 JSON document"),
		dataDir:      fs.String("data-dir", "", dataDirUsage),
	}
}

// prepare checks the flags and returns the import options and the file's password (asked
// at the terminal unless --password-file or --plaintext says otherwise).
func (f backupFileFlags) prepare() (portable.ImportOptions, string, error) {
	if err := required("in", *f.in); err != nil {
		return portable.ImportOptions{}, "", err
	}
	opts, err := portableOptions(*f.dataDir, *f.plaintext)
	if err != nil {
		return opts, "", err
	}
	password, err := filePassword(*f.in, *f.passwordFile, *f.plaintext)
	return opts, password, err
}

// portableOptions are the import options of the command line: the staging folder under the
// data folder, and localstore's wallet files.
func portableOptions(dataDir string, plaintext bool) (portable.ImportOptions, error) {
	if dataDir == "" {
		var err error
		if dataDir, err = defaultDataDir(); err != nil {
			return portable.ImportOptions{}, err
		}
	}
	return portable.ImportOptions{StagingDir: filepath.Join(dataDir, "staging"), Plaintext: plaintext, Open: walletFiles()}, nil
}

// defaultDataDir is walletsync's private data folder for the command line: the agent's, when
// it exists (so that an import the agent started and one typed here share one staging
// folder), else <user cache folder>/walletsync.
func defaultDataDir() (string, error) {
	if d, err := agent.DefaultDataDir(); err == nil {
		if fi, err := os.Stat(string(d)); err == nil && fi.IsDir() {
			return string(d), nil
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the data folder (use --data-dir): %w", err)
	}
	return filepath.Join(base, "walletsync"), nil
}

// walletFiles opens and creates the wallet files of an import (the target and the staging
// databases) with localstore.
func walletFiles() portable.OpenFunc {
	return portable.Opener(func(ctx context.Context, path string, chain wallet.Chain) (*localstore.Store, error) {
		if chain == "" {
			return localstore.Open(ctx, path, localstore.Options{})
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, localstore.Options{})
	})
}

// filePassword reads the password of the backup file in, unless it is plaintext. A file
// that is not there is said before anyone types a password for it.
func filePassword(in, passwordFile string, plaintext bool) (string, error) {
	if _, err := os.Stat(in); err != nil {
		return "", err
	}
	if plaintext {
		if passwordFile != "" {
			return "", fmt.Errorf("%w: a --plaintext document has no password; leave out --password-file", errUsage)
		}
		return "", nil
	}
	return readPassword(passwordFile, false, stdinTerminal{}, "Password for "+filepath.Base(in)+": ")
}

// terminal is where a password is typed: the process's terminal, or a test's.
type terminal interface {
	IsTerminal() bool
	Warn(text string)
	ReadPassword(prompt string) (string, error)
}

// stdinTerminal reads from the controlling terminal on stdin without echo, prompting on
// stderr so that stdout stays clean for --json.
type stdinTerminal struct{}

func (stdinTerminal) IsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

func (stdinTerminal) Warn(text string) { fmt.Fprint(os.Stderr, text) }

func (stdinTerminal) ReadPassword(prompt string) (string, error) {
	fmt.Fprint(os.Stderr, prompt)
	b, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	return string(b), err
}

// lostPasswordWarning is shown before a new backup password is chosen.
const lostPasswordWarning = "A lost password means a lost backup: nobody, walletsync included, can open the file without it.\n"

// readPassword returns the password in file, or asks tty for it with prompt when file is
// empty. A file's bytes are the password, less one trailing newline ("\n" or "\r\n") that
// editors and `echo` add; every other byte counts, spaces included. (The toolbox's own tools
// use a file's bytes as they are: a password file for both must not end in a newline.) With
// confirm (a new backup) the password must not be empty, and at the terminal it is asked
// twice, after lostPasswordWarning, and two different answers are refused.
func readPassword(file string, confirm bool, tty terminal, prompt string) (string, error) {
	var pw string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read the password file: %w", err)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		pw = string(bytes.TrimSuffix(b, []byte("\r")))
	case !tty.IsTerminal():
		return "", fmt.Errorf("%w: no terminal to ask for the password on; give --password-file", errUsage)
	case confirm:
		tty.Warn(lostPasswordWarning)
		first, err := tty.ReadPassword("New backup password: ")
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		again, err := tty.ReadPassword("The same password again: ")
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if first != again {
			return "", fmt.Errorf("%w: the two passwords differ; nothing was written", errUsage)
		}
		pw = first
	default:
		var err error
		if pw, err = tty.ReadPassword(prompt); err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
	}
	if confirm && pw == "" {
		return "", fmt.Errorf("%w: a backup needs a password that is not empty", errUsage)
	}
	return pw, nil
}

// importProgress draws an import's progress on the status line (text mode only).
func importProgress(bar *progressLine, asJSON bool) func(portable.ImportProgress) {
	return func(p portable.ImportProgress) {
		switch {
		case asJSON:
		case p.Phase == portable.PhaseDecrypting || p.Phase == portable.PhaseValidating:
			bar.update(false, "%-10s %s of %s", p.Phase, humanBytes(p.Done), humanBytes(p.Total))
		default:
			bar.update(false, "%-10s %d of %d rows", p.Phase, p.Done, p.Total)
		}
	}
}

func printSummary(w io.Writer, s portable.Summary) {
	format := "BRC-38 JSON (plaintext)"
	if s.Encrypted && s.KDF != nil {
		format = fmt.Sprintf("BRC-39 (Argon2id t=%d m=%d KiB p=%d, %d-byte salt, %d-byte nonce; key derived in %s)",
			s.KDF.Iterations, s.KDF.MemoryKiB, s.KDF.Parallelism, s.SaltBytes, s.NonceBytes, s.KDFTime.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "file     %s\n", s.File)
	fmt.Fprintf(w, "format   %s\n", format)
	fmt.Fprintf(w, "identity %s\n", s.IdentityKey)
	fmt.Fprintf(w, "chain    %s\n", s.Chain)
	fmt.Fprintf(w, "source   %s (%s)\n", s.Source.StorageName, s.Source.StorageIdentityKey)
	fmt.Fprintf(w, "exported %s\n", wallet.FormatTime(s.ExportedAt))
	fmt.Fprintf(w, "active   %s (the user's active storage in the backup)\n", s.ActiveStorage)
	fmt.Fprintf(w, "digest   sha256 %s\n", s.Digest)
	printCounts(w, s.Counts)
}

func printCounts(w io.Writer, counts map[wallet.TableName]int64) {
	fmt.Fprintln(w, "rows")
	for _, t := range wallet.AllTables {
		fmt.Fprintf(w, "  %-20s %8d\n", t.Name, counts[t.Name])
	}
}

// printPreview shows what an import would do; a refused preview shows the document only
// (the refusal goes to standard error).
func printPreview(w io.Writer, res portable.PreviewResult, refusal error) {
	printSummary(w, res.Summary)
	if refusal != nil {
		return
	}
	what := "merge into"
	if res.Mode == wallet.ImportRestore {
		what = "restore into"
	}
	if res.Resumes {
		what = "finish an interrupted " + string(res.Mode) + " into"
	}
	fmt.Fprintf(w, "preview: %s %s (nothing was written)\n", what, res.Target)
	if res.OtherIdentity {
		fmt.Fprintf(w, "IDENTITY the backup's identity is not the wallet's (%s): the import needs --allow-other-identity, and the wallet then holds both\n",
			strings.Join(res.WalletIdentities, ", "))
	}
	printPlan(w, res.Plan)
	fmt.Fprintf(w, "total: %d to insert, %d to update, %d unchanged, %d older than the wallet's (skipped)\n",
		res.Total.Inserts, res.Total.Updates, res.Total.Unchanged, res.Total.Older)
	if res.ConflictTotal > 0 {
		fmt.Fprintf(w, "CONFLICTS %d rows of the backup cannot be merged into this wallet; the import is refused:\n", res.ConflictTotal)
		for _, c := range res.Conflicts {
			fmt.Fprintf(w, "  %s\n", c)
		}
		if more := res.ConflictTotal - len(res.Conflicts); more > 0 {
			fmt.Fprintf(w, "  and %d more\n", more)
		}
	}
}

func printPlan(w io.Writer, plan wallet.MergePlan) {
	fmt.Fprintf(w, "  %-20s %8s %8s %10s %8s\n", "table", "insert", "update", "unchanged", "older")
	for _, t := range wallet.AllTables {
		c := plan[t.Name]
		fmt.Fprintf(w, "  %-20s %8d %8d %10d %8d\n", t.Name, c.Inserts, c.Updates, c.Unchanged, c.Older)
	}
}

// checkOutPath refuses an output path whose folder is missing, or that names a folder: the
// file is written beside it and renamed into place, which would otherwise fail only at the end.
func checkOutPath(path string) error {
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("--out %s: its folder %s does not exist", path, filepath.Dir(path))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--out %s is a folder; name the file to write", path)
	}
	return nil
}
