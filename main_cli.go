//go:build !desktop && !bindings

package main

import "os"

// main is the command line. The desktop build's main is in main_desktop.go.
func main() { os.Exit(cliMain()) }
