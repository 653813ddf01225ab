// Command walletsync keeps a BSV wallet's local SQLite store safe: a background agent
// syncs it, page by page, to backup wallets and writes encrypted BRC-39 backup files, with
// a dashboard in the browser or, built with the desktop tag, in a window of its own.
//
// This package only wires: with arguments it hands them to the command line
// (cli); without, the desktop build opens the window (main_desktop.go, with the
// Wails binding in app.go) and the plain build prints the command line's usage.
//
// Usage: walletsync <command> [flags]; `walletsync help` lists the commands and
// `walletsync <command> --help` explains one.
package main

import (
	"os"

	"walletsync/cli"
)

func main() {
	if len(os.Args) > 1 {
		os.Exit(cli.Main())
	}
	os.Exit(openWindow())
}
