package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"walletsync/bundle"
	"walletsync/cli/command"
	"walletsync/localstore"
)

// bundleResult is what the bundle commands print: the bundle, its manifest, and what was
// done with it.
type bundleResult struct {
	Bundle   string          `json:"bundle"`
	Wallet   string          `json:"wallet,omitempty"`
	Action   string          `json:"action"` // created, verified, restored
	Seconds  float64         `json:"seconds"`
	Manifest bundle.Manifest `json:"manifest"`
	// Replaced is where a restore kept the wallet file it replaced ("" when it made a new one).
	Replaced string `json:"replaced,omitempty"`
}

func runBundleCreate(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("bundle create", "--db FILE --out DIR [--json]", out)
	db := fs.String("db", "", "the wallet file (it may be in use, by the agent too)")
	dir := fs.String("out", "", "the bundle folder to create (must not exist; its parent must)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	if err := command.Required("out", *dir); err != nil {
		return err
	}
	// Read-only: a running agent keeps the writer lock, and the snapshot needs none.
	s, err := localstore.Open(ctx, *db, localstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now()
	m, err := bundle.Create(ctx, s, *dir, bundle.CreateOptions{})
	if err != nil {
		return err
	}
	return printBundle(out, *asJSON, bundleResult{Bundle: *dir, Wallet: *db, Action: "created", Seconds: time.Since(start).Seconds(), Manifest: m})
}

func runBundleVerify(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("bundle verify", "--in DIR [--json]", out)
	dir := fs.String("in", "", "the bundle folder")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("in", *dir); err != nil {
		return err
	}
	start := time.Now()
	m, err := bundle.Verify(ctx, *dir)
	if err != nil {
		return err
	}
	return printBundle(out, *asJSON, bundleResult{Bundle: *dir, Action: "verified", Seconds: time.Since(start).Seconds(), Manifest: m})
}

func runBundleRestore(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("bundle restore", "--in DIR --to FILE [--force] [--json]", out)
	dir := fs.String("in", "", "the bundle folder")
	to := fs.String("to", "", "the wallet file to create (or, with --force, replace); no walletsync process may hold it")
	force := fs.Bool("force", false, "replace an existing wallet file; it is kept beside it as FILE.replaced-<time> until you remove it")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("in", *dir); err != nil {
		return err
	}
	if err := command.Required("to", *to); err != nil {
		return err
	}
	start := time.Now()
	manifest, err := bundle.ReadManifest(*dir)
	if err != nil {
		return fmt.Errorf("restore bundle: %w", err)
	}
	restored := identityKeys(manifest.Identities, func(id bundle.Identity) string { return id.IdentityKey })
	kept, err := keepReplaced(ctx, *to, restored, *force, start)
	if err != nil {
		return fmt.Errorf("restore bundle %s into %s: %w", *dir, *to, err)
	}
	m, err := bundle.Restore(ctx, *dir, *to, bundle.RestoreOptions{})
	if err != nil {
		if kept != "" {
			os.Remove(kept) // the target is as it was
		}
		return err
	}
	return printBundle(out, *asJSON, bundleResult{Bundle: *dir, Wallet: *to, Action: "restored", Seconds: time.Since(start).Seconds(), Manifest: m, Replaced: kept})
}

func printBundle(out io.Writer, asJSON bool, r bundleResult) error {
	return command.Report(out, asJSON, r, func(w io.Writer) {
		m := r.Manifest
		f := m.Files[0]
		switch r.Action {
		case "created":
			fmt.Fprintf(w, "created bundle %s from %s in %.2f s\n", r.Bundle, r.Wallet, r.Seconds)
		case "verified":
			fmt.Fprintf(w, "bundle %s is good: digests, SQLite integrity and foreign keys, counts (%.2f s)\n", r.Bundle, r.Seconds)
		case "restored":
			fmt.Fprintf(w, "restored bundle %s into %s in %.2f s\n", r.Bundle, r.Wallet, r.Seconds)
			if r.Replaced != "" {
				fmt.Fprintf(w, "  replaced the wallet that was there; kept it as %s (remove it once you no longer need it)\n", r.Replaced)
			}
		}
		fmt.Fprintf(w, "  made     %s by walletsync %s\n", m.CreatedAt.Format(time.RFC3339), m.WalletsyncVersion)
		fmt.Fprintf(w, "  chain    %s\n", m.Chain)
		fmt.Fprintf(w, "  storage  %s (%s)\n", m.StorageIdentityKey, m.StorageName)
		fmt.Fprintf(w, "  schema   toolbox %d migrations (%s), walletsync %d\n", m.Schema.ToolboxMigrations, m.Schema.ToolboxLatest, m.Schema.Walletsync)
		fmt.Fprintf(w, "  file     %s: %s, %s uncompressed (wallet on disk %s), sha256 %s\n", f.Name, command.HumanBytes(f.SizeBytes), command.HumanBytes(f.RawSizeBytes), command.HumanBytes(m.SourceSizeBytes), f.SHA256[:16])
		var rows int64
		for _, n := range m.Tables {
			rows += n
		}
		fmt.Fprintf(w, "  tables   %d, %d rows (per table in manifest.json, or with --json)\n", len(m.Tables), rows)
		fmt.Fprintf(w, "  identities %d\n", len(m.Identities))
		for _, id := range m.Identities {
			var n int64
			for _, c := range id.Rows {
				n += c
			}
			fmt.Fprintf(w, "    %s  %d rows\n", id.IdentityKey, n)
		}
	})
}
