// Package cli is walletsync's command line: it parses each command's flags, runs the
// command through the engine packages (or, for agent, status, run and the rest, through
// the running agent's API), and prints the result as text or JSON. The benchmarks are
// not here: they are the lab's own binary (cmd/walletsync-bench), never shipped.
//
// Usage: walletsync <command> [flags]; `walletsync help` lists the commands and
// `walletsync <command> --help` explains one.
package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"walletsync/agent/api"
	"walletsync/cli/command"
)

// commands returns every subcommand. It is a function, not a package variable, so that no
// mutable state is global.
func commands() []command.Command {
	return []command.Command{
		{Name: "demo", Summary: "the main job on a demo wallet: agent, dashboard, a sync and an encrypted backup", Run: runDemo},
		{Name: "wallet create", Summary: "create a new wallet file in the wallet-toolbox schema", Run: runWalletCreate},
		{Name: "wallet seed", Summary: "fill a wallet with a deterministic fixture (small, toolbox, large)", Run: runWalletSeed},
		{Name: "wallet info", Summary: "show a wallet's identity, chain, counts, size and journal", Run: runWalletInfo},
		{Name: "wallet protect", Summary: "make the running agent protect a wallet file (checked to be a toolbox wallet first)", Run: runWalletProtect},
		{Name: "wallet check", Summary: "run SQLite's integrity and foreign key checks on a wallet", Run: runWalletCheck},
		{Name: "key create", Summary: "create an identity key file (mode 0600) for remote storage and print its public key", Run: runKeyCreate},
		{Name: "key show", Summary: "print the public key of an identity key file", Run: runKeyShow},
		{Name: "serve", Summary: "serve wallet storage to toolbox wallets (JSON-RPC over BRC-104) from one SQLite store or a PostgreSQL database, until Ctrl-C", Run: runServe},
		{Name: "agent", Summary: "run the background agent with its dashboard (until Ctrl-C)", Run: runAgent},
		{Name: "service", Summary: "install, uninstall, start, stop or show the platform service", Run: runService},
		{Name: "open", Summary: "open the dashboard in the browser with a fresh one-time sign-in link (and print it)", Run: runOpen},
		{Name: "status", Summary: "show the running agent's health and destinations", Run: runStatus},
		{Name: "tasks", Summary: "list the running agent's tasks", Run: runTasks},
		{Name: "run", Summary: "bring a destination up to date now", Run: runRun},
		{Name: "cancel", Summary: "cancel a task at its next safe point", Run: runCancel},
		{Name: "pause", Summary: "hold a destination's (or all) scheduled runs back", Run: runPause},
		{Name: "resume", Summary: "let a destination's (or all) scheduled runs go again", Run: runResume},
		{Name: "tray", Summary: "show the agent's health in the system tray, with back up now, pause and open dashboard", Run: runTray},
		{Name: "sync", Summary: "copy a wallet to a SQLite backup wallet page by page, or push it to or pull it from a storage server; resumable", Run: runSync},
		{Name: "export", Summary: "write a wallet to an encrypted BRC-39 backup file (or, asked for, plaintext BRC-38)", Run: runExport},
		{Name: "verify", Summary: "check a backup file's password, tag and document without importing it", Run: runVerify},
		{Name: "import", Summary: "preview or import a backup file into a wallet (merge or restore), resumable", Run: runImport},
		{Name: "bundle create", Summary: "snapshot the whole wallet file (every identity) into a verifiable, compressed bundle folder", Run: runBundleCreate},
		{Name: "bundle verify", Summary: "check a bundle's digests, SQLite integrity and counts without touching any wallet", Run: runBundleVerify},
		{Name: "bundle restore", Summary: "replace a wallet file with a bundle, staged and crash-safe", Run: runBundleRestore},
		{Name: "version", Summary: "print walletsync's version, the Go version it was built with, and its platform", Run: runVersion},
	}
}

// Main runs the command line on os.Args[1:] until it ends or the process is interrupted
// (SIGINT, SIGTERM: the command stops at a safe point), and returns the exit code: 0 on
// success, 2 for usage errors, 130 when cancelled, 1 for failures.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Run dispatches args to the longest matching command and returns the exit code, as Main
// does; the lab's binary calls it to run `walletsync serve` as a child of its own.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := command.Program{
		Name:     "walletsync",
		Summary:  "walletsync keeps a BSV wallet's local store safe.",
		Commands: commands(),
		Hint:     api.HintOf,
	}
	return p.Dispatch(ctx, args, stdout, stderr)
}
