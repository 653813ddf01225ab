package postgres

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A killed test binary's cluster folder is removed by the next Start once it is old; a
// folder whose server runs, and a young one, are kept.
func TestRemoveStale_OnlyDeadAndOld(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	mk := func(pid int, mtime time.Time) string {
		d, err := os.MkdirTemp("", "walletsync-pgtest-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if pid > 0 {
			if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "data", "postmaster.pid"), []byte(strconv.Itoa(pid)+"\n/data\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead, running, young := mk(0, old), mk(os.Getpid(), old), mk(0, time.Now())
	removeStale()
	for d, want := range map[string]bool{dead: false, running: true, young: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", d, err == nil, want)
		}
	}
}
