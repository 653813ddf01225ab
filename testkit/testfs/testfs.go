// Package testfs gives tests real file systems with the properties a person's disk can
// have: full, or read-only. They are tmpfs mounts, which need root (or a user namespace
// that allows mounting); where this process cannot mount, the test fails, saying why: the
// disk-full and read-only paths are part of what CI must prove, and a skip would pass silently.
// Only the quick tier (-short, see testkit/tier) leaves them out.
package testfs

import (
	"os/exec"
	"testing"

	"walletsync/testkit/tier"
)

// Tmpfs mounts a tmpfs of size ("16k", "1m") on a new temporary folder for the rest of the
// test, and returns the folder.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	tier.Full(t, "a tmpfs mount (root or a user namespace)")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("cannot mount a tmpfs here (the disk-full tests need root or a user namespace that allows mounting): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// ReadOnly remounts the tmpfs at dir (from Tmpfs) read-only, as a write-protected card or a
// read-only network share is.
func ReadOnly(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s read-only: %v %s", dir, err, out)
	}
}
