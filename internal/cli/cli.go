// Package cli is walletsync's command line: it parses each command's flags, runs the
// command through the engine packages (or, for agent, status, run and the rest, through
// the running agent's API), and prints the result as text or JSON. The benchmarks are
// commands too (`walletsync bench ...`); their measuring is in internal/bench.
//
// Usage: walletsync <command> [flags]; `walletsync help` lists the commands and
// `walletsync <command> --help` explains one.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"walletsync/agent"

	"walletsync/internal/bench"
	"walletsync/internal/command"
)

// subcommand is one command of the command line. Its run parses its own flags from args,
// so that every command has --help, and writes its report to out.
type subcommand struct {
	name    string // as typed, e.g. "wallet create"
	summary string
	hidden  bool // internal helpers, not listed
	run     func(ctx context.Context, args []string, out io.Writer) error
}

// commands returns every subcommand. It is a function, not a package variable, so that no
// mutable state is global.
func commands() []subcommand {
	return []subcommand{
		{name: "demo", summary: "the main job on a demo wallet: agent, dashboard, a sync and an encrypted backup", run: runDemo},
		{name: "wallet create", summary: "create a new wallet file in the wallet-toolbox schema", run: runWalletCreate},
		{name: "wallet seed", summary: "fill a wallet with a deterministic fixture (small, toolbox, large)", run: runWalletSeed},
		{name: "wallet info", summary: "show a wallet's identity, chain, counts, size and journal", run: runWalletInfo},
		{name: "wallet check", summary: "run SQLite's integrity and foreign key checks on a wallet", run: runWalletCheck},
		{name: "key create", summary: "create an identity key file (mode 0600) for remote storage and print its public key", run: runKeyCreate},
		{name: "key show", summary: "print the public key of an identity key file", run: runKeyShow},
		{name: "serve", summary: "serve wallet storage to toolbox wallets (JSON-RPC over BRC-104) from one SQLite store or a PostgreSQL database, until Ctrl-C", run: runServe},
		{name: "agent", summary: "run the background agent with its dashboard (until Ctrl-C)", run: runAgent},
		{name: "service", summary: "install, uninstall, start, stop or show the platform service", run: runService},
		{name: "status", summary: "show the running agent's health and destinations", run: runStatus},
		{name: "tasks", summary: "list the running agent's tasks", run: runTasks},
		{name: "run", summary: "bring a destination up to date now", run: runRun},
		{name: "cancel", summary: "cancel a task at its next safe point", run: runCancel},
		{name: "pause", summary: "hold a destination's (or all) scheduled runs back", run: runPause},
		{name: "resume", summary: "let a destination's (or all) scheduled runs go again", run: runResume},
		{name: "tray", summary: "show the agent's health in the system tray, with back up now, pause and open dashboard", run: runTray},
		{name: "sync", summary: "copy a wallet to a SQLite backup wallet page by page, or push it to or pull it from a storage server; resumable", run: runSync},
		{name: "export", summary: "write a wallet to an encrypted BRC-39 backup file (or, asked for, plaintext BRC-38)", run: runExport},
		{name: "verify", summary: "check a backup file's password, tag and document without importing it", run: runVerify},
		{name: "import", summary: "preview or import a backup file into a wallet (merge or restore), resumable", run: runImport},
		{name: "bundle create", summary: "snapshot the whole wallet file (every identity) into a verifiable, compressed bundle folder", run: runBundleCreate},
		{name: "bundle verify", summary: "check a bundle's digests, SQLite integrity and counts without touching any wallet", run: runBundleVerify},
		{name: "bundle restore", summary: "replace a wallet file with a bundle, staged and crash-safe", run: runBundleRestore},
		{name: "bench bundle", summary: "measure foreground latency while a whole-store bundle is made, and the bundle against a plain file copy", run: bench.RunBundle},
		{name: "bench store", summary: "measure keyset paging through a snapshot view against a plain scan", run: bench.RunStore},
		{name: "bench store-child", hidden: true, run: bench.RunStoreChild},
		{name: "bench scheduler", summary: "measure foreground latency while a background copy (backup or restore) runs: idle, exclusive, paged", run: bench.RunScheduler},
		{name: "bench sync", summary: "measure a full, an unchanged and an incremental sync against the raw SQLite floor", run: bench.RunSync},
		{name: "bench sync-child", hidden: true, run: bench.RunSyncChild},
		{name: "bench remote", summary: "push a wallet to a toolbox storage server and pull it back, walletsync against the toolbox's own client", run: bench.RunRemote},
		{name: "bench portable", summary: "measure BRC-39 export and restore (Argon2id apart) against @bsv/wallet-toolbox's, and their memory", run: bench.RunPortable},
		{name: "bench portable-child", hidden: true, run: bench.RunPortableChild},
		{name: "bench serve", summary: "measure walletsync's client over the paged wire against a local copy, and a toolbox wallet's backup to walletsync serve against the toolbox's own StorageServer", run: bench.RunServe},
		{name: "bench load", summary: "load walletsync serve with many clients pushing at once: request latency, errors, and every client's data checked", run: bench.RunLoad},
	}
}

// Main runs the command line on os.Args[1:] until it ends or the process is interrupted
// (SIGINT, SIGTERM: the command stops at a safe point), and returns the exit code: 0 on
// success, 2 for usage errors, 130 when cancelled, 1 for failures.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// run dispatches args to the longest matching command and returns the exit code: 0 on
// success, 2 for usage errors, 1 for failures.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return 0
	}
	var match *subcommand
	var rest []string
	for i := range cmds {
		words := strings.Fields(cmds[i].name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmds[i].name &&
			(match == nil || len(words) > len(strings.Fields(match.name))) {
			match, rest = &cmds[i], args[len(words):]
		}
	}
	if match == nil {
		fmt.Fprintf(stderr, "walletsync: unknown command %q\n\n", strings.Join(args, " "))
		usage(stderr, cmds)
		return 2
	}
	err := match.run(ctx, rest, stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, command.ErrUsage):
		fmt.Fprintf(stderr, "walletsync %s: %v\n", match.name, err)
		return 2
	case errors.Is(err, command.ErrCancelled):
		fmt.Fprintf(stderr, "walletsync %s: cancelled\n", match.name)
		return 130
	}
	fmt.Fprintf(stderr, "walletsync %s: %v\n", match.name, err)
	if hint := agent.HintOf(err); hint != "" {
		fmt.Fprintf(stderr, "  %s\n", hint)
	}
	return 1
}

func usage(w io.Writer, cmds []subcommand) {
	fmt.Fprintln(w, "walletsync keeps a BSV wallet's local store safe.")
	fmt.Fprintln(w, "\nUsage: walletsync <command> [flags]   (walletsync <command> --help for details)")
	fmt.Fprintln(w, "\nCommands:")
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		if !c.hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
		}
	}
}
