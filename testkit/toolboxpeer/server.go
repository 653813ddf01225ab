package toolboxpeer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"walletsync/testkit/tier"
)

// Server is the toolbox's own StorageServer (interop/storage-server.mjs: Express,
// @bsv/auth-express-middleware, StorageKnex on a SQLite file, a ProtoWallet identity,
// monetize false) on 127.0.0.1, as a test's remote peer.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	// IdentityKey is the server's identity (compressed hex); StorageIdentityKey of its store.
	IdentityKey string
	// DB is the server's SQLite file, which Dump reads once the server is stopped.
	DB string

	tb     testing.TB // nil for NewServer's
	dir    string     // holds storage-server.mjs and node_modules
	keyHex string
	port   int

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{}
	stderr *lockedWriter
}

// StartServer starts a server on a new store in the test's temporary folder, signing as
// the private key keyHex (64 hex digits). It is stopped when the test ends.
func StartServer(tb testing.TB, keyHex string) *Server {
	tb.Helper()
	tier.Full(tb, needs)
	s := &Server{tb: tb, dir: dir(), keyHex: keyHex, DB: filepath.Join(tb.TempDir(), "server.sqlite")}
	if err := s.TryRestart(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// NewServer starts a server outside a test (a benchmark): interopDir holds
// storage-server.mjs with the toolbox installed, db is its store (created when missing).
// The caller stops it.
func NewServer(interopDir, db, keyHex string) (*Server, error) {
	s := &Server{dir: interopDir, keyHex: keyHex, DB: db}
	if err := s.TryRestart(); err != nil {
		return nil, err
	}
	return s, nil
}

// TryRestart is Restart for a goroutine other than the test's: it returns its failure.
func (s *Server) TryRestart() error {
	d := s.dir
	if _, err := os.Stat(filepath.Join(d, "node_modules", "@bsv", "wallet-toolbox")); err != nil {
		return fmt.Errorf("the @bsv/wallet-toolbox peer is not installed in %s: run ./scripts/test.sh (or npm ci there)", d)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is not on PATH; the toolbox server needs Node 20: %w", err)
	}
	cmd := exec.Command(node, filepath.Join(d, "storage-server.mjs"), "--db", s.DB, "--key", s.keyHex, "--port", strconv.Itoa(s.port))
	cmd.Env = append(os.Environ(), "TZ=UTC")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &lockedWriter{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, stdout) // keeps the pipe from filling until the server exits
		_ = cmd.Wait()                     // Stop or Kill ended it, or a test sees its calls fail
		close(done)
	}()
	var ready struct {
		Port        int
		IdentityKey string
	}
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &ready); err != nil {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("storage-server.mjs: %q: %w\n%s", l, err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("storage-server.mjs did not start\n%s", stderr.String())
	}
	s.mu.Lock()
	s.cmd, s.stdin, s.done, s.stderr = cmd, stdin, done, stderr
	s.mu.Unlock()
	if s.URL == "" { // the first start; a restart keeps the port, key and so the URL
		s.port = ready.Port
		s.URL = "http://127.0.0.1:" + strconv.Itoa(ready.Port)
		s.IdentityKey = ready.IdentityKey
	}
	return nil
}

// Stop closes the server's stdin, on which it closes its store and exits; a server that
// does not exit within 10 s is killed. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, stdin, done := s.cmd, s.stdin, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	stdin.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Kill ends the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// Restart starts the server again on the same port, store and key, after Stop or Kill; a
// failure fails the test.
func (s *Server) Restart() {
	s.tb.Helper()
	if err := s.TryRestart(); err != nil {
		s.tb.Fatal(err)
	}
}

// Stderr returns what the server has logged so far.
func (s *Server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

// String describes the server for test messages.
func (s *Server) String() string { return fmt.Sprintf("toolbox StorageServer %s (%s)", s.URL, s.DB) }

// lockedWriter lets the test read stderr while the process writes it.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
