package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/syncer"
	"walletsync/wallet"
)

// runSync pushes a wallet to a SQLite destination file page by page, or pushes it to or
// pulls it from a storage server (see runRemoteSync) when --to or --from is a URL.
func runSync(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("sync", "--from WALLET.sqlite|URL --to DEST.sqlite|URL [--key-file F | --wallet-url URL] [--wire auto|toolbox|walletsync] [--give-up 60s] [--identity HEX] [--allow-empty] [--max-items N] [--max-bytes N] [--json]", out)
	from := fs.String("from", "", "the wallet to copy from, or the storage server URL to pull from")
	to := fs.String("to", "", "the destination wallet file (created in the toolbox schema if missing), or the storage server URL to push to")
	identity := fs.String("identity", "", "the user to sync (default: the source's only user; from a server, the signer's identity)")
	maxItems := fs.Int("max-items", syncer.DefaultMaxRows, fmt.Sprintf("rows per page, 1..%d", syncer.MaxRows))
	maxBytes := fs.Int64("max-bytes", syncer.DefaultMaxBytes, fmt.Sprintf("rough bytes per page, 1..%d (a storage server's chunks: default %d, up to %d)", syncer.MaxBytes, syncer.DefaultChunkRoughSize, wallet.MaxPageBytes))
	keyFile := fs.String("key-file", "", "with a storage server: the wallet's identity key file (see `walletsync key`)")
	walletURL := fs.String("wallet-url", "", "with a storage server: the BRC-100 wallet that signs as the identity instead of a key file, e.g. http://127.0.0.1:3321")
	asJSON := fs.Bool("json", false, "print one JSON object per progress event, then the result")
	giveUp := fs.Duration("give-up", remote.GiveUp, "with a storage server: how long to keep trying one that does not answer before the sync fails")
	wireName := fs.String("wire", "auto", "with a storage server: auto (walletsync's paged wire when the server has it, else the toolbox's), toolbox or walletsync")
	allowEmpty := fs.Bool("allow-empty", false, "with --from URL into a new file: keep the new wallet even when the server holds no transactions or outputs of the identity")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	wireChoice, err := remote.ParseWire(*wireName)
	if err != nil {
		return fmt.Errorf("%w: --wire must be auto, toolbox or walletsync", command.ErrUsage)
	}
	if err := command.Required("from", *from); err != nil {
		return err
	}
	if err := command.Required("to", *to); err != nil {
		return err
	}
	if !isURL(*from) {
		if err := checkWalletArg("from", *from, false); err != nil {
			return err
		}
	}
	if !isURL(*to) {
		if err := checkWalletArg("to", *to, true); err != nil {
			return err
		}
	}
	if isURL(*from) || isURL(*to) {
		if *giveUp <= 0 {
			return fmt.Errorf("%w: --give-up must be more than 0", command.ErrUsage)
		}
		r := remoteSync{from: *from, to: *to, identity: *identity, keyFile: *keyFile, walletURL: *walletURL, asJSON: *asJSON, wire: wireChoice, giveUp: *giveUp, allowEmpty: *allowEmpty}
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "max-items":
				r.maxItems = int64(*maxItems)
			case "max-bytes":
				r.maxBytes = *maxBytes
			}
		})
		return r.run(ctx, out)
	}
	if *keyFile != "" || *walletURL != "" {
		return fmt.Errorf("%w: --key-file and --wallet-url sign for a storage server; neither --from nor --to is a URL", command.ErrUsage)
	}
	if safefile.SameFile(*from, *to) {
		return fmt.Errorf("%w: --to %s is the wallet --from names; choose another file", command.ErrUsage, *to)
	}
	// Refused before anything is opened or created. The Go API reads 0 as the default; on the
	// command line it is a value outside the range the flags state.
	if *maxItems == 0 || *maxBytes == 0 {
		return fmt.Errorf("%w: --max-items and --max-bytes must be at least 1", command.ErrUsage)
	}
	// DEST is a backup wallet: an exact copy of the user's rows (syncer.Options.Mirror).
	opts := syncer.Options{MaxRows: *maxItems, MaxBytes: *maxBytes, Active: wallet.KeepSourceActive, Mirror: true}
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	src, err := openSource(ctx, *from)
	if err != nil {
		return err
	}
	defer src.Close()
	settings, err := src.Settings(ctx)
	if err != nil {
		return err
	}
	if *identity == "" {
		if *identity, err = onlyIdentity(ctx, src); err != nil {
			return err
		}
	}
	// An identity the source lacks is refused before the destination is created.
	total := int64(0) // rows a full traversal reads, for the ETA
	sum, err := src.Summary(ctx, *identity)
	switch {
	case errors.Is(err, wallet.ErrNotFound):
		return fmt.Errorf("%w: %s holds no user %s", command.ErrUsage, *from, *identity)
	case err == nil:
		for _, t := range wallet.SyncOrder {
			total += sum.Counts[t.Name]
		}
	}
	dst, err := localstore.OpenOrCreate(ctx, *to, localstore.CreateOptions{Chain: settings.Chain, StorageName: "walletsync backup"}, localstore.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()

	bar := command.NewProgressLine(out)
	enc := json.NewEncoder(out)
	opts.Progress = progressPrinter(bar, enc, *asJSON, "pages", total)
	res, err := syncer.Run(ctx, src, dst, *identity, opts)
	if *asJSON {
		if encErr := enc.Encode(res); encErr != nil {
			return encErr
		}
	} else {
		kind := "sync" // a session refused before its first page never chose full or incremental
		if res.Kind != "" {
			kind = string(res.Kind) + " sync"
		}
		summary := fmt.Sprintf("%s: %s, %d pages, %d rows (%d inserted, %d updated), %s in %s",
			res.State, kind, res.Pages, res.Rows, res.Inserts, res.Updates, command.HumanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond))
		bar.Update(true, "%s", summary)
		if !bar.Terminal() {
			fmt.Fprintln(out, summary)
		}
		if cp := res.Checkpoint; cp.Seq == 0 {
			fmt.Fprintf(out, "nothing committed at %s\n", *to)
		} else {
			fmt.Fprintf(out, "durable checkpoint at %s: sequence %d, table %s, done %v, journal high-water %d\n",
				*to, cp.Seq, wallet.SyncOrder[cp.Table].Name, cp.Done, cp.HighWater)
			if !cp.Done && res.Resumable {
				fmt.Fprintln(out, "the next run continues from there")
			} else if !cp.Done {
				fmt.Fprintln(out, "the source keeps no change journal: the next run starts again at the first table (nothing is stored twice)")
			}
		}
		if res.Resumed == syncer.ResumeFirstTable {
			fmt.Fprintln(out, "resumed at the first table: the source's change journal does not cover the last checkpoint")
		}
	}
	if res.State == syncer.StateCancelled {
		return command.ErrCancelled
	}
	return err
}

// progressPrinter prints a session's progress: one JSON object per event, or a progress
// line with the rows done of the total, the rate and the time left where the total is known
// (the session's own, or total for a full copy). unit names what the session counts in
// Pages ("pages", "chunks").
func progressPrinter(bar *command.ProgressLine, enc *json.Encoder, asJSON bool, unit string, total int64) func(syncer.Progress) error {
	var meter stats.Rate
	return func(p syncer.Progress) error {
		if asJSON {
			return enc.Encode(p)
		}
		now := time.Now()
		meter.Observe(now, p.Rows, p.Bytes)
		rate, _ := meter.PerSecond(now)
		known := p.Total
		if known == 0 && p.Kind == syncer.KindFull { // what an incremental run reads is not counted
			known = total
		}
		bar.Update(false, "%s", progressLine(string(p.State), string(p.Table), p.Pages, unit, p.Bytes, command.ProgressText(p.Rows, known, rate)))
		return nil
	}
}

// progressLine is the one live line of a copy, as `sync` and `run --wait` draw it: the
// session's state and table, the pages (or chunks) and bytes moved, and the rows with the
// rate and the time left (command.ProgressText).
func progressLine(state, table string, pages int64, unit string, bytes int64, rows string) string {
	return fmt.Sprintf("%-10s %-18s %6d %s %9s %s", state, table, pages, unit, command.HumanBytes(bytes), rows)
}

// openSource opens a wallet to read from: for writing when it can, so that walletsync's
// change journal is in place (the first open of a wallet installs it, see the README's
// "What walletsync writes into a wallet file"; later opens write nothing, and the push
// itself never writes into its source), read-only when another walletsync process holds it.
func openSource(ctx context.Context, path string) (*localstore.Store, error) {
	s, err := localstore.Open(ctx, path, localstore.Options{})
	if errors.Is(err, wallet.ErrWriterLocked) {
		return localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
	}
	return s, err
}

// onlyIdentity returns the identity of a store's single user, or asks for --identity.
func onlyIdentity(ctx context.Context, s *localstore.Store) (string, error) {
	info, err := s.Info(ctx)
	if err != nil {
		return "", err
	}
	if len(info.Identities) != 1 {
		return "", fmt.Errorf("%w: the wallet holds %d identities; choose one with --identity", command.ErrUsage, len(info.Identities))
	}
	return info.Identities[0].IdentityKey, nil
}
