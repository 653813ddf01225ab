package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"walletsync/cli"
	"walletsync/cli/command"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := lab().Dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// lab is the bench binary's command line. Its hidden commands are what it runs as its own
// children: each measured phase, and `serve`, walletsync's own server, so that a bench
// that measures a server process needs no second binary.
func lab() command.Program {
	return command.Program{
		Name:    "walletsync-bench",
		Summary: "walletsync-bench measures walletsync against its floors and its peers; each report prints ratios to a baseline of the same run.",
		Commands: []command.Command{
			{Name: "bundle", Summary: "measure foreground latency while a whole-store bundle is made, and the bundle against a plain file copy", Run: RunBundle},
			{Name: "store", Summary: "measure keyset paging through a snapshot view against a plain scan", Run: RunStore},
			{Name: "store-child", Hidden: true, Run: RunStoreChild},
			{Name: "scheduler", Summary: "measure foreground latency while a background copy (backup or restore) runs: idle, exclusive, paged", Run: RunScheduler},
			{Name: "sync", Summary: "measure a full, an unchanged and an incremental sync against the raw SQLite floor", Run: RunSync},
			{Name: "sync-child", Hidden: true, Run: RunSyncChild},
			{Name: "remote", Summary: "push a wallet to a toolbox storage server and pull it back, walletsync against the toolbox's own client", Run: RunRemote},
			{Name: "portable", Summary: "measure BRC-39 export and restore (Argon2id apart) against @bsv/wallet-toolbox's, and their memory", Run: RunPortable},
			{Name: "portable-child", Hidden: true, Run: RunPortableChild},
			{Name: "serve", Summary: "measure walletsync's client over the paged wire against a local copy, and a toolbox wallet's backup to walletsync serve against the toolbox's own StorageServer", Run: RunServe},
			{Name: "load", Summary: "load walletsync serve with many clients pushing at once: request latency, errors, and every client's data checked", Run: RunLoad},
			{Name: "walletsync", Hidden: true, Run: runWalletsync},
		},
	}
}

// labFlags is the flag set of the lab's command name.
func labFlags(name, synopsis string, out io.Writer) *flag.FlagSet {
	return command.NewProgramFlags("walletsync-bench", name, synopsis, out)
}

// runWalletsync runs walletsync's own command line on args (`walletsync-bench walletsync
// serve ...`): the server processes that bench serve and bench load start are this binary.
func runWalletsync(ctx context.Context, args []string, out io.Writer) error {
	if code := cli.Run(ctx, args, out, os.Stderr); code != 0 {
		return fmt.Errorf("walletsync %v: exit code %d", args, code)
	}
	return nil
}
