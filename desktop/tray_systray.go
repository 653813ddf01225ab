//go:build linux || freebsd || openbsd || netbsd || windows || (darwin && cgo)

package desktop

import (
	"context"
	"runtime"
	"sync"

	"fyne.io/systray"

	"walletsync/build"
)

// trayIcon returns the icon of kind k.
func trayIcon(k trayIconKind) []byte {
	name := "tray/" + string(k)
	ext := ".png"
	if runtime.GOOS == "windows" {
		ext = ".ico"
	}
	b, err := build.TrayIcons.ReadFile(name + ext)
	if err != nil {
		panic(err) // embedded at build time; a missing file is a build error
	}
	return b
}

// RunTrayIcon shows t in the system tray and runs the tray's own event loop until Quit or
// ctx ends. It is `walletsync tray`'s loop; the desktop build uses StartTrayIcon beside
// the window's loop instead. Without a tray host it returns an error matching ErrNoTray.
func RunTrayIcon(ctx context.Context, t *Tray) error {
	if err := checkTrayHost(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		systray.Quit()
	}()
	systray.Run(func() { drawTray(ctx, t) }, cancel)
	return nil
}

// StartTrayIcon shows t in the system tray beside another toolkit's event loop (the
// window's) and returns the function that removes it. Without a tray host it returns an
// error matching ErrNoTray and shows nothing.
func StartTrayIcon(ctx context.Context, t *Tray) (stop func(), err error) {
	if err := checkTrayHost(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	start, end := systray.RunWithExternalLoop(func() { drawTray(ctx, t) }, cancel)
	start()
	return func() { cancel(); end() }, nil
}

// drawTray builds the menu (the health sentence, then the actions) and keeps it current
// until ctx ends: the icon, tooltip, sentence and entries follow t.watch, and a click runs
// the entry's action as the menu showed it.
func drawTray(ctx context.Context, t *Tray) {
	systray.SetIcon(trayIcon(iconOK))
	systray.SetTitle("walletsync")
	systray.SetTooltip("walletsync")
	health := systray.AddMenuItem("walletsync", "")
	health.Disable()
	systray.AddSeparator()
	var (
		mu    sync.Mutex // guards shown, read by the click handlers
		shown trayState
	)
	items := make(map[trayAction]*systray.MenuItem, len(trayActions))
	for _, a := range trayActions {
		if a == trayQuit {
			systray.AddSeparator()
		}
		items[a] = systray.AddMenuItem(shown.label(a), "")
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-items[a].ClickedCh:
				}
				mu.Lock()
				s := shown
				mu.Unlock()
				if err := t.do(ctx, a, s); err != nil {
					t.Log.Warn("tray action failed", "action", s.label(a), "err", err)
				}
			}
		}()
	}
	go t.watch(ctx, func(s trayState) {
		mu.Lock()
		shown = s
		mu.Unlock()
		systray.SetIcon(trayIcon(s.icon()))
		systray.SetTooltip(s.Health)
		health.SetTitle(s.Health)
		for a, item := range items {
			item.SetTitle(s.label(a))
			if s.enabled(a) {
				item.Enable()
			} else {
				item.Disable()
			}
		}
	})
}
