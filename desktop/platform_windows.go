package desktop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// SystemNotifier returns Windows toast notifications, shown through PowerShell's
// WinRT bridge so that walletsync needs no registered AppUserModelID of its own.
func SystemNotifier() Notifier { return toastNotifier{} }

type toastNotifier struct{}

// toastScript shows a two-line toast; the text comes through the environment, so it needs
// no quoting. The AppUserModelID is PowerShell's own, which Windows accepts for toasts.
const toastScript = `$ErrorActionPreference = 'Stop'
[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] > $null
$x = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent([Windows.UI.Notifications.ToastTemplateType]::ToastText02)
$t = $x.GetElementsByTagName('text')
$t.Item(0).AppendChild($x.CreateTextNode($env:WALLETSYNC_TOAST_TITLE)) > $null
$t.Item(1).AppendChild($x.CreateTextNode($env:WALLETSYNC_TOAST_BODY)) > $null
$app = '{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\WindowsPowerShell\v1.0\powershell.exe'
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier($app).Show([Windows.UI.Notifications.ToastNotification]::new($x))`

// Notify shows n as a toast.
func (toastNotifier) Notify(ctx context.Context, n Notification) error {
	cmd := exec.CommandContext(ctx, "powershell", "-NoProfile", "-NonInteractive", "-Command", toastScript)
	cmd.Env = append(os.Environ(), "WALLETSYNC_TOAST_TITLE="+n.Title, "WALLETSYNC_TOAST_BODY="+n.Body)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("notify: powershell: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// checkTrayHost reports whether a tray icon can be shown: the notification area is always
// there.
func checkTrayHost() error { return nil }
