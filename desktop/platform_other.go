//go:build !(linux || freebsd || openbsd || netbsd || darwin || windows)

package desktop

import (
	"context"
	"fmt"
	"runtime"
)

// SystemNotifier returns a notifier that refuses: walletsync knows no notification
// service on this system.
func SystemNotifier() Notifier { return noNotifier{} }

type noNotifier struct{}

// Notify fails with ErrNoNotifications.
func (noNotifier) Notify(context.Context, Notification) error {
	return fmt.Errorf("%w on %s", ErrNoNotifications, runtime.GOOS)
}

// checkTrayHost fails with ErrNoTray: walletsync has no tray icon for this system.
func checkTrayHost() error { return fmt.Errorf("%w on %s", ErrNoTray, runtime.GOOS) }
