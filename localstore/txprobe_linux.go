package localstore

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SQLite's lock bytes (os_unix.c, wal.c). On the database file: PENDING_BYTE, the reserved
// byte after it, then the 510-byte shared range. In the -shm index of a WAL file:
// 120 + WAL_WRITE_LOCK (0), the checkpointer (1) and recovery (2) locks, then the five read
// marks (3..7), then the "dead man switch" byte 128, which every connection holds shared
// for as long as it is open and which therefore says nothing about transactions.
const (
	pendingByte    = 0x40000000
	sharedLast     = pendingByte + 2 + 510 - 1
	shmLockFirst   = 120
	shmReadMarkEnd = 120 + 3 + 5 - 1
)

// otherTransactions looks in /proc/locks for a lock of another process on the bytes SQLite
// locks only inside a transaction. Reading /proc/locks takes no lock and opens no
// descriptor on the wallet (closing one would drop this process's own SQLite locks on it:
// POSIX record locks belong to the process, not to the descriptor).
//
// In WAL mode each connection keeps a shared lock on the database file's shared range as
// long as it is open, so there only the -shm bytes from the write lock to the last read
// mark count; in a rollback journal the database file's whole lock range counts.
func otherTransactions(path string, wal bool) (open, known bool, err error) {
	type target struct {
		dev, ino   uint64
		first, end int64
	}
	var targets []target
	add := func(file string, first, end int64) error {
		fi, err := os.Stat(file)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no device and inode", file)
		}
		targets = append(targets, target{dev: uint64(st.Dev), ino: st.Ino, first: first, end: end})
		return nil
	}
	if wal {
		err = add(path+"-shm", shmLockFirst, shmReadMarkEnd)
	} else {
		err = add(path, pendingByte, sharedLast)
	}
	if err != nil {
		return false, false, fmt.Errorf("look for other transactions: %w", classify(err))
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false, false, nil // no /proc: nobody can tell
	}
	defer f.Close()
	self := os.Getpid()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, ok := parseProcLock(sc.Text())
		if !ok || l.pid == self {
			continue
		}
		for _, t := range targets {
			if l.ino == t.ino && l.major == unix.Major(t.dev) && l.minor == unix.Minor(t.dev) && l.first <= t.end && l.last >= t.first {
				return true, true, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, false, fmt.Errorf("read /proc/locks: %w", err)
	}
	return false, true, nil
}

// procLock is one line of /proc/locks, such as
//
//	3: POSIX  ADVISORY  READ  4711 08:02:1311744 123 123
//	4: -> POSIX  ADVISORY  WRITE 4712 08:02:1311744 120 120   (a waiter)
//	5: OFDLCK ADVISORY  READ  -1 00:2e:123 0 EOF
type procLock struct {
	pid          int
	major, minor uint32
	ino          uint64
	first, last  int64
}

func parseProcLock(line string) (procLock, bool) {
	var l procLock
	f := strings.Fields(line)
	if len(f) > 1 && f[1] == "->" {
		f = append(f[:1], f[2:]...)
	}
	if len(f) < 8 {
		return l, false
	}
	var err error
	if l.pid, err = strconv.Atoi(f[4]); err != nil {
		return l, false
	}
	id := strings.Split(f[5], ":")
	if len(id) != 3 {
		return l, false
	}
	major, err1 := strconv.ParseUint(id[0], 16, 32)
	minor, err2 := strconv.ParseUint(id[1], 16, 32)
	ino, err3 := strconv.ParseUint(id[2], 10, 64)
	first, err4 := strconv.ParseInt(f[6], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return l, false
	}
	l.major, l.minor, l.ino, l.first = uint32(major), uint32(minor), ino, first
	if f[7] == "EOF" {
		l.last = 1<<63 - 1
	} else if l.last, err = strconv.ParseInt(f[7], 10, 64); err != nil {
		return l, false
	}
	return l, true
}
