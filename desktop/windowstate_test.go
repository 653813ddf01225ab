package desktop

import (
	"os"
	"path/filepath"
	"testing"

	"walletsync/agent"
)

func TestWindowState_RoundTripAndRepair(t *testing.T) {
	dir := agent.DataDir(filepath.Join(t.TempDir(), "data"))
	if s, err := LoadWindowState(dir); err != nil || s != DefaultWindowState() {
		t.Fatalf("nothing saved: %+v, %v; want the default window", s, err)
	}
	want := WindowState{Width: 1000, Height: 700, X: -1200, Y: 30, Positioned: true}
	if err := SaveWindowState(dir, want); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadWindowState(dir); err != nil || s != want {
		t.Fatalf("loaded %+v, %v; want %+v", s, err, want)
	}
	if err := SaveWindowState(dir, WindowState{Width: 10, Height: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if s, _ := LoadWindowState(dir); s.Width != WindowMinWidth || s.Height != windowMaxSide {
		t.Fatalf("out of range: loaded %+v; want the size clamped", s)
	}
	if err := os.WriteFile(filepath.Join(string(dir), WindowStateFile), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadWindowState(dir); err == nil || s != DefaultWindowState() {
		t.Fatalf("damaged file: %+v, %v; want the default window and the error", s, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(string(dir), ".window.json.tmp-*")); len(leftovers) != 0 {
		t.Fatalf("temp files left behind: %v", leftovers)
	}
}
