package desktop

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// SystemNotifier returns the macOS Notification Center, reached through osascript, which
// needs neither cgo nor an app bundle.
func SystemNotifier() Notifier { return osascriptNotifier{} }

type osascriptNotifier struct{}

// Notify shows n in the Notification Center.
func (osascriptNotifier) Notify(ctx context.Context, n Notification) error {
	script := "display notification " + appleScriptString(n.Body) + " with title " + appleScriptString(n.Title)
	if out, err := exec.CommandContext(ctx, "osascript", "-e", script).CombinedOutput(); err != nil {
		return fmt.Errorf("notify: osascript: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// appleScriptString quotes s as an AppleScript string literal.
func appleScriptString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// checkTrayHost reports whether a tray icon can be shown: the menu bar is always there.
func checkTrayHost() error { return nil }
