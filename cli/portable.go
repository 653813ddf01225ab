package cli

import (
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
	"unicode/utf8"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// The portable backup commands: export, verify, import. Passwords never come from the
// command line, where other users' `ps` and the shell's history would see them: they are
// typed at a prompt without echo, or read from a file (--password-file).

func runExport(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("export", "--db WALLET [--identity HEX] --out FILE.brc39 [--force] [--password-file P] [--plaintext] [--json]", out)
	db := fs.String("db", "", "the wallet to export")
	identity := fs.String("identity", "", "the user to export (default: the wallet's only user)")
	outPath := fs.String("out", "", "the backup file to write; an existing file is refused (see --force)")
	force := fs.Bool("force", false, "replace --out when it exists and is a backup file (never a wallet, or any other file)")
	passwordFile := fs.String("password-file", "", passwordFileUsage+" (default: asked twice at the terminal)")
	plaintext := fs.Bool("plaintext", false, "write the unencrypted BRC-38 JSON document instead: it holds the wallet's keys in the clear")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	if err := command.Required("out", *outPath); err != nil {
		return err
	}
	if *plaintext && *passwordFile != "" {
		return fmt.Errorf("%w: --plaintext writes no password; leave out --password-file", command.ErrUsage)
	}
	// Before the password is asked for: a file that cannot land is better said at once.
	if err := checkOutPath(*outPath); err != nil {
		return err
	}
	exportOpts := cliExportOptions(*force)
	if _, err := portable.CheckExportPath(*outPath, exportOpts); err != nil {
		return withForceHint(err)
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
		if password, err = command.ReadPassword(*passwordFile, true, command.StdinTerminal{}, ""); err != nil {
			return err
		}
		// The dashboard's rule, from the one place it is kept.
		if api.CheckNewPassword(password) != nil {
			return fmt.Errorf("%w: a backup password needs at least %d characters, as on the dashboard; this one has %d; nothing was written",
				command.ErrUsage, api.MinPasswordLength, utf8.RuneCountInString(password))
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
	bar := command.NewProgressLine(out)
	v := &command.CountingView{Snapshot: snap, Report: func(rows int64) {
		bar.Update(false, "exporting %s: %d/%d rows", filepath.Base(*outPath), rows, total)
	}}
	var res portable.ExportResult
	if *plaintext {
		res, err = portable.ExportBRC38(ctx, v, settings, *identity, *outPath, exportOpts)
	} else {
		bar.Update(true, "deriving the file key (Argon2id, a few seconds)")
		res, err = portable.ExportBRC39(ctx, v, settings, *identity, password, brc39.DefaultKDFParams, *outPath, exportOpts)
	}
	if err != nil {
		return withForceHint(err)
	}
	bar.Update(true, "exported %d rows", v.Rows)
	return command.Report(out, *asJSON, res, func(w io.Writer) {
		format := "BRC-39, encrypted (Argon2id t=7, m=128 MiB, p=1; key derived in " + res.KDFTime.Round(time.Millisecond).String() + ")"
		if *plaintext {
			format = "BRC-38 JSON, NOT encrypted: anyone who reads this file can spend the wallet's coins"
		}
		fmt.Fprintf(w, "wrote    %s (%s)\n", res.Path, command.HumanBytes(res.Size))
		fmt.Fprintf(w, "format   %s\n", format)
		fmt.Fprintf(w, "sha256   %s\n", hex.EncodeToString(res.SHA256[:]))
		fmt.Fprintf(w, "identity %s\n", *identity)
		printCounts(w, res.Stats.Rows)
		fmt.Fprintf(w, "took     %s\n", res.Elapsed.Round(time.Millisecond))
	})
}

func runVerify(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("verify", "--in FILE [--password-file P] [--plaintext] [--data-dir DIR] [--json]", out)
	bf := addBackupFileFlags(fs, "the backup file to check")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	in := bf.in
	opts, password, err := bf.prepare()
	if err != nil {
		return err
	}
	bar := command.NewProgressLine(out)
	sum, err := portable.Verify(ctx, *in, password, opts, importProgress(bar, *asJSON))
	if err != nil {
		return command.Cancelled(ctx, err)
	}
	bar.Update(true, "verified")
	return command.Report(out, *asJSON, sum, func(w io.Writer) {
		printSummary(w, sum)
		fmt.Fprintln(w, "ok: the password, the tag and the whole document verify")
	})
}

func runImport(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("import", "--db WALLET (--in FILE [--password-file P] [--preview] [--mode merge|restore] [--allow-other-identity] [--plaintext] | --abandon) [--data-dir DIR] [--json]", out)
	db := fs.String("db", "", "the wallet to import into; a restore may name a file that does not exist yet")
	bf := addBackupFileFlags(fs, "the backup file")
	preview := fs.Bool("preview", false, "show what the import would do, and write nothing to the wallet")
	mode := fs.String("mode", "", "merge (BRC-40 rules, the wallet's own rows kept where newer) or restore (into an empty or new wallet, ids kept); default: restore for a new file, merge otherwise")
	allowOther := fs.Bool("allow-other-identity", false, "merge a backup of another identity than the wallet's; the wallet then holds both")
	abandon := fs.Bool("abandon", false, "take back the wallet's unfinished import: the wallet becomes exactly what it was before that import started (no --in, no password)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	if *abandon {
		if *bf.in != "" || *preview || *mode != "" || *allowOther {
			return fmt.Errorf("%w: --abandon takes only --db, --data-dir and --json", command.ErrUsage)
		}
		return runAbandon(ctx, *db, *bf.dataDir, *asJSON, out)
	}
	var importMode wallet.ImportMode
	if *mode != "" { // checked before the password is asked for
		var err error
		if importMode, err = wallet.ParseImportMode(*mode); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
	}
	in := bf.in
	opts, password, err := bf.prepare()
	if err != nil {
		return err
	}
	opts.Mode, opts.AllowOtherIdentity = importMode, *allowOther
	bar := command.NewProgressLine(out)
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
		bar.Update(true, "previewed")
		if res.Digest == "" && err != nil {
			return command.Cancelled(ctx, err)
		}
		if rerr := command.Report(out, *asJSON, res, func(w io.Writer) { printPreview(w, res, err) }); rerr != nil {
			return rerr
		}
		return command.Cancelled(ctx, err)
	}
	if _, err := os.Stat(*db); err == nil && !*asJSON {
		fmt.Fprintf(out, "note: %s\n", localstore.WriteIntoWalletNotice)
	}
	res, err := portable.Import(ctx, *in, password, portable.Target{Path: *db}, opts, progress)
	if err != nil {
		return command.Cancelled(ctx, err)
	}
	bar.Update(true, "imported")
	return command.Report(out, *asJSON, res, func(w io.Writer) {
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
	return command.Report(out, asJSON, recs, func(w io.Writer) {
		for _, rec := range recs {
			fmt.Fprintf(w, "abandoned the %s of backup %s (started %s): %s is as it was before it\n",
				rec.Mode, wallet.ShortKey(rec.Digest, 16), wallet.FormatTime(rec.StartedAt), db)
		}
	})
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
	if err := command.Required("in", *f.in); err != nil {
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
	return portable.ImportOptions{StagingDir: filepath.Join(dataDir, "staging"), Plaintext: plaintext, Open: command.WalletFiles()}, nil
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

// filePassword reads the password of the backup file in, unless it is plaintext. A file
// that is not there is said before anyone types a password for it.
func filePassword(in, passwordFile string, plaintext bool) (string, error) {
	if _, err := os.Stat(in); err != nil {
		return "", err
	}
	if plaintext {
		if passwordFile != "" {
			return "", fmt.Errorf("%w: a --plaintext document has no password; leave out --password-file", command.ErrUsage)
		}
		return "", nil
	}
	return command.ReadPassword(passwordFile, false, command.StdinTerminal{}, "Password for "+filepath.Base(in)+": ")
}

// importProgress draws an import's progress on the status line (text mode only).
func importProgress(bar *command.ProgressLine, asJSON bool) func(portable.ImportProgress) {
	return func(p portable.ImportProgress) {
		switch {
		case asJSON:
		case p.Phase == portable.PhaseDecrypting || p.Phase == portable.PhaseValidating:
			bar.Update(false, "%-10s %s of %s", p.Phase, command.HumanBytes(p.Done), command.HumanBytes(p.Total))
		default:
			bar.Update(false, "%-10s %d of %d rows", p.Phase, p.Done, p.Total)
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
// cliExportOptions are the export options of the command line: --force, and the agent's
// default data folder, which no export writes into.
func cliExportOptions(force bool) portable.ExportOptions {
	opts := portable.ExportOptions{Overwrite: force}
	if d, err := agent.DefaultDataDir(); err == nil {
		opts.Protected = []string{string(d)}
	}
	return opts
}

// withForceHint names --force where it helps: a backup file that exists where the export
// writes (wallet.ErrFileExists), which --force replaces. Any other error is returned as it is.
func withForceHint(err error) error {
	if re, ok := errors.AsType[*wallet.ReplaceError](err); ok && errors.Is(err, wallet.ErrFileExists) {
		return said(wallet.ErrFileExists, "%s exists (%s); nothing was written: choose another --out, or add --force to replace it", re.Path, re.Reason)
	}
	return err
}

func checkOutPath(path string) error {
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("--out %s: its folder %s does not exist", path, filepath.Dir(path))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--out %s is a folder; name the file to write", path)
	}
	return nil
}
