//go:build unix

package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// peakRSS returns the process's peak resident set size in bytes. On Linux it is VmHWM: the
// bench children are started by a Go parent with vfork+exec, across which getrusage's
// maxrss carries the parent's peak, so a child would report its parent's memory as its own.
func peakRSS() int64 {
	if hwm := vmHWM(); hwm > 0 {
		return hwm
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes on macOS
	}
	return int64(ru.Maxrss) * 1024 // KiB on Linux and the BSDs
}

// vmHWM returns Linux's VmHWM of this process in bytes, or 0 elsewhere.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
