//go:build linux || freebsd || openbsd || netbsd

package desktop

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"
)

// SystemNotifier returns the freedesktop.org notification service on the session bus,
// which GNOME, KDE, XFCE and most other desktops provide.
func SystemNotifier() Notifier { return dbusNotifier{} }

type dbusNotifier struct{}

// Notify sends n to org.freedesktop.Notifications; it fails without a session bus or a
// notification service.
func (dbusNotifier) Notify(ctx context.Context, n Notification) error {
	conn, err := dbus.SessionBus()
	if err != nil {
		return fmt.Errorf("notify: %w: %v", ErrNoNotifications, err)
	}
	obj := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	// Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout);
	// -1 lets the desktop choose how long it shows.
	call := obj.CallWithContext(ctx, "org.freedesktop.Notifications.Notify", 0,
		"walletsync", uint32(0), "walletsync", n.Title, n.Body, []string{}, map[string]dbus.Variant{}, int32(-1))
	if call.Err != nil {
		return fmt.Errorf("notify: %w", call.Err)
	}
	return nil
}

// checkTrayHost reports whether a tray icon can be shown: on these systems the icon is a
// StatusNotifierItem on the D-Bus session bus, so without one there is no tray (a bare X
// server, a console login).
func checkTrayHost() error {
	if _, err := dbus.SessionBus(); err != nil {
		return fmt.Errorf("%w: no D-Bus session bus: %v", ErrNoTray, err)
	}
	return nil
}
