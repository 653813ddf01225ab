//go:build !desktop && !bindings

package main

import "walletsync/cli"

// openWindow is, in a build without the window, the command line without arguments: its
// usage. The desktop build's is in main_desktop.go.
func openWindow() int { return cli.Main() }
