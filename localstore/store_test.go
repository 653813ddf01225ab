package localstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"walletsync/wallet"
)

// TestMain doubles as a helper process for the tests that need a second, real process.
func TestMain(m *testing.M) {
	if path := os.Getenv("WALLETSYNC_TEST_HOLD_WRITER"); path != "" {
		holdWriter(path)
		return
	}
	if path := os.Getenv(createRaceEnv); path != "" {
		createRaceChild(path)
		return
	}
	os.Exit(m.Run())
}

// holdWriter opens path for writing, says so, and holds the store until stdin closes.
func holdWriter(path string) {
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("holding")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // a line or any end of stdin is the signal to let go
	s.Close()
}

// TestStore_ResetConn pins resetConn's contract: a connection whose reset fails never goes
// back to the pool (it would hand the next caller foreign keys off or a pinned read), and the
// failure is logged, as nobody is left to return it to.
func TestStore_ResetConn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		query     string
		discarded bool
	}{
		{"OK", "PRAGMA foreign_keys = ON", false},
		{"FailedIsDiscarded", "DETACH DATABASE nothing_attached", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			s := mustCreate(t, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			ctx := context.Background()
			conn, err := s.writeDB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			s.resetConn(ctx, conn, tc.query)
			err = conn.PingContext(ctx)
			if got := errors.Is(err, sql.ErrConnDone); got != tc.discarded {
				t.Fatalf("ping after reset: %v; want discarded %v", err, tc.discarded)
			}
			if !tc.discarded && err != nil {
				t.Fatalf("ping after reset: %v", err)
			}
			if got := strings.Contains(logged.String(), "could not be reset"); got != tc.discarded {
				t.Fatalf("log %q; want a warning %v", logged.String(), tc.discarded)
			}
		})
	}
}

func fileDigest(tb testing.TB, path string) [32]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return sha256.Sum256(b)
}

// rawDB opens path with no walletsync logic at all, as another program would.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, db *sql.DB, q string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// closedStorePath makes a seeded store, closes it, and returns its path.
func closedStorePath(tb testing.TB) string {
	tb.Helper()
	s := mustCreate(tb, Options{})
	mustSeed(tb, s, FixtureSmall, 1)
	path := s.Path()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestOpen_RefusesAndLeavesFileUntouched(t *testing.T) {
	tests := []struct {
		name   string
		tamper string
		want   error
	}{
		{"walletsync schema newer than this binary", "INSERT INTO walletsync_migrations (version, name, applied_at) VALUES (99, 'from the future', '2030-01-01T00:00:00.000Z')", wallet.ErrSchemaTooNew},
		{"toolbox migration newer than 2.1.26", "INSERT INTO knex_migrations (name, batch, migration_time) VALUES ('2027-01-01-001 future', 2, 0)", wallet.ErrSchemaTooNew},
		{"unknown object in walletsync's namespace", "CREATE TABLE walletsync_mystery (x)", wallet.ErrUnknownSchema},
		{"toolbox schema older than 2.1.26", "DELETE FROM knex_migrations WHERE id > 7", wallet.ErrUnknownSchema},
		{"not a toolbox store", "DROP TABLE certificate_fields", wallet.ErrUnknownSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := closedStorePath(t)
			db := rawDB(t, path)
			mustExec(t, db, "PRAGMA journal_mode=DELETE")
			mustExec(t, db, tt.tamper)
			db.Close()
			before := fileDigest(t, path)
			entries, _ := os.ReadDir(filepath.Dir(path))

			s, err := Open(context.Background(), path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			var se *wallet.SchemaError
			if !errors.Is(err, tt.want) || !errors.As(err, &se) {
				t.Fatalf("open: err = %v, want %v as a *wallet.SchemaError", err, tt.want)
			}
			if fileDigest(t, path) != before {
				t.Fatal("the refused file changed")
			}
			after, _ := os.ReadDir(filepath.Dir(path))
			if len(after) != len(entries) {
				t.Fatalf("the refused open left files behind: %d entries before, %d after", len(entries), len(after))
			}
		})
	}
}

func TestOpen_TypedErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.sqlite")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database at all ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), garbage, Options{}); !errors.Is(err, wallet.ErrCorrupt) {
		t.Errorf("garbage file: err = %v, want ErrCorrupt", err)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "missing.sqlite"), Options{}); !errors.Is(err, wallet.ErrNotFound) {
		t.Errorf("missing file: err = %v, want ErrNotFound", err)
	}
	if _, err := OpenOrCreate(context.Background(), dir, CreateOptions{Chain: wallet.ChainTest}, Options{}); !errors.Is(err, wallet.ErrInvalidArgument) || !strings.Contains(err.Error(), "a folder") {
		t.Errorf("a folder: err = %v, want ErrInvalidArgument naming it a folder", err)
	}
	if _, err := Create(context.Background(), garbage, CreateOptions{Chain: wallet.ChainTest}, Options{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("create over an existing file: err = %v, want os.ErrExist", err)
	}
	if _, err := Create(context.Background(), filepath.Join(dir, "x.sqlite"), CreateOptions{Chain: "moon"}, Options{}); !errors.Is(err, wallet.ErrWrongChain) {
		t.Errorf("create on an unknown chain: err = %v, want ErrWrongChain", err)
	}
}

func TestStore_DiskFullIsNeverSuccess(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	var pages int64
	if err := s.writeDB.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// Cap the file at its current size: the next write that needs a page fails with
	// SQLITE_FULL, exactly as it does when the disk is full.
	mustExec(t, s.writeDB, fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	before, err := s.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 1, RawTx: make([]byte, 1<<20)})
	if !errors.Is(err, wallet.ErrDiskFull) {
		t.Fatalf("write into a full database: err = %v, want ErrDiskFull", err)
	}
	after, err := s.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Counts[wallet.TableTransactions] != before.Counts[wallet.TableTransactions] {
		t.Fatal("a failed write left a row behind")
	}
}

func TestStore_BusyAndReadOnly(t *testing.T) {
	s := mustCreate(t, Options{BusyTimeout: 50 * 1e6})
	id := mustSeed(t, s, FixtureSmall, 1)

	other := rawDB(t, s.Path())
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustExecConn(t, conn, "BEGIN IMMEDIATE")
	err = s.AddLabel(context.Background(), id, 1, "busy")
	mustExecConn(t, conn, "ROLLBACK")
	conn.Close()
	if !errors.Is(err, wallet.ErrBusy) {
		t.Fatalf("write while another connection holds the write lock: err = %v, want ErrBusy", err)
	}

	ro, err := Open(context.Background(), s.Path(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.AddLabel(context.Background(), id, 1, "nope"); !errors.Is(err, wallet.ErrReadOnly) {
		t.Fatalf("write on a read-only store: err = %v, want ErrReadOnly", err)
	}
}

func mustExecConn(tb testing.TB, c *sql.Conn, q string) {
	tb.Helper()
	if _, err := c.ExecContext(context.Background(), q); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

func TestOpen_SecondWriterRefused(t *testing.T) {
	path := closedStorePath(t)

	// Another process holds the wallet for writing.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WALLETSYNC_TEST_HOLD_WRITER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "holding" {
		t.Fatalf("helper process: %q", line)
	}

	_, err = Open(context.Background(), path, Options{})
	var le *wallet.LockedError
	if !errors.As(err, &le) || !errors.Is(err, wallet.ErrWriterLocked) {
		t.Fatalf("second writer: err = %v, want a *wallet.LockedError", err)
	}
	if le.PID != cmd.Process.Pid {
		t.Fatalf("lock error names pid %d, the holder is %d", le.PID, cmd.Process.Pid)
	}
	// Readers are not writers: a read-only open works while the lock is held.
	ro, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open beside the writer: %v", err)
	}
	ro.Close()

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("open after the holder exited: %v", err)
	}
	s.Close()
}

func TestOpen_InterruptedMigrationResumes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.sqlite")
	if err := buildToolboxFile(context.Background(), path, CreateOptions{Chain: wallet.ChainTest, StorageIdentityKey: "02ab", StorageName: "x"}); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("power cut")
	_, err := Open(context.Background(), path, Options{afterMigration: func(int) error { return crash }})
	if !errors.Is(err, crash) {
		t.Fatalf("interrupted open: err = %v", err)
	}
	var n int
	if err := rawDB(t, path).QueryRow("SELECT count(*) FROM sqlite_master WHERE name LIKE 'walletsync_%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the interrupted migration left %d objects behind", n)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("open after the interruption: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.readDB.QueryRow("SELECT max(version) FROM " + ledgerTable).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) {
		t.Fatalf("walletsync schema at version %d, want %d", version, len(migrations))
	}
}

func TestCreate_ToolboxLedger(t *testing.T) {
	s := mustCreate(t, Options{})
	names, err := queryStrings(context.Background(), s.readDB, "SELECT name FROM knex_migrations ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, "\n") != strings.Join(ToolboxMigrations(), "\n") {
		t.Fatalf("knex_migrations = %q", names)
	}
	st, err := s.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Chain != wallet.ChainTest || st.DBType != "SQLite" || st.MaxOutputScript != 1024 || len(st.StorageIdentityKey) != 66 {
		t.Fatalf("settings = %+v", st)
	}
	var mode string
	if err := s.readDB.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	var sync int
	if err := s.writeDB.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous = %d (%v), want 2 (FULL)", sync, err)
	}
}

func TestCheckIntegrity_ReportsForeignKeyProblems(t *testing.T) {
	s := mustCreate(t, Options{})
	mustSeed(t, s, FixtureSmall, 1)
	rep, err := s.CheckIntegrity(context.Background())
	if err != nil || !rep.OK {
		t.Fatalf("fresh fixture: %+v, %v", rep, err)
	}
	db := rawDB(t, s.Path()) // foreign keys are off by default on a plain connection
	mustExec(t, db, "UPDATE outputs SET basketId = 99999 WHERE outputId = 1")
	rep, err = s.CheckIntegrity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.ForeignKeys) != 1 || rep.ForeignKeys[0].Table != "outputs" || rep.ForeignKeys[0].Parent != "output_baskets" {
		t.Fatalf("dangling basket: %+v", rep)
	}
}
