package localstore

import (
	"fmt"
	"testing"
)

func TestParseProcLock(t *testing.T) {
	for _, tc := range []struct {
		line string
		want procLock
		ok   bool
	}{
		{"3: POSIX  ADVISORY  READ 26004 fe:00:10002753 128 128", procLock{pid: 26004, major: 0xfe, minor: 0, ino: 10002753, first: 128, last: 128}, true},
		{"4: -> POSIX  ADVISORY  WRITE 4712 08:02:1311744 120 120", procLock{pid: 4712, major: 8, minor: 2, ino: 1311744, first: 120, last: 120}, true},
		{"5: OFDLCK ADVISORY  READ  -1 00:2e:123 0 EOF", procLock{pid: -1, major: 0, minor: 0x2e, ino: 123, first: 0, last: 1<<63 - 1}, true},
		{"6: FLOCK  ADVISORY  WRITE 26004 fe:00:10002757", procLock{}, false},
		{"7: POSIX  ADVISORY  READ x fe:00:1 0 0", procLock{}, false},
		{"", procLock{}, false},
	} {
		got, ok := parseProcLock(tc.line)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parse %q: %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseProcLock(f *testing.F) {
	f.Add("3: POSIX  ADVISORY  READ 26004 fe:00:10002753 128 128")
	f.Add("4: -> POSIX  ADVISORY  WRITE 4712 08:02:1311744 120 EOF")
	f.Fuzz(func(t *testing.T, line string) {
		l, ok := parseProcLock(line)
		if !ok {
			return
		}
		// What it read, printed as the kernel prints it, reads back the same.
		last := fmt.Sprint(l.last)
		if l.last == 1<<63-1 {
			last = "EOF"
		}
		again := fmt.Sprintf("1: POSIX  ADVISORY  READ %d %02x:%02x:%d %d %s", l.pid, l.major, l.minor, l.ino, l.first, last)
		if back, ok := parseProcLock(again); !ok || back != l {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", line, l, again, back, ok)
		}
	})
}
