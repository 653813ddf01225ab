package agent

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"walletsync/agent/api"
)

// openToOthers reports a file whose mode lets users other than its owner read or write it.
// Windows has no such mode bits (its files inherit the folder's access list), so nothing is
// refused there.
func openToOthers(info fs.FileInfo) bool {
	return runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0
}

// readPrivate reads a file that holds a secret, refusing (ErrOpenToOthers, with a hint) one
// that other users can read: whatever it holds may already be known to them. The mode is
// checked on the open file, so the file read is the file checked.
func readPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if openToOthers(info) {
		return nil, api.WithHint(fmt.Errorf("%s (mode %#o): %w", path, info.Mode().Perm(), api.ErrOpenToOthers),
			"Run chmod 600 on the file, or delete it and restart the agent for a new one: others may have read it.")
	}
	return io.ReadAll(f)
}
