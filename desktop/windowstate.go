package desktop

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"walletsync/agent"
	"walletsync/internal/safefile"
)

// The window's size: what it opens at the first time, and the least it can shrink to (the
// dashboard's layout holds down to 900x600).
const (
	windowWidth     = 1200
	windowHeight    = 800
	WindowMinWidth  = 900
	WindowMinHeight = 600
	// windowMaxSide bounds a remembered side, so that a damaged file cannot ask for a
	// window no screen holds.
	windowMaxSide = 16384
)

// WindowStateFile names the file in the data folder that holds the window's remembered
// size and position.
const WindowStateFile = "window.json"

// WindowState is the window's size and position, remembered in the data folder between
// runs so that the window reopens where the person left it. Positioned is false until a
// position was saved: the window is then centred by the platform.
type WindowState struct {
	Width      int  `json:"width"`
	Height     int  `json:"height"`
	X          int  `json:"x"`
	Y          int  `json:"y"`
	Positioned bool `json:"positioned"`
	Maximised  bool `json:"maximised"`
}

// DefaultWindowState is the window of a first run: the default size, centred.
func DefaultWindowState() WindowState { return WindowState{Width: windowWidth, Height: windowHeight} }

// LoadWindowState returns the remembered window of dir, or the default window when none
// was saved. A file that cannot be read or decoded yields the default window and the
// error, for the log: the window still opens.
func LoadWindowState(dir agent.DataDir) (WindowState, error) {
	b, err := os.ReadFile(filepath.Join(string(dir), WindowStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultWindowState(), nil
	}
	if err != nil {
		return DefaultWindowState(), fmt.Errorf("read window state: %w", err)
	}
	var s WindowState
	if err := json.Unmarshal(b, &s); err != nil {
		return DefaultWindowState(), fmt.Errorf("read window state %s: %w", WindowStateFile, err)
	}
	return s.clamped(), nil
}

// SaveWindowState remembers s in dir, replacing the file atomically, so that a crash
// mid-write leaves the old state rather than half a file.
func SaveWindowState(dir agent.DataDir, s WindowState) error {
	if err := dir.Ensure(); err != nil {
		return err
	}
	b, err := json.Marshal(s.clamped())
	if err != nil {
		return err
	}
	if err := safefile.WriteAtomic(filepath.Join(string(dir), WindowStateFile), b, 0o600); err != nil {
		return fmt.Errorf("save window state: %w", err)
	}
	return nil
}

// clamped returns s with its size within the minimum and windowMaxSide.
func (s WindowState) clamped() WindowState {
	s.Width = min(max(s.Width, WindowMinWidth), windowMaxSide)
	s.Height = min(max(s.Height, WindowMinHeight), windowMaxSide)
	return s
}
