// Package desktop is walletsync's desktop shell, what a browser cannot do for the
// dashboard: finding or starting the agent of a data folder (AgentLink), the proxy that
// carries the window page's API requests to it (APIProxy), the tray icon and its menu
// (Tray), desktop notifications of failed backups and finished restores (Notifier, fed
// from the agent's event stream), and the window's remembered size and position
// (WindowState). The window itself, Wails and its binding, is the root package's
// (main_desktop.go, app.go); `walletsync tray` (cli) runs the Tray without one.
// Nothing here imports Wails.
package desktop
