//go:build !(linux || freebsd || openbsd || netbsd || windows || (darwin && cgo))

package desktop

import (
	"context"
	"fmt"
	"runtime"
)

// RunTrayIcon fails with ErrNoTray: this build has no tray library (on macOS the tray
// needs cgo).
func RunTrayIcon(context.Context, *Tray) error {
	return fmt.Errorf("%w in this build for %s (the macOS tray needs cgo)", ErrNoTray, runtime.GOOS)
}

// StartTrayIcon fails with ErrNoTray, as RunTrayIcon does.
func StartTrayIcon(ctx context.Context, t *Tray) (func(), error) { return nil, RunTrayIcon(ctx, t) }
