// Package pgtest gives tests a real PostgreSQL: one throwaway cluster per test package
// (Main starts it from TestMain and stops it when the tests end) and a fresh database per
// test (Cluster.NewDatabase), so that tests are isolated and may run in parallel.
//
// The cluster is the system's own PostgreSQL server binaries (the Debian package
// postgresql, which scripts/setup.sh installs), run from a temp data folder, listening on
// 127.0.0.1 at a free port and on a unix socket in that folder, with fsync off: nothing in
// it outlives the test binary. When WALLETSYNC_PG_URL is set, the tests use that server
// instead (its URL names a role that may CREATE DATABASE). When neither is available the
// tests fail with a message that says how to get one: a backend that was never tested must
// not look like one that passed.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable that points the tests at an existing server instead of a
// throwaway cluster, e.g. postgres://user:pass@host:5432/postgres.
const EnvURL = "WALLETSYNC_PG_URL"

// ErrNoPostgres is returned by Start when no PostgreSQL server binaries are installed and
// EnvURL is not set.
var ErrNoPostgres = errors.New("no PostgreSQL server: install the Debian package postgresql (scripts/setup.sh does) or set " + EnvURL)

// startTimeout bounds how long Start waits for a new cluster to accept connections.
const startTimeout = 60 * time.Second

// Cluster is a PostgreSQL server the tests of one package share.
type Cluster struct {
	// URL is the admin connection (database postgres) of the server.
	URL string

	dir  string    // the temp folder of a throwaway cluster ("" for EnvURL's server)
	proc *exec.Cmd // the postmaster of a throwaway cluster
	exit chan error
	mu   sync.Mutex // CREATE DATABASE from one template, one at a time
}

// Main starts a cluster, stores it in *c, runs the package's tests and stops the cluster,
// whatever the tests did; it returns the exit code for os.Exit. A cluster that cannot
// start fails the package (exit code 1) with the reason on stderr. Use it from TestMain:
//
//	var cluster *pgtest.Cluster
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }
func Main(m *testing.M, c **Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	cl, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	defer cl.Stop()
	*c = cl
	return m.Run()
}

// Start returns EnvURL's server when that is set, else initializes and starts a
// throwaway cluster in a temp folder. When the process runs as root, the folder belongs to
// the postgres user and the server runs as that user (PostgreSQL refuses to run as root).
// The server gets a parent-death signal, so that a test binary killed at its timeout does
// not leave it running.
func Start(ctx context.Context) (*Cluster, error) {
	if u := os.Getenv(EnvURL); u != "" {
		c := &Cluster{URL: u}
		if err := c.ping(ctx); err != nil {
			return nil, fmt.Errorf("connect to %s: %w", EnvURL, err)
		}
		return c, nil
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", "walletsync-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{dir: dir}
	if err := c.start(ctx, bin, cred); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// removeStale removes the folders of clusters whose test binary was killed (the server
// itself stops on the parent-death signal, the folder stays): those older than 10 minutes
// whose postmaster is not running. A folder being initialized right now is younger.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "walletsync-pgtest-*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < 10*time.Minute {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its server runs
		}
		os.RemoveAll(d)
	}
}

// findBinaries returns the folder holding initdb and postgres: the newest
// /usr/lib/postgresql/<version>/bin (where Debian installs them), else the PATH's.
func findBinaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("looked in /usr/lib/postgresql/*/bin and PATH for initdb and postgres: %w", ErrNoPostgres)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// serverCredential is who runs initdb and postgres: nil (this process's user) unless this
// process is root, then the postgres user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user: %v: %w", err, ErrNoPostgres)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *Cluster) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	data := filepath.Join(c.dir, "data")
	if cred != nil {
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	logFile, err := os.Create(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer logFile.Close()
	// fsync and full page writes are off: the cluster dies with the tests. Connections are
	// generous because each test database has its own pools.
	c.proc = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+c.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB")
	c.proc.Stdout, c.proc.Stderr = logFile, logFile
	c.proc.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := c.proc.Start(); err != nil {
		c.proc = nil
		return fmt.Errorf("start postgres: %w", err)
	}
	c.exit = make(chan error, 1)
	go func() { c.exit <- c.proc.Wait() }()
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-c.exit:
			c.exit <- werr
			return fmt.Errorf("postgres exited while starting (%v); its log:\n%s", werr, c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections: %v; its log:\n%s", err, c.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

func (c *Cluster) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// Stop stops a throwaway cluster (a fast shutdown, then a kill after 10 s) and removes its
// folder. It does nothing to EnvURL's server. It is safe to call more than once.
func (c *Cluster) Stop() error {
	var err error
	if c.proc != nil {
		c.proc.Process.Signal(syscall.SIGINT) // fast shutdown: disconnect clients, no checkpoint wait
		select {
		case <-c.exit:
		case <-time.After(10 * time.Second):
			c.proc.Process.Kill()
			<-c.exit
			err = errors.New("stop postgres: killed after 10 s")
		}
		c.proc = nil
	}
	if c.dir != "" {
		if rerr := os.RemoveAll(c.dir); rerr != nil && err == nil {
			err = fmt.Errorf("stop postgres: %w", rerr)
		}
		c.dir = ""
	}
	return err
}

// unsafeName matches what a database name built from a test name may not hold.
var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates a database of its own for tb (named after the test, with a random
// suffix) and returns its URL; the database is dropped when tb ends. It fails tb when the
// server refuses.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	if c == nil {
		tb.Fatal("pgtest: no cluster: call pgtest.Main from TestMain")
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	base := unsafeName.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	name := "t_" + base[:min(len(base), 40)] + "_" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(c.URL)
	if err != nil {
		tb.Fatalf("pgtest: cluster URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// admin runs one statement on the server's admin database. CREATE DATABASE copies
// template1 and fails while another session copies it too, so calls take turns.
func (c *Cluster) admin(ctx context.Context, stmt string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}
