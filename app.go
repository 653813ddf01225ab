package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/desktop"
	"walletsync/wallet"
)

// App is the desktop window's Go side; Wails binds its exported methods to the page as
// window.go.main.App. It holds no business logic. It connects the window to the agent (a
// running one, such as the service, when it answers; otherwise an agent of its own inside
// the window's process), carries the page's API requests to it (see desktop.APIProxy), and adds
// what a browser cannot do: native file dialogs, desktop notifications for failed backups
// and finished restores, and the window's remembered size and position.
//
// The window toolkit drives it: startup when the window is created, beforeClose when it is
// about to close, shutdown at the end; main_desktop.go wires these to Wails. Nothing here
// imports Wails, so the App is tested with a fake Window.
type App struct {
	opts   AppOptions
	log    *slog.Logger
	window desktop.WindowState // as loaded at NewApp: the size the window opens at
	proxy  *desktop.APIProxy

	ready chan struct{}      // closed when startup has connected to the agent, or failed to
	ctx   context.Context    // the toolkit's context; set before ready closes
	link  *desktop.AgentLink // set before ready closes; nil when connecting failed
	err   error              // why connecting failed; set before ready closes

	stop       context.CancelFunc // ends the background work (notifications)
	background sync.WaitGroup
	closing    sync.Once
}

// AppOptions configure an App.
type AppOptions struct {
	// Agent starts the in-process agent when no running agent answers. Its Dir (default:
	// the platform's data folder) is also where the App finds a running agent and keeps
	// the window state; ConfigPath defaults to the platform's config file.
	Agent agent.Options
	// Window opens the native dialogs and reads and places the window. Required.
	Window Window
	// Notifier shows desktop notifications; nil shows none.
	Notifier desktop.Notifier
	// Logger receives what goes wrong out of sight (discarded when nil).
	Logger *slog.Logger
}

// Window is what the window toolkit does for the App. main_desktop.go implements it with
// the Wails runtime; ctx is always the context the toolkit gave startup. A dialog the
// person cancels returns "" and no error.
type Window interface {
	OpenFile(ctx context.Context, d FileDialog) (string, error)
	SaveFile(ctx context.Context, d FileDialog) (string, error)
	ChooseFolder(ctx context.Context, title string) (string, error)
	// Geometry returns the window's current size, position and maximised state.
	Geometry(ctx context.Context) desktop.WindowState
	// Place moves the window to s's position. Its size and maximised state are set when
	// the window is created (see App.initialWindow).
	Place(ctx context.Context, s desktop.WindowState)
	// Raise shows the window, un-minimised, in front.
	Raise(ctx context.Context)
}

// FileDialog describes a native open or save dialog.
type FileDialog struct {
	Title       string
	Dir         string // the folder it opens in; "" for the platform's choice
	DefaultName string // the suggested file name of a save dialog
	Filters     []FileFilter
}

// FileFilter is one entry of a dialog's file type list, such as {"Backup files
// (*.brc39)", "*.brc39"}.
type FileFilter struct {
	Name    string
	Pattern string // semicolon-separated globs
}

// backupExt is the extension of walletsync's BRC-39 backup files.
const backupExt = ".brc39"

// backupFilters are the file types of the backup file dialogs.
var backupFilters = []FileFilter{
	{Name: "walletsync backups (*" + backupExt + ")", Pattern: "*" + backupExt},
	{Name: "All files", Pattern: "*"},
}

// walletFilters are the file types of the wallet file dialog: the names wallet apps give
// their toolbox wallets (BSV Desktop's wallet-<identity>-<chain>.sqlite, wallet.db).
var walletFilters = []FileFilter{
	{Name: "Wallet files (*.sqlite, *.db)", Pattern: "*.sqlite;*.db"},
	{Name: "All files", Pattern: "*"},
}

// NewApp returns an App that has not connected yet; the toolkit's startup connects it.
// It reads the remembered window state (a damaged file is logged and ignored).
func NewApp(opts AppOptions) (*App, error) {
	if opts.Window == nil {
		return nil, fmt.Errorf("new app: a Window is required: %w", wallet.ErrInvalidArgument)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Agent.Dir == "" {
		dir, err := agent.DefaultDataDir()
		if err != nil {
			return nil, err
		}
		opts.Agent.Dir = dir
	}
	a := &App{opts: opts, log: opts.Logger, ready: make(chan struct{})}
	var err error
	if a.window, err = desktop.LoadWindowState(opts.Agent.Dir); err != nil {
		a.log.Warn("window state ignored", "err", err)
	}
	a.proxy = &desktop.APIProxy{Endpoint: a.endpoint, Transport: http.DefaultTransport, Log: a.log}
	return a, nil
}

// initialWindow is the window's size and state to create it with.
func (a *App) initialWindow() desktop.WindowState { return a.window }

// apiHandler is the handler of the window's asset server: the page's API requests go to
// the agent through it.
func (a *App) apiHandler() http.Handler { return a.proxy }

// startup connects to the agent (see desktop.ConnectAgent), puts the window where it was left, and
// starts watching the agent's events for notifications. A failed connection is kept: the
// page's API requests then get it as a 502 error, which the dashboard shows.
func (a *App) startup(ctx context.Context) {
	a.ctx = ctx
	defer close(a.ready)
	if a.window.Positioned {
		a.opts.Window.Place(ctx, a.window)
	}
	a.link, a.err = desktop.ConnectAgent(ctx, a.opts.Agent)
	if a.err != nil {
		a.log.Error("cannot reach or start the agent", "err", a.err)
		return
	}
	a.log.Info("connected to the agent", "inProcess", a.link.InProcess(), "data", string(a.opts.Agent.Dir))
	if a.opts.Notifier == nil {
		return
	}
	// The cursor is taken now, not in the goroutine, so that every event after startup is
	// announced and none before it.
	cursor, err := desktop.EventCursor(ctx, a.link.Endpoint)
	if err != nil {
		a.log.Warn("agent events: starting from the next answer", "err", err)
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	a.background.Go(func() { desktop.NotifyEvents(bg, a.link.Endpoint, cursor, a.opts.Notifier, a.log) })
}

// beforeClose remembers the window's size and position, and lets the window close (it
// returns false: Wails' "prevent close"). A maximised window keeps the size it had before
// it was maximised, so that un-maximising next time gives a normal window.
func (a *App) beforeClose(ctx context.Context) bool {
	g := a.opts.Window.Geometry(ctx)
	if g.Maximised {
		g.Width, g.Height, g.X, g.Y, g.Positioned = a.window.Width, a.window.Height, a.window.X, a.window.Y, a.window.Positioned
	} else {
		g.Positioned = true
	}
	if err := desktop.SaveWindowState(a.opts.Agent.Dir, g); err != nil {
		a.log.Warn("window state not saved", "err", err)
	}
	return false
}

// shutdownWait bounds how long closing the window waits for the in-process agent's running
// tasks to reach a safe point; what they acknowledged is kept either way.
const shutdownWait = 30 * time.Second

// shutdown stops the background work and the in-process agent, if the App runs one. Only
// the first call does anything.
func (a *App) shutdown(context.Context) {
	<-a.ready
	a.closing.Do(func() {
		if a.stop != nil {
			a.stop()
		}
		a.background.Wait()
		if a.link == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
		defer cancel()
		if err := a.link.Close(ctx); err != nil {
			a.log.Error("stop the agent", "err", err)
		}
	})
}

// raise brings the window to the front, once startup has run: the tray's Open dashboard,
// and a second launch of the app, which hands over to the first.
func (a *App) raise() {
	<-a.ready
	a.opts.Window.Raise(a.ctx)
}

// endpoint waits until startup has connected, then returns the agent's current address
// and token; when connecting failed it returns why.
func (a *App) endpoint(ctx context.Context) (api.Endpoint, error) {
	if err := a.wait(ctx); err != nil {
		return api.Endpoint{}, err
	}
	return a.link.Endpoint(ctx)
}

// wait waits for startup to finish and returns its connection error.
func (a *App) wait(ctx context.Context) error {
	select {
	case <-a.ready:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AgentInfo tells the page which agent the window talks to.
type AgentInfo struct {
	// InProcess is true when the agent runs inside the window and stops when the window
	// closes (no service was running); false when the window talks to a running agent,
	// such as the service, which keeps backing up after the window closes.
	InProcess bool `json:"inProcess"`
	// DataDir is the agent's data folder.
	DataDir string `json:"dataDir"`
}

// Agent returns which agent the window talks to, or the error that kept the window from
// reaching or starting one.
func (a *App) Agent() (AgentInfo, error) {
	if err := a.wait(context.Background()); err != nil {
		return AgentInfo{}, err
	}
	return AgentInfo{InProcess: a.link.InProcess(), DataDir: string(a.opts.Agent.Dir)}, nil
}

// OpenBackupFile asks the person, with the platform's open dialog, for a backup file to
// restore or inspect, and returns its path; "" when they cancel. The Restore page's
// Browse button calls it (frontend/web/api.js, hooks.chooseOpenPath).
func (a *App) OpenBackupFile() (string, error) {
	<-a.ready
	return a.opts.Window.OpenFile(a.ctx, FileDialog{Title: "Open a walletsync backup", Filters: backupFilters})
}

// SaveBackupFile asks the person, with the platform's save dialog, where to save a new
// backup file, suggesting suggested: a file name, or a path whose folder the dialog opens
// in when it exists. It returns the chosen path, with the .brc39 extension added when the
// name has none, or "" when they cancel. The Export page's Browse button calls it with
// the path typed so far.
func (a *App) SaveBackupFile(suggested string) (string, error) {
	<-a.ready
	d := FileDialog{Title: "Save the backup as", Filters: backupFilters}
	if suggested != "" {
		d.DefaultName = filepath.Base(suggested)
		// Only an existing folder: the dialogs refuse to open in a missing one.
		if st, err := os.Stat(filepath.Dir(suggested)); err == nil && st.IsDir() && filepath.Dir(suggested) != "." {
			d.Dir = filepath.Dir(suggested)
		}
	}
	path, err := a.opts.Window.SaveFile(a.ctx, d)
	if err != nil || path == "" {
		return "", err
	}
	if filepath.Ext(path) == "" {
		path += backupExt
	}
	return path, nil
}

// OpenWalletFile asks the person, with the platform's open dialog, for the wallet file to
// protect (a toolbox wallet's SQLite file), and returns its path; "" when they cancel.
// The first run's "Choose the wallet" step calls it; the agent checks the file is a
// wallet before it protects it.
func (a *App) OpenWalletFile() (string, error) {
	<-a.ready
	return a.opts.Window.OpenFile(a.ctx, FileDialog{Title: "Choose the wallet to protect", Filters: walletFilters})
}

// ChooseBackupFolder asks the person, with the platform's folder dialog, for a folder to
// keep backup files in, and returns it; "" when they cancel. The destination editor's
// Browse button calls it for a backup folder.
func (a *App) ChooseBackupFolder() (string, error) {
	<-a.ready
	return a.opts.Window.ChooseFolder(a.ctx, "Choose a folder for backup files")
}
