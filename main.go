// Command walletsync keeps a BSV wallet's local SQLite store safe: it creates and inspects
// wallet files in the exact @bsv/wallet-toolbox schema, and measures its own speed.
//
// Usage: walletsync <command> [flags]; `walletsync help` lists the commands and
// `walletsync <command> --help` explains one.
package main

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
)

// command is one subcommand. Its run parses its own flags from args, so that every command
// has --help, and writes its report to out.
type command struct {
	name    string // as typed, e.g. "wallet create"
	summary string
	hidden  bool // internal helpers, not listed
	run     func(ctx context.Context, args []string, out io.Writer) error
}

// commands returns every subcommand. It is a function, not a package variable, so that no
// mutable state is global.
func commands() []command {
	return []command{
		{name: "demo", summary: "the main job on a demo wallet: agent, dashboard, a sync and an encrypted backup", run: runDemo},
		{name: "wallet create", summary: "create a new wallet file in the wallet-toolbox schema", run: runWalletCreate},
		{name: "wallet seed", summary: "fill a wallet with a deterministic fixture (small, toolbox, large)", run: runWalletSeed},
		{name: "wallet info", summary: "show a wallet's identity, chain, counts, size and journal", run: runWalletInfo},
		{name: "wallet check", summary: "run SQLite's integrity and foreign key checks on a wallet", run: runWalletCheck},
		{name: "bundle create", summary: "snapshot the whole wallet file (every identity) into a verifiable, compressed bundle folder", run: runBundleCreate},
		{name: "bundle verify", summary: "check a bundle's digests, SQLite integrity and counts without touching any wallet", run: runBundleVerify},
		{name: "bundle restore", summary: "replace a wallet file with a bundle, staged and crash-safe", run: runBundleRestore},
		{name: "agent", summary: "run the background agent with its dashboard (until Ctrl-C)", run: runAgent},
		{name: "service", summary: "install, uninstall, start, stop or show the platform service", run: runService},
		{name: "status", summary: "show the running agent's health and destinations", run: runStatus},
		{name: "tasks", summary: "list the running agent's tasks", run: runTasks},
		{name: "run", summary: "bring a destination up to date now", run: runRun},
		{name: "cancel", summary: "cancel a task at its next safe point", run: runCancel},
		{name: "pause", summary: "hold a destination's (or all) scheduled runs back", run: runPause},
		{name: "resume", summary: "let a destination's (or all) scheduled runs go again", run: runResume},
		{name: "tray", summary: "show the agent's health in the system tray, with back up now, pause and open dashboard", run: runTray},
		{name: "sync", summary: "copy a wallet to a SQLite backup wallet, page by page, resumable", run: runSync},
		{name: "export", summary: "write a wallet to an encrypted BRC-39 backup file (or, asked for, plaintext BRC-38)", run: runExport},
		{name: "verify", summary: "check a backup file's password, tag and document without importing it", run: runVerify},
		{name: "import", summary: "preview or import a backup file into a wallet (merge or restore), resumable", run: runImport},
		{name: "bench store", summary: "measure keyset paging through a snapshot view against a plain scan", run: runBenchStore},
		{name: "bench store-child", hidden: true, run: runBenchStoreChild},
		{name: "bench scheduler", summary: "measure foreground latency while a background copy (backup or restore) runs: idle, exclusive, paged", run: runBenchScheduler},
		{name: "bench sync", summary: "measure a full, an unchanged and an incremental sync against the raw SQLite floor", run: runBenchSync},
		{name: "bench sync-child", hidden: true, run: runBenchSyncChild},
		{name: "bench bundle", summary: "measure foreground latency while a whole-store bundle is made, and the bundle against a plain file copy", run: runBenchBundle},
		{name: "bench portable", summary: "measure BRC-39 export and restore (Argon2id apart) against @bsv/wallet-toolbox's, and their memory", run: runBenchPortable},
		{name: "bench portable-child", hidden: true, run: runBenchPortableChild},
	}
}

// cliMain runs the command line on os.Args and returns the exit code. Both mains call it:
// main_cli.go's always, main_desktop.go's when the window binary is given arguments.
func cliMain() int {
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
	var match *command
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
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "walletsync %s: %v\n", match.name, err)
		return 2
	case errors.Is(err, errCancelled):
		fmt.Fprintf(stderr, "walletsync %s: cancelled\n", match.name)
		return 130
	}
	fmt.Fprintf(stderr, "walletsync %s: %v\n", match.name, err)
	return 1
}

func usage(w io.Writer, cmds []command) {
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

// errUsage marks errors in how a command was called (exit code 2).
var errUsage = errors.New("usage")

// errCancelled marks a command stopped by the person (Ctrl-C) at a safe point (exit code
// 130, the shell's convention for SIGINT).
var errCancelled = errors.New("cancelled")

// newFlags returns a flag set for a command that prints its usage to out on --help and
// returns errors instead of exiting.
func newFlags(name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("walletsync "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: walletsync %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, refusing stray positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// parseFlags parses args for a command that takes positional arguments too: a bad flag is
// a usage error (exit code 2), and --help is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// required refuses an empty flag value.
func required(name, value string) error {
	if value == "" {
		return fmt.Errorf("%w: --%s is required", errUsage, name)
	}
	return nil
}
