package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"walletsync/localstore"
	"walletsync/wallet"
)

// runDemo is the main job as far as it exists: it makes a demo wallet from a fixture (or
// reuses the one in --dir) and prints its summary.
func runDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo", "[--dir D] [--fixture toolbox] [--json]", out)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "walletsync-demo"), "where the demo keeps its files")
	fixture := fs.String("fixture", string(localstore.FixtureToolbox), "the demo wallet's fixture: small, toolbox or large")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	f, err := localstore.ParseFixture(*fixture)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(*dir, "demo-wallet-"+string(f)+".sqlite")
	s, err := localstore.Open(ctx, path, localstore.Options{})
	if errors.Is(err, wallet.ErrNotFound) {
		if !*asJSON {
			fmt.Fprintf(out, "creating a demo wallet (%s fixture) at %s\n", f, path)
		}
		s, err = localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "walletsync demo"}, localstore.Options{})
		if err == nil {
			bar := newProgressLine(out)
			_, err = localstore.Seed(ctx, s, f, localstore.SeedOptions{Seed: 1, Progress: func(done, total int) {
				bar.update(done == total, "seeding: %d/%d transactions", done, total)
			}})
		}
	}
	if err != nil {
		if s != nil {
			s.Close()
		}
		return err
	}
	defer s.Close()
	return printInfo(ctx, s, out, *asJSON)
}
