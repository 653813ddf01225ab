package syncer_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/crash"
	"walletsync/wallet"
)

// The crash tests run a push in a child process (this test binary, see TestMain) that kills
// itself with SIGKILL at one durable boundary; the parent then opens both files, checks what
// survived, resumes with a fresh Run and checks that nothing was lost or applied twice.

const (
	// crashMaxRows makes two-row pages: the small fixture then takes 36 pages, three of them
	// in proven_tx_reqs, the last table, so every boundary has pages to land on. (The toolbox
	// fixture's 20,000 label rows would take thousands of pages per child under -race.)
	crashMaxRows = 2
)

// TestMain doubles as the crash child and sets the number of fault schedules.
func TestMain(m *testing.M) {
	if k, task, ok := crash.Child(); ok {
		crashChild(k, task)
	}
	requireSchedules()
	os.Exit(m.Run())
}

// boundary is a durable boundary of a page commit where a child kills itself.
type boundary string

const (
	// beforeTransaction: the engine reports committing; the page has not been sent.
	beforeTransaction boundary = "before-transaction"
	// rowsWritten: the page's rows are written inside the transaction, not committed.
	rowsWritten boundary = "rows-written"
	// committedUnacked: the transaction is durable; the acknowledgement is not returned.
	committedUnacked boundary = "committed-unacknowledged"
	// acknowledged: the engine reports the page committed.
	acknowledged boundary = "acknowledged"
	// midLastTable: a page of the last table in SyncOrder is acknowledged, more are to come.
	midLastTable boundary = "mid-last-table"
	// completion: Run returned; the process has not exited.
	completion boundary = "completion"
)

// crashTask is what the parent asks of a child: push Src to Dst (and die at the boundary
// crash names; with none the child runs to the end, or until the parent kills it); with
// Cancel it cancels the run once Cancel pages are acknowledged.
type crashTask struct {
	Src, Dst, Identity string
	Cancel             int
}

// Lines a child prints besides its crash report.
const (
	// readyMarker: the stores are open and the run begins.
	readyMarker = "ready"
	// resultMarker starts the line with the childResult of a run that returned.
	resultMarker = "result:"
)

// childResult is how a child's run ended and the first page request it made.
type childResult struct {
	Result    syncer.Result
	Err       string
	FirstRead wallet.PageRequest
}

// crashReport is what a child says just before it dies: the sequence and the inserts of the
// pages acknowledged to it so far.
type crashReport struct {
	Seq     int64
	Inserts int64
}

// crashChild runs task and never returns: it dies by SIGKILL at k's boundary, or exits
// with a message the parent reports when it failed or never reached the boundary; a child
// given no boundary exits 0 once its run returned.
func crashChild(k *crash.Killer, task []byte) {
	var c crashTask
	if err := json.Unmarshal(task, &c); err != nil {
		crash.Fail("bad task: %v", err)
	}
	// The last progress report: its counters and checkpoint are what was acknowledged.
	var acked syncer.Progress
	reach := func(b boundary) {
		k.Reach(string(b), crashReport{Seq: acked.Checkpoint.Seq, Inserts: acked.Inserts})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := localstore.Open(ctx, c.Src, localstore.Options{})
	if err != nil {
		crash.Fail("%v", err)
	}
	dst, err := localstore.Open(ctx, c.Dst, localstore.Options{CommitHook: func(point string) {
		switch point {
		case localstore.HookRowsWritten:
			reach(rowsWritten)
		case localstore.HookCommitted:
			reach(committedUnacked)
		}
	}})
	if err != nil {
		crash.Fail("%v", err)
	}
	last := wallet.SyncOrder[len(wallet.SyncOrder)-1].Name
	rec := &recordingSource{Source: src}
	fmt.Println(readyMarker)
	res, err := syncer.Run(ctx, rec, dst, c.Identity, syncer.Options{MaxRows: crashMaxRows, Active: wallet.KeepSourceActive,
		Progress: func(p syncer.Progress) error {
			acked = p
			switch p.State {
			case syncer.StateCommitting:
				reach(beforeTransaction)
			case syncer.StateCommitted:
				reach(acknowledged)
				if p.Table == last && !p.Checkpoint.Done {
					reach(midLastTable)
				}
				if c.Cancel > 0 && p.Pages == int64(c.Cancel) {
					cancel()
				}
			}
			return nil
		}})
	out := childResult{Result: res}
	if len(rec.reads) > 0 {
		out.FirstRead = rec.reads[0]
	}
	if err != nil {
		out.Err = err.Error()
	}
	line, _ := json.Marshal(out)
	fmt.Println(resultMarker, string(line))
	if err != nil && !(c.Cancel > 0 && errors.Is(err, context.Canceled)) {
		crash.Fail("%v", err)
	}
	acked = syncer.Progress{Counters: res.Counters, Checkpoint: res.Checkpoint}
	reach(completion)
	if k.At != "" {
		crash.Fail("finished without reaching %s", k.Point)
	}
	os.Exit(0)
}

// recordingSource records the page requests of the views it opens.
type recordingSource struct {
	wallet.Source
	reads []wallet.PageRequest
}

func (r *recordingSource) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	v, err := r.Source.OpenView(ctx, lifetime)
	if err != nil {
		return nil, err
	}
	return &recordingView{View: v, src: r}, nil
}

type recordingView struct {
	wallet.View
	src *recordingSource
}

func (v *recordingView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	v.src.reads = append(v.src.reads, req)
	return v.View.ReadPage(ctx, req)
}

// TestRun_ResumesAfterSIGKILL kills a pushing process at every durable boundary of a page
// commit, at the first page, a middle page and the last one, and resumes in a new process.
// It proves, for each:
//   - the kill left exactly the acknowledged pages durable (plus the one page whose commit
//     was durable when the process died before acknowledging it): a transaction cut after
//     its rows were written left nothing, not even the user row;
//   - the resume continues at the checkpoint's table and cursor in a new view (the old one
//     died with the process; nothing changed in between, so there is nothing to catch up),
//     sends exactly the pages that had not landed and inserts exactly their rows; after a
//     durable final checkpoint it sends nothing at all;
//   - the destination then equals the source, table for table and count for count, no
//     natural key twice, integrity clean, its checkpoint done.
func TestRun_ResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	tp := newTemplates(t)
	ref := tp.reference(t)
	last := wallet.SyncOrder[len(wallet.SyncOrder)-1].Name
	if ref.tablePages[last] < 3 {
		t.Fatalf("%s takes %d pages; the mid-table boundary needs at least 3", last, ref.tablePages[last])
	}
	mid := int(ref.Pages) / 2
	for _, c := range []struct {
		at boundary
		n  []int
	}{
		{beforeTransaction, []int{1, mid}},
		{rowsWritten, []int{1, mid}},
		{committedUnacked, []int{mid, int(ref.Pages)}},
		{acknowledged, []int{1, int(ref.Pages)}},
		{midLastTable, []int{1, ref.tablePages[last] - 1}},
		{completion, []int{1}},
	} {
		for _, n := range c.n {
			t.Run(fmt.Sprintf("%s/%d", c.at, n), func(t *testing.T) {
				t.Parallel()
				crashAndResume(t, tp, ref, c.at, n)
			})
		}
	}
}

// crashAndResume kills a child at the nth boundary at, then resumes in this process and
// checks what TestRun_ResumesAfterSIGKILL promises.
func crashAndResume(t *testing.T, tp templates, ref reference, at boundary, n int) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, dstPath := tp.copyTo(t, dir)
	rep := runCrashChild(t, crash.Point{At: string(at), N: n}, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity})

	src, dst := openStore(t, srcPath), openStore(t, dstPath)
	durable, err := dst.Checkpoint(ctx, wallet.SessionKey{SourceStorage: tp.storage, IdentityKey: tp.identity})
	if err != nil {
		t.Fatal(err)
	}
	wantSeq := rep.Seq
	if at == committedUnacked {
		wantSeq++ // durable, never acknowledged
	}
	if durable.Seq != wantSeq {
		t.Fatalf("after the kill the destination holds sequence %d; %d pages were acknowledged, want %d durable", durable.Seq, rep.Seq, wantSeq)
	}
	merged := mergedRows(t, dst, durable.Seq)
	if at == committedUnacked && merged < rep.Inserts || at != committedUnacked && merged != rep.Inserts {
		t.Fatalf("after the kill the destination holds %d merged rows; %d inserts were acknowledged", merged, rep.Inserts)
	}
	if integrity, err := dst.CheckIntegrity(ctx); err != nil || !integrity.OK {
		t.Fatalf("integrity after the kill: %+v, %v", integrity, err)
	}

	res := push(t, src, dst, tp.identity, syncer.Options{MaxRows: crashMaxRows})
	switch {
	case durable.Done:
		if res.Kind != syncer.KindUnchanged || res.Pages != 0 || res.Inserts != 0 {
			t.Fatalf("resume after a durable final checkpoint: %+v; want unchanged, no page", res)
		}
	case res.Kind != syncer.KindFull || res.Pages != ref.Pages-durable.Seq || res.Checkpoint.Seq != ref.Pages || res.CatchUpPages != 0:
		t.Fatalf("resume: %s, %d pages (%d catching up), sequence %d; want the full traversal's last %d of %d pages, from sequence %d",
			res.Kind, res.Pages, res.CatchUpPages, res.Checkpoint.Seq, ref.Pages-durable.Seq, ref.Pages, durable.Seq)
	case durable.Seq > 0 && res.Resumed != syncer.ResumeCheckpoint || durable.Seq == 0 && res.Resumed != "":
		t.Fatalf("resume from sequence %d says it resumed %q", durable.Seq, res.Resumed)
	case res.Inserts != ref.Inserts-merged:
		t.Fatalf("resume inserted %d rows; %d had landed of %d, so want %d", res.Inserts, merged, ref.Inserts, ref.Inserts-merged)
	}
	if final, err := dst.Checkpoint(ctx, durable.Session); err != nil || !final.Done || final.Seq != res.Checkpoint.Seq {
		t.Fatalf("after the resume the destination holds %+v (%v); the session ended at %+v", final, err, res.Checkpoint)
	}
	if err := tp.want.check(ctx, dst, tp.identity); err != nil {
		t.Fatal(err)
	}
}

// runCrashChild runs task in a child process that dies at p, and returns what the child
// said just before SIGKILL (crash.Run fails the test unless it died there).
func runCrashChild(t *testing.T, p crash.Point, task crashTask) crashReport {
	t.Helper()
	var rep crashReport
	if err := json.Unmarshal(crash.Run(t, p, task), &rep); err != nil {
		t.Fatalf("child's report at %s: %v", p, err)
	}
	return rep
}

// mergedRows counts the rows that pages merged into dst: every row but the user row and its
// "default" basket, which the destination makes itself when the first page lands
// (findOrInsertUser) and the sync merges onto, so they are never counted as inserts.
func mergedRows(t *testing.T, dst *localstore.Store, seq int64) int64 {
	t.Helper()
	db, err := openRaw(dst.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := tableRows(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range rows {
		n += c
	}
	if seq == 0 {
		if n != 0 {
			t.Fatalf("no page landed, yet the destination holds %d rows: %v", n, rows)
		}
		return 0
	}
	return n - 2
}

// openRaw opens a store file read-only with no walletsync logic, for counting rows.
func openRaw(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
}

// tableRows counts the rows of every SyncOrder table, whoever they belong to. A partly synced
// destination holds one user, but Summary's per-user scope would miss the proofs that arrived
// before the transactions that make them the user's.
func tableRows(ctx context.Context, db *sql.DB) (map[wallet.TableName]int64, error) {
	rows := map[wallet.TableName]int64{}
	for _, t := range wallet.SyncOrder {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+string(t.Name)).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t.Name, err)
		}
		rows[t.Name] = n
	}
	return rows, nil
}

// templates are a seeded source and an empty destination, both closed, that each case
// copies: creating and seeding a store under the race detector costs almost half a second, a
// copy a few milliseconds.
type templates struct {
	dir, identity, storage string
	want                   replica // the source's user
}

func newTemplates(tb testing.TB) templates {
	tb.Helper()
	ctx := context.Background()
	tp := templates{dir: tb.TempDir()}
	src, err := localstore.Create(ctx, filepath.Join(tp.dir, "src.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	seed, err := localstore.Seed(ctx, src, localstore.FixtureSmall, localstore.SeedOptions{Seed: 7})
	if err != nil {
		tb.Fatal(err)
	}
	settings, err := src.Settings(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tp.identity, tp.storage = seed.IdentityKey, settings.StorageIdentityKey
	if tp.want, err = readReplica(ctx, src, tp.identity); err != nil {
		tb.Fatal(err)
	}
	dst, err := localstore.Create(ctx, filepath.Join(tp.dir, "dst.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tb.Fatal(err)
	}
	return tp
}

// copyTo copies both templates into dir and returns the copies' paths.
func (tp templates) copyTo(tb testing.TB, dir string) (src, dst string) {
	tb.Helper()
	src, dst = filepath.Join(dir, "src.sqlite"), filepath.Join(dir, "dst.sqlite")
	for _, p := range []string{src, dst} {
		if err := copyStore(filepath.Join(tp.dir, filepath.Base(p)), p); err != nil {
			tb.Fatal(err)
		}
	}
	return src, dst
}

// copyStore copies a closed store file and its write-ahead log, if it kept one.
func copyStore(from, to string) error {
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(from + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(to+suffix, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func openStore(tb testing.TB, path string) *localstore.Store {
	tb.Helper()
	s, err := localstore.Open(context.Background(), path, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// reference is an uninterrupted push of the templates, the measure of every resume.
type reference struct {
	syncer.Result
	tablePages map[wallet.TableName]int
}

func (tp templates) reference(t *testing.T) reference {
	t.Helper()
	srcPath, dstPath := tp.copyTo(t, t.TempDir())
	ref := reference{tablePages: map[wallet.TableName]int{}}
	ref.Result = push(t, openStore(t, srcPath), openStore(t, dstPath), tp.identity, syncer.Options{MaxRows: crashMaxRows,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				ref.tablePages[p.Table]++
			}
			return nil
		}})
	return ref
}

// replica is what a synced destination must hold: the source user's rows in id-independent
// form and the row count of every table.
type replica struct {
	rows   compare.Wallet
	counts map[wallet.TableName]int64
}

func readReplica(ctx context.Context, s *localstore.Store, identity string) (replica, error) {
	rows, err := compare.Read(ctx, s, identity, syncIgnore)
	if err != nil {
		return replica{}, err
	}
	sum, err := s.Summary(ctx, identity)
	if err != nil {
		return replica{}, err
	}
	return replica{rows: rows, counts: sum.Counts}, nil
}

// check returns how dst differs from want: rows (ids aside), counts per table, a natural key
// held twice, SQLite's integrity and foreign key checks.
func (want replica) check(ctx context.Context, dst *localstore.Store, identity string) error {
	got, err := readReplica(ctx, dst, identity)
	if err != nil {
		return err
	}
	if d := compare.Diff(want.rows, got.rows); d != "" {
		return fmt.Errorf("destination differs from the source:\n%s", d)
	}
	for _, t := range wallet.SyncOrder {
		if got.counts[t.Name] != want.counts[t.Name] {
			return fmt.Errorf("destination has %d %s rows, the source %d", got.counts[t.Name], t.Name, want.counts[t.Name])
		}
		if k := repeatedNaturalKey(t, got.rows[t.Name]); k != "" {
			return fmt.Errorf("destination holds %s natural key %s twice", t.Name, k)
		}
	}
	rep, err := dst.CheckIntegrity(ctx)
	if err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("destination integrity: %+v", rep)
	}
	return nil
}

// repeatedNaturalKey returns a BRC-40 natural key that two of rows (canonical texts, foreign
// keys already natural) share, or "". A row with a NULL key column never collides, as in a
// SQL unique index.
func repeatedNaturalKey(t *wallet.Table, rows []string) string {
	seen := map[string]bool{}
next:
	for _, text := range rows {
		var row map[string]any
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return "unreadable: " + err.Error()
		}
		var key []any
		for _, c := range t.Natural {
			if c == "userId" {
				continue // one user: compare drops it
			}
			if row[c] == nil {
				continue next
			}
			key = append(key, row[c])
		}
		k := fmt.Sprint(key)
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	return ""
}
