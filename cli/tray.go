package cli

import (
	"context"
	"io"
	"log/slog"
	"os"

	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/desktop"
)

// runTray shows the running agent's health in the system tray, with Back up now, Pause for
// 1 hour, Open dashboard (in the browser, logged in with a one-time URL) and Quit, and
// shows desktop notifications for failed backups and finished restores. It is for the
// service case, where no window runs: it never starts an agent, and while none answers
// the tray says so and keeps trying.
func runTray(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("tray", "[--data-dir D]", out)
	// Only --data-dir of the agent's flags: the tray reads no config.
	af := agentFlags{dataDir: fs.String("data-dir", "", "the running agent's data folder (default: the platform's data folder)/walletsync")}
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	dir, err := af.dir()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	endpoint := func(context.Context) (api.Endpoint, error) { return dir.Endpoint() }
	notifier := desktop.SystemNotifier()
	go desktop.NotifyEvents(ctx, endpoint, "", notifier, log)
	t := &desktop.Tray{Endpoint: endpoint, Open: desktop.BrowserDashboard(endpoint, desktop.OpenURL), Quit: quit, Notifier: notifier, Log: log}
	if err := desktop.RunTrayIcon(ctx, t); err != nil {
		return api.WithHint(err, "the tray needs a desktop session with a system tray; "+
			"\"walletsync status\" shows the same health on the command line")
	}
	return nil
}
