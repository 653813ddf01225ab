// Package postgres gives tests, and the lab's benchmarks of `walletsync serve --db
// postgres://` (cmd/walletsync-bench), a real PostgreSQL server: a throwaway cluster
// (Start) or one that runs already (Attach), and scratch databases on it (CreateDatabase).
// A test package shares one server, started from its TestMain (Main), and each test gets a
// database of its own (Cluster.NewDatabase), so that tests are isolated and may run in
// parallel.
//
// A throwaway cluster is the system's own PostgreSQL server binaries (the Debian package
// postgresql, which scripts/setup.sh installs), run from a temp data folder, listening on
// 127.0.0.1 at a free port and on a unix socket in that folder, with fsync off: nothing in
// it outlives the process that started it (the server gets a parent-death signal).
package postgres

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
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres is returned by Start when no PostgreSQL server binaries are installed.
var ErrNoPostgres = errors.New("no PostgreSQL server: install the Debian package postgresql (scripts/setup.sh does)")

// StartTimeout is how long a caller should let Start wait for a new cluster to accept
// connections on a loaded machine.
const StartTimeout = 60 * time.Second

// Cluster is a PostgreSQL server: a throwaway one (Start) or one that runs already
// (Attach). It is safe for concurrent use.
type Cluster struct {
	// URL is the admin connection (database postgres, or the database Attach was given)
	// of the server.
	URL string

	dir  string    // the temp folder of a throwaway cluster ("" for an attached server)
	proc *exec.Cmd // the postmaster of a throwaway cluster
	exit chan error
	mu   sync.Mutex // CREATE DATABASE from one template, one at a time
}

// Attach returns the server at url once it answers; url names a role that may CREATE
// DATABASE for CreateDatabase. Stop leaves that server running.
func Attach(ctx context.Context, url string) (*Cluster, error) {
	c := &Cluster{URL: url}
	if err := c.ping(ctx); err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return c, nil
}

// Start initializes and starts a throwaway cluster in a temp folder. When the process runs
// as root, the folder belongs to the postgres user and the server runs as that user
// (PostgreSQL refuses to run as root). The server gets a parent-death signal, so that a
// process killed before Stop (a test binary at its timeout) does not leave it running.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", folderPrefix)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{dir: dir}
	if err := c.start(ctx, bin, cred); err != nil {
		_ = c.Stop() // the start's error is the one to report
		return nil, err
	}
	return c, nil
}

// folderPrefix names the temp folders of throwaway clusters.
const folderPrefix = "walletsync-pgtest-"

// removeStale removes the folders of clusters whose process was killed (the server itself
// stops on the parent-death signal, the folder stays): those older than 10 minutes whose
// postmaster is not running. A folder being initialized right now is younger.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), folderPrefix+"*"))
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
	// fsync and full page writes are off: the cluster dies with its process. Connections
	// are generous because each database has its own pools, and each server process of a
	// load run its own.
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
// folder. It does nothing to an attached server. It is safe to call more than once.
func (c *Cluster) Stop() error {
	var err error
	if c.proc != nil {
		c.proc.Process.Signal(syscall.SIGINT) // fast shutdown: disconnect clients, no checkpoint wait
		select {
		case _ = <-c.exit: // stopped: how it exited tells nothing more
		case <-time.After(10 * time.Second):
			c.proc.Process.Kill()
			_ = <-c.exit // "signal: killed": the error below says it
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

// unsafeName matches what a database name built from a caller's label may not hold.
var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDatabase creates a database of its own, named after label with a random suffix,
// and returns its URL and a function that drops it (closing whatever connections are
// still open to it).
func (c *Cluster) CreateDatabase(ctx context.Context, label string) (string, func(context.Context) error, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	base := unsafeName.ReplaceAllString(strings.ToLower(label), "_")
	name := "t_" + base[:min(len(base), 40)] + "_" + hex.EncodeToString(suffix)
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", nil, fmt.Errorf("create database %s: the server's URL: %w", name, err)
	}
	u.Path = "/" + name
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		if err := c.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	return u.String(), drop, nil
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
