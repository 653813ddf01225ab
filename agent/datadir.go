package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// DataDir is the agent's data folder. It holds, all private (0600 in a 0700 folder):
//
//	agent.lock    one agent per folder; names the holder's pid
//	agent.token   the per-install API token, created once
//	agent.session the key that signs browsers' sign-in cookies, created once; deleting it
//	              (with the agent stopped) signs every browser out
//	agent.addr    the running agent's API address, for the command line
//	state.db      the state database (task history, event log)
//	secrets.json  the unattended backup password(s)
type DataDir string

// DefaultDataDir returns the platform's per-user data folder for walletsync:
// $XDG_DATA_HOME/walletsync (default ~/.local/share/walletsync) on Linux and other Unix
// systems, ~/Library/Application Support/walletsync on macOS and
// %LocalAppData%\walletsync on Windows.
func DefaultDataDir() (DataDir, error) {
	var base string
	var err error
	switch runtime.GOOS {
	case "windows":
		base, err = os.UserCacheDir() // %LocalAppData%
	case "darwin", "ios":
		base, err = os.UserConfigDir() // ~/Library/Application Support
	default:
		if base = os.Getenv("XDG_DATA_HOME"); base == "" || !filepath.IsAbs(base) {
			var home string
			home, err = os.UserHomeDir()
			base = filepath.Join(home, ".local", "share")
		}
	}
	if err != nil {
		return "", fmt.Errorf("find the data folder: %w", err)
	}
	return DataDir(filepath.Join(base, "walletsync")), nil
}

// StatePath returns the state database's path.
func (d DataDir) StatePath() string { return filepath.Join(string(d), "state.db") }

// SecretsPath returns the secrets file's path.
func (d DataDir) SecretsPath() string { return filepath.Join(string(d), "secrets.json") }

func (d DataDir) lockPath() string  { return filepath.Join(string(d), "agent.lock") }
func (d DataDir) tokenPath() string { return filepath.Join(string(d), "agent.token") }
func (d DataDir) addrPath() string  { return filepath.Join(string(d), "agent.addr") }
func (d DataDir) sessionPath() string {
	return filepath.Join(string(d), "agent.session")
}

// Ensure creates the folder (0700) if it is missing.
func (d DataDir) Ensure() error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("create data folder: %w", err)
	}
	return nil
}

// DirLock is one agent's hold on a data folder: an OS file lock, so the kernel releases it
// when the holder dies. The holder calls Release.
type DirLock struct {
	f *os.File
}

// Lock creates the folder if needed and takes its lock without waiting. A folder locked
// by another agent, in this process or another, yields an *AgentRunningError naming the
// holder's pid.
func (d DataDir) Lock() (*DirLock, error) {
	if err := d.Ensure(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(d.lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open agent lock: %w", err)
	}
	if err := safefile.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, safefile.ErrLocked) {
			return nil, &AgentRunningError{Dir: string(d), PID: readPID(d.lockPath())}
		}
		return nil, fmt.Errorf("lock data folder %s: %w", d, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		_ = safefile.Unlock(f) // the Close below drops the lock too
		f.Close()
		return nil, fmt.Errorf("write agent lock: %w", err)
	}
	return &DirLock{f: f}, nil
}

// Release drops the lock. The lock file stays: removing it would race with an agent that
// has just opened it and is about to lock it. Release is idempotent.
func (l *DirLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := errors.Join(safefile.Unlock(l.f), l.f.Close())
	l.f = nil
	return err
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// tokenBytes is the size of the API token before hex encoding.
const tokenBytes = 32

// SessionKey returns the key that signs the dashboard's sign-in cookies (api.ServerOptions
// SessionKey), creating it (32 random bytes, hex) on first use: kept here, a browser stays
// signed in across restarts of the agent; ForgetBrowsers replaces it. Like Token, a file
// that is not 64 hex digits is refused rather than replaced.
func (d DataDir) SessionKey() ([]byte, error) {
	key, err := d.readHexFile(d.sessionPath(), "sign-in key")
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return d.newSessionKey()
}

// ForgetBrowsers replaces the sign-in key and returns the new one: the cookies of every
// browser signed in before no longer verify, at once in a running agent that is given the
// key (POST /api/v1/browsers/forget does both), else from the agent's next start. The
// command line, the tray and the desktop window are not affected (they use the token).
func (d DataDir) ForgetBrowsers() ([]byte, error) {
	return d.newSessionKey()
}

func (d DataDir) newSessionKey() ([]byte, error) {
	var b [tokenBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	if err := d.Ensure(); err != nil {
		return nil, err
	}
	if err := safefile.WriteAtomic(d.sessionPath(), []byte(hex.EncodeToString(b[:])+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("create sign-in key: %w", err)
	}
	return b[:], nil
}

// readHexFile reads a private file of 64 hex digits (what) at path.
func (d DataDir) readHexFile(path, what string) ([]byte, error) {
	b, err := readPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) != tokenBytes {
		return nil, fmt.Errorf("read %s %s: not %d hex digits: %w", what, path, 2*tokenBytes, wallet.ErrCorrupt)
	}
	return raw, nil
}

// Token returns the per-install API token, creating it (32 random bytes, hex) on first
// use. The agent calls it while holding the folder's lock; a token file that is not 64 hex
// digits is refused rather than replaced, since the command line and the window may hold
// the old one.
func (d DataDir) Token() (string, error) {
	tok, err := d.readToken()
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	var b [tokenBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	tok = hex.EncodeToString(b[:])
	if err := d.Ensure(); err != nil {
		return "", err
	}
	if err := safefile.WriteAtomic(d.tokenPath(), []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("create API token: %w", err)
	}
	return tok, nil
}

func (d DataDir) readToken() (string, error) {
	b, err := readPrivate(d.tokenPath())
	if err != nil {
		return "", fmt.Errorf("read API token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if raw, err := hex.DecodeString(tok); err != nil || len(raw) != tokenBytes {
		return "", fmt.Errorf("read API token %s: not %d hex digits: %w", d.tokenPath(), 2*tokenBytes, wallet.ErrCorrupt)
	}
	return tok, nil
}

// PublishAddr records the running agent's API address (host:port) for the command line.
func (d DataDir) PublishAddr(addr string) error {
	if err := safefile.WriteAtomic(d.addrPath(), []byte(addr+"\n"), 0o600); err != nil {
		return fmt.Errorf("publish API address: %w", err)
	}
	return nil
}

// RemoveAddr withdraws the published address; the agent calls it as it stops. A missing
// file is not an error.
func (d DataDir) RemoveAddr() error {
	if err := os.Remove(d.addrPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("withdraw API address: %w", err)
	}
	return nil
}

// Endpoint returns the running agent's endpoint, or ErrAgentNotRunning when none has
// published its address. An agent that died leaves its address behind: connecting to it
// then fails, and that error is the caller's to report.
func (d DataDir) Endpoint() (api.Endpoint, error) {
	b, err := os.ReadFile(d.addrPath())
	if errors.Is(err, fs.ErrNotExist) {
		return api.Endpoint{}, fmt.Errorf("%s: %w", d, api.ErrAgentNotRunning)
	}
	if err != nil {
		return api.Endpoint{}, fmt.Errorf("read API address: %w", err)
	}
	tok, err := d.readToken()
	if err != nil {
		return api.Endpoint{}, err
	}
	return api.Endpoint{Addr: strings.TrimSpace(string(b)), Token: tok}, nil
}
