//go:build !(linux || freebsd || openbsd || netbsd || windows || (darwin && cgo))

package main

import (
	"context"
	"fmt"
	"runtime"
)

// runTrayIcon fails with ErrNoTray: this build has no tray library (on macOS the tray
// needs cgo).
func runTrayIcon(context.Context, *tray) error {
	return fmt.Errorf("%w in this build for %s (the macOS tray needs cgo)", ErrNoTray, runtime.GOOS)
}

// startTrayIcon fails with ErrNoTray, as runTrayIcon does.
func startTrayIcon(ctx context.Context, t *tray) (func(), error) { return nil, runTrayIcon(ctx, t) }
