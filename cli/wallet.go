package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"walletsync/cli/command"
	"walletsync/localstore"
	"walletsync/wallet"
)

func runWalletCreate(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("wallet create", "--db FILE --chain test|main [--identity HEX]", out)
	db := fs.String("db", "", "the wallet file to create (must not exist)")
	chain := fs.String("chain", "test", "the chain: main, test, teratest or mock")
	identity := fs.String("identity", "", "also create this user (a compressed public key in hex)")
	name := fs.String("name", "walletsync", "the store's human-readable name")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	c, err := wallet.ParseChain(*chain)
	if err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	s, err := localstore.Create(ctx, *db, localstore.CreateOptions{Chain: c, StorageName: *name}, localstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	if *identity != "" {
		if _, _, err := s.EnsureUser(ctx, *identity); err != nil {
			return err
		}
	}
	return printInfo(ctx, s, out, *asJSON)
}

func runWalletSeed(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("wallet seed", "--db FILE --fixture small|toolbox|large [--seed N] [--identity HEX]", out)
	db := fs.String("db", "", "the wallet file to fill")
	fixture := fs.String("fixture", "small", "small, toolbox or large (about 1 GB)")
	seed := fs.Uint64("seed", 1, "the same seed gives the same rows")
	identity := fs.String("identity", "", "the user to fill (default: derived from the seed)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	f, err := localstore.ParseFixture(*fixture)
	if err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	s, err := localstore.Open(ctx, *db, localstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	bar := command.NewProgressLine(out)
	res, err := localstore.Seed(ctx, s, f, localstore.SeedOptions{Seed: *seed, IdentityKey: *identity,
		Progress: func(done, total int) {
			bar.Update(done == total, "seeding %s: %d/%d transactions", f, done, total)
		}})
	if err != nil {
		return err
	}
	return command.Report(out, *asJSON, res, func(w io.Writer) {
		fmt.Fprintf(w, "seeded %s fixture for %s\n", f, res.IdentityKey)
		for _, t := range wallet.AllTables {
			fmt.Fprintf(w, "  %-20s %8d rows\n", t.Name, res.Rows[t.Name])
		}
	})
}

func runWalletInfo(ctx context.Context, args []string, out io.Writer) error {
	s, asJSON, err := openReadOnlyWallet(ctx, "wallet info", args, out)
	if err != nil {
		return err
	}
	defer s.Close()
	return printInfo(ctx, s, out, asJSON)
}

// openReadOnlyWallet parses the --db and --json flags of a command that only reads a wallet,
// and opens the wallet read-only. The caller closes it.
func openReadOnlyWallet(ctx context.Context, name string, args []string, out io.Writer) (*localstore.Store, bool, error) {
	fs := command.NewFlags(name, "--db FILE [--json]", out)
	db := fs.String("db", "", "the wallet file")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return nil, false, err
	}
	if err := command.Required("db", *db); err != nil {
		return nil, false, err
	}
	s, err := localstore.Open(ctx, *db, localstore.Options{ReadOnly: true})
	return s, *asJSON, err
}

func printInfo(ctx context.Context, s *localstore.Store, out io.Writer, asJSON bool) error {
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	return command.Report(out, asJSON, info, func(w io.Writer) {
		fmt.Fprintf(w, "wallet   %s\n", info.Path)
		fmt.Fprintf(w, "chain    %s\n", info.Settings.Chain)
		fmt.Fprintf(w, "storage  %s (%s)\n", info.Settings.StorageIdentityKey, info.Settings.StorageName)
		fmt.Fprintf(w, "size     %s\n", command.HumanBytes(info.SizeBytes))
		if strings.EqualFold(info.JournalMode, "wal") {
			fmt.Fprintln(w, "mode     WAL (walletsync switches a wallet to WAL the first time it opens it for writing; the wallet app follows on its own)")
		} else {
			fmt.Fprintf(w, "mode     %s (rollback journal; walletsync switches it to WAL the first time it opens it for writing, when no program is inside a transaction)\n", info.JournalMode)
		}
		if ip := info.ImportInProgress; ip != nil {
			fmt.Fprintf(w, "IMPORT   %v; the counts below hold part of it\n", &wallet.ImportInProgressError{Path: info.Path, Record: *ip})
		}
		if info.Journal != nil {
			fmt.Fprintf(w, "journal  high-water %d, complete after %d, pruned through %d, %d entries kept\n",
				info.Journal.HighWater, info.Journal.CompleteAfter, info.Journal.PrunedThrough, info.Journal.Entries)
		} else {
			fmt.Fprintln(w, "journal  none (walletsync has not written to this file)")
		}
		for _, id := range info.Identities {
			fmt.Fprintf(w, "\nidentity %s\n", id.IdentityKey)
			fmt.Fprintf(w, "  balance %d satoshis in %d spendable outputs\n", id.Balance, id.SpendableOutputs)
			for _, t := range wallet.AllTables {
				fmt.Fprintf(w, "  %-20s %8d\n", t.Name, id.Counts[t.Name])
			}
		}
		if len(info.Identities) == 0 {
			fmt.Fprintln(w, "\nno identities yet")
		}
	})
}

func runWalletCheck(ctx context.Context, args []string, out io.Writer) error {
	s, asJSON, err := openReadOnlyWallet(ctx, "wallet check", args, out)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := s.CheckIntegrity(ctx)
	if err != nil {
		return err
	}
	if err := command.Report(out, asJSON, rep, func(w io.Writer) {
		if rep.OK {
			fmt.Fprintln(w, "ok: integrity and foreign keys are clean")
			return
		}
		for _, p := range rep.Problems {
			fmt.Fprintln(w, "integrity:", p)
		}
		for _, p := range rep.ForeignKeys {
			fmt.Fprintf(w, "foreign key: %s row %d points to a missing %s row\n", p.Table, p.RowID, p.Parent)
		}
	}); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%s: %d integrity problems, %d foreign key problems", s.Path(), len(rep.Problems), len(rep.ForeignKeys))
	}
	return nil
}
