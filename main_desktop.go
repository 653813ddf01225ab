//go:build desktop || bindings

package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"

	"walletsync/agent"
	"walletsync/cli"
	"walletsync/desktop"
	"walletsync/frontend"
)

// appIcon is the window's icon on Linux (macOS and Windows take theirs from the bundle and
// the executable's resources, which `wails build` makes from the same file).
//
//go:embed build/appicon.png
var appIcon []byte

// pageTextEnv names a file that the window keeps updated, every pageTextEvery, with the
// visible text of its page. It is how the smoke test (desktop_smoke_test.go) sees that the
// dashboard rendered the agent's overview, and how a person reporting "the window is
// blank" can show what the page holds. Unset, nothing of it runs.
const pageTextEnv = "WALLETSYNC_PAGE_TEXT"

const pageTextEvery = 500 * time.Millisecond

// pageScriptEnv holds JavaScript that the window runs in its page once the page has
// loaded: how the smoke test opens a page and puts focus on a button, as a person would.
// Unset, nothing runs.
const pageScriptEnv = "WALLETSYNC_PAGE_SCRIPT"

// openWindow runs the window until it closes and returns the exit code. It is main's
// without arguments; with arguments the same binary is the command line, so that one
// installed binary also serves `walletsync agent`, `walletsync tray` and the rest.
func openWindow() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	app, err := NewApp(AppOptions{
		Agent:    agent.Options{Version: cli.Version, Logger: log, Dashboard: frontend.Handler()},
		Window:   wailsWindow{},
		Notifier: desktop.SystemNotifier(),
		Logger:   log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "walletsync:", err)
		return 1
	}
	w := app.initialWindow()
	start := options.Normal
	if w.Maximised {
		start = options.Maximised
	}
	// stopTray carries the tray's stop function from startup to shutdown, which Wails runs
	// on different goroutines.
	stopTray := make(chan func(), 1)
	probeCtx, stopProbe := context.WithCancel(context.Background())
	err = wails.Run(&options.App{
		Title:            "walletsync",
		Width:            w.Width,
		Height:           w.Height,
		MinWidth:         desktop.WindowMinWidth,
		MinHeight:        desktop.WindowMinHeight,
		WindowStartState: start,
		AssetServer:      &assetserver.Options{Assets: frontend.Assets(), Handler: app.apiHandler()},
		OnStartup: func(ctx context.Context) {
			app.startup(ctx)
			stopTray <- showTray(ctx, app, log)
		},
		OnDomReady: func(ctx context.Context) {
			if path := os.Getenv(pageTextEnv); path != "" {
				go writePageText(probeCtx, ctx, path, log)
			}
			if js := os.Getenv(pageScriptEnv); js != "" {
				runtime.WindowExecJS(ctx, js)
			}
		},
		OnBeforeClose: app.beforeClose,
		OnShutdown: func(ctx context.Context) {
			stopProbe()
			select {
			case stop := <-stopTray:
				if stop != nil {
					stop()
				}
			default: // startup has not finished: there is no tray yet
			}
			app.shutdown(ctx)
		},
		// A second launch raises this window instead of opening another beside it (which
		// would lean on this window's in-process agent and lose it when this one closed).
		SingleInstanceLock: &options.SingleInstanceLock{UniqueId: "org.walletsync.window",
			OnSecondInstanceLaunch: func(options.SecondInstanceData) { app.raise() }},
		Bind:  []any{app},
		Linux: &linux.Options{Icon: appIcon, ProgramName: "walletsync"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "walletsync:", err)
		return 1
	}
	return 0
}

// showTray puts the tray icon up beside the window: Open dashboard shows the window, Quit
// closes it. It returns the function that takes the icon down, or nil when the system has
// no tray (the window works without one).
func showTray(ctx context.Context, app *App, log *slog.Logger) func() {
	t := &desktop.Tray{
		Endpoint: app.endpoint,
		Open:     func(context.Context) error { app.raise(); return nil },
		Quit:     func() { runtime.Quit(ctx) },
		Notifier: desktop.SystemNotifier(),
		Log:      log,
	}
	stop, err := desktop.StartTrayIcon(ctx, t)
	if err != nil {
		if !errors.Is(err, desktop.ErrNoTray) {
			log.Warn("desktop.Tray icon", "err", err)
		} else {
			log.Info("no desktop.Tray icon", "err", err)
		}
		return nil
	}
	return stop
}

// writePageText writes the page's visible text to path every pageTextEvery until probe
// ends. The page hands its text back through a Wails event, since WindowExecJS returns
// nothing; wctx is the window's context. The text is read two animation frames later, so
// that what it says has been painted, not only put in the DOM: WebKit paints well after
// the DOM changes on a busy machine.
func writePageText(probe, wctx context.Context, path string, log *slog.Logger) {
	const event = "walletsync:page-text"
	runtime.EventsOn(wctx, event, func(data ...any) {
		text, _ := data[0].(string)
		tmp := path + ".tmp"
		err := os.WriteFile(tmp, []byte(text), 0o600)
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			log.Warn("page text not written", "path", filepath.Base(path), "err", err)
		}
	})
	tick := time.NewTicker(pageTextEvery)
	defer tick.Stop()
	for {
		runtime.WindowExecJS(wctx, `requestAnimationFrame(() => requestAnimationFrame(() => `+
			`window.runtime.EventsEmit("`+event+`", document.body ? document.body.innerText : "")))`)
		select {
		case <-probe.Done():
			return
		case <-tick.C:
		}
	}
}

// wailsWindow is the App's Window, through the Wails runtime.
type wailsWindow struct{}

var _ Window = wailsWindow{}

// OpenFile shows the platform's open dialog.
func (wailsWindow) OpenFile(ctx context.Context, d FileDialog) (string, error) {
	return runtime.OpenFileDialog(ctx, runtime.OpenDialogOptions{Title: d.Title, DefaultDirectory: d.Dir, Filters: wailsFilters(d.Filters)})
}

// SaveFile shows the platform's save dialog.
func (wailsWindow) SaveFile(ctx context.Context, d FileDialog) (string, error) {
	return runtime.SaveFileDialog(ctx, runtime.SaveDialogOptions{Title: d.Title, DefaultDirectory: d.Dir, DefaultFilename: d.DefaultName,
		Filters: wailsFilters(d.Filters), CanCreateDirectories: true})
}

// ChooseFolder shows the platform's folder dialog.
func (wailsWindow) ChooseFolder(ctx context.Context, title string) (string, error) {
	return runtime.OpenDirectoryDialog(ctx, runtime.OpenDialogOptions{Title: title, CanCreateDirectories: true})
}

// Geometry reads the window's size, position and maximised state.
func (wailsWindow) Geometry(ctx context.Context) desktop.WindowState {
	w, h := runtime.WindowGetSize(ctx)
	x, y := runtime.WindowGetPosition(ctx)
	return desktop.WindowState{Width: w, Height: h, X: x, Y: y, Maximised: runtime.WindowIsMaximised(ctx)}
}

// Place moves the window to s's position.
func (wailsWindow) Place(ctx context.Context, s desktop.WindowState) {
	runtime.WindowSetPosition(ctx, s.X, s.Y)
}

// Raise shows the window, un-minimised.
func (wailsWindow) Raise(ctx context.Context) {
	runtime.WindowUnminimise(ctx)
	runtime.WindowShow(ctx)
}

func wailsFilters(fs []FileFilter) []runtime.FileFilter {
	out := make([]runtime.FileFilter, len(fs))
	for i, f := range fs {
		out[i] = runtime.FileFilter{DisplayName: f.Name, Pattern: f.Pattern}
	}
	return out
}
