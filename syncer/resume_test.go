package syncer_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/crash"
	"walletsync/wallet"
)

// cancelAt pushes src to dst with two-row pages and cancels the run once a page of table is
// acknowledged with more of the table to come; it returns the durable checkpoint.
func cancelAt(t *testing.T, src *localstore.Store, dst *localstore.Store, id string, table wallet.TableName) wallet.Checkpoint {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := syncer.Run(ctx, src, dst, id, syncer.Options{MaxRows: crashMaxRows, Active: wallet.KeepSourceActive,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted && p.Table == table {
				cancel()
			}
			return nil
		}})
	if !errors.Is(err, context.Canceled) || res.State != syncer.StateCancelled {
		t.Fatalf("run to cancel in %s: %+v, %v", table, res, err)
	}
	if !res.Resumable || wallet.SyncOrder[res.Checkpoint.Table].Name != table {
		t.Fatalf("cancelled at %+v, resumable %v; want a resumable checkpoint in %s", res.Checkpoint, res.Resumable, table)
	}
	return res.Checkpoint
}

// changeSource writes what a wallet does between two runs: a new transaction with an output,
// a new label and a new tag (rows of tables before and after any position), a label on an
// old transaction, and, once, an update of an old basket.
func changeSource(t *testing.T, src *localstore.Store, id string, round int) {
	t.Helper()
	ctx := context.Background()
	label, tag := fmt.Sprintf("between-%d", round), fmt.Sprintf("tag-%d", round)
	if _, err := src.RecordTransaction(ctx, id, wallet.NewTransaction{Satoshis: int64(100 + round), Labels: []string{label},
		Outputs: []wallet.NewOutput{{Vout: 0, Satoshis: int64(100 + round), Basket: "default", Tags: []string{tag}}}}); err != nil {
		t.Fatal(err)
	}
	if err := src.AddLabel(ctx, id, 1, label); err != nil {
		t.Fatal(err)
	}
	if round == 0 {
		if err := src.SoftDelete(ctx, id, wallet.SoftDeleteBasket, "savings"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRun_ResumeCatchesUpBeforeContinuing interrupts a push in the outputs table, changes
// the source (a transaction created between the views, whose output lies after the
// checkpoint's cursor and refers to it), and resumes: the run catches the earlier tables
// up from the journal before it continues, so the destination never sees the new output
// before its transaction (a dangling reference, which it refuses), and ends equal to the
// source. It then cuts the catch-up itself short after one page, changes the source again,
// and checks that the next run continues the catch-up from the mark it left.
func TestRun_ResumeCatchesUpBeforeContinuing(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 11)
	dst := newStore(t, wallet.ChainTest)
	cp := cancelAt(t, src, dst, id, wallet.TableOutputs)

	changeSource(t, src, id, 0)
	ctx, cancel := context.WithCancel(context.Background())
	res, err := syncer.Run(ctx, src, dst, id, syncer.Options{MaxRows: crashMaxRows, Active: wallet.KeepSourceActive,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted {
				cancel() // after the first catch-up page
			}
			return nil
		}})
	cancel()
	if !errors.Is(err, context.Canceled) || res.Resumed != syncer.ResumeCheckpoint || res.Pages != 1 || res.CatchUpPages != 1 {
		t.Fatalf("resume cut short: %+v, %v; want one catch-up page of a resumed run", res, err)
	}
	mark := res.Checkpoint
	if mark.Table != cp.Table || mark.Cursor != cp.Cursor || mark.HighWater != cp.HighWater ||
		mark.CatchUpTable == 0 || mark.CatchUpHighWater <= cp.HighWater {
		t.Fatalf("checkpoint after a catch-up page %+v; want the position of %+v and a catch-up mark above its high-water", mark, cp)
	}

	changeSource(t, src, id, 1)
	res = push(t, src, dst, id, syncer.Options{MaxRows: crashMaxRows})
	if res.Resumed != syncer.ResumeCheckpoint || res.CatchUpPages == 0 || !res.Checkpoint.Done || res.Checkpoint.CatchUpTable != 0 {
		t.Fatalf("resume after the cut catch-up: %+v", res)
	}
	mustEqual(t, src, dst, id)
	if again := push(t, src, dst, id, syncer.Options{}); again.Kind != syncer.KindUnchanged {
		t.Fatalf("a run after the resumed one: %+v; want unchanged", again)
	}
}

// TestRun_ResumesInANewProcessAtTheCheckpoint cancels a push in one process and runs the
// next in another: it continues at exactly the checkpoint's table and key, in its own
// view, and sends exactly the pages the cancelled run had not.
func TestRun_ResumesInANewProcessAtTheCheckpoint(t *testing.T) {
	t.Parallel()
	tp := newTemplates(t)
	ref := tp.reference(t)
	for _, n := range []int{1, int(ref.Pages) - 2} { // the first table, and the last
		srcPath, dstPath := tp.copyTo(t, t.TempDir())
		first := runSyncChild(t, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity, Cancel: n})
		if first.Result.State != syncer.StateCancelled || first.Result.Checkpoint.Seq != int64(n) || !first.Result.Resumable {
			t.Fatalf("run cancelled after %d pages: %+v", n, first)
		}
		cp := first.Result.Checkpoint
		next := runSyncChild(t, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity, Cancel: 1})
		got := next.FirstRead
		if got.Table != wallet.SyncOrder[cp.Table].Name || cursorKey(t, got.After) != cursorKey(t, cp.Cursor) || cursorView(t, got.After) == cp.View {
			t.Fatalf("next process read first %s after %s (view %s); want %s after %s in a new view",
				got.Table, cursorKey(t, got.After), cursorView(t, got.After), wallet.SyncOrder[cp.Table].Name, cursorKey(t, cp.Cursor))
		}
		if r := next.Result; r.Resumed != syncer.ResumeCheckpoint || r.CatchUpPages != 0 || r.Pages != 1 || r.Checkpoint.Seq != int64(n+1) {
			t.Fatalf("next process: %+v; want one page, sequence %d", r, n+1)
		}
		last := runSyncChild(t, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity})
		if r := last.Result; r.State != syncer.StateCompleted || r.Checkpoint.Seq != ref.Pages || r.Pages != ref.Pages-int64(n+1) {
			t.Fatalf("last process: %+v; want the session to end at sequence %d, one commit per page of one run", r, ref.Pages)
		}
		if err := tp.want.check(context.Background(), openStore(t, dstPath), tp.identity); err != nil {
			t.Fatal(err)
		}
	}
}

// cursorKey and cursorView read the table and key, and the view, of a localstore cursor.
func cursorKey(t *testing.T, c wallet.Cursor) string {
	var cur struct {
		Table string `json:"t"`
		Key   []any  `json:"k"`
	}
	decodeCursor(t, c, &cur)
	return fmt.Sprint(cur.Table, cur.Key)
}

func cursorView(t *testing.T, c wallet.Cursor) string {
	var cur struct {
		View string `json:"v"`
	}
	decodeCursor(t, c, &cur)
	return cur.View
}

func decodeCursor(t *testing.T, c wallet.Cursor, into any) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || json.Unmarshal(raw, into) != nil {
		t.Fatalf("cursor %q: %v", c, err)
	}
}

// noJournal is a source that keeps no change journal.
type noJournal struct{ wallet.Source }

func (s noJournal) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	settings, caps, err := s.Source.Describe(ctx)
	caps.Journal = false
	return settings, caps, err
}

// TestRun_WithoutJournalRestartsAtTheFirstTable: only a source without a journal begins an
// unfinished run again, and the result says so.
func TestRun_WithoutJournalRestartsAtTheFirstTable(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 12)
	dst := newStore(t, wallet.ChainTest)
	ref := push(t, src, newStore(t, wallet.ChainTest), id, syncer.Options{MaxRows: crashMaxRows})
	ctx, cancel := context.WithCancel(context.Background())
	res, err := syncer.Run(ctx, noJournal{src}, dst, id, syncer.Options{MaxRows: crashMaxRows, Active: wallet.KeepSourceActive,
		Progress: func(p syncer.Progress) error {
			if p.State == syncer.StateCommitted && p.Pages == 5 {
				cancel()
			}
			return nil
		}})
	cancel()
	if !errors.Is(err, context.Canceled) || res.Resumable {
		t.Fatalf("cancelled run without a journal: %+v, %v; want cancelled and not resumable", res, err)
	}
	again := push(t, noJournal{src}, dst, id, syncer.Options{MaxRows: crashMaxRows})
	if again.Resumed != syncer.ResumeFirstTable || again.Pages != ref.Pages || again.Resumable {
		t.Fatalf("next run without a journal: %+v; want all %d pages again from the first table", again, ref.Pages)
	}
	mustEqual(t, src, dst, id)
}

// writeEvery: the kill loop changes the source before every writeEvery-th attempt. An
// attempt killed within the first third of a run commits a few pages; a change touches six
// tables, and a source that changes faster than the attempts can read it could never be
// caught up by any sync.
const writeEvery = 4

// killLoopMaxAttempts bounds TestRun_KillLoopCompletes: far more attempts than a run needs
// when each is killed at a random moment of its first third.
const killLoopMaxAttempts = 300

// TestRun_KillLoopCompletes kills a pushing child with SIGKILL at random moments, each far
// shorter than one whole run (a tenth to a third of it, counted from the child's start), changes the source between attempts (a transaction created
// between two views among them), and starts the next child, until one completes. The
// destination must then equal the source, and the pages committed over all attempts (the
// session's final sequence: each commit moves it by one) must stay within 2 pages per
// attempt of one uninterrupted run of the final source: an attempt re-sends only the
// catch-up of what changed since the last checkpoint's view (the tables a write touches)
// and the table of its position, never the traversal so far.
//
// It is not parallel: it measures one run, and the kills mean something only if the
// attempts run about as fast as the measured run did. A loaded machine can make them much
// slower, so that every kill falls before the first commit and no attempt ever moves the
// checkpoint; an attempt that moved nothing widens the window by half for the next ones,
// so that the loop still kills mid-run rather than testing nothing or never ending.
func TestRun_KillLoopCompletes(t *testing.T) {
	tp := newTemplates(t)
	dir := t.TempDir()
	srcPath, dstPath := tp.copyTo(t, dir)

	// One uninterrupted child run measures what "far shorter" means on this machine.
	whole := timeSyncChild(t, tp, dir)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	t.Logf("one whole run takes %v; killing each attempt between a tenth and a third of that", whole)

	attempts, kills := 0, 0
	lastSeq := int64(-1)
	var done childResult
	for ; attempts < killLoopMaxAttempts; attempts++ {
		src, err := localstore.Open(context.Background(), srcPath, localstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if attempts%writeEvery == 0 {
			changeSource(t, src, tp.identity, attempts/writeEvery)
		}
		src.Close()
		delay := whole/10 + time.Duration(rng.Int64N(int64(whole)*7/30))
		res, killed := runKilledChild(t, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity}, delay)
		if killed {
			kills++
		}
		if res.Result.State == syncer.StateCompleted { // it may have been killed after it said so
			done = res.childResult
			break
		}
		if d, err := localstore.Open(context.Background(), dstPath, localstore.Options{}); err == nil {
			cp, _ := d.Checkpoint(context.Background(), wallet.SessionKey{SourceStorage: tp.storage, IdentityKey: tp.identity})
			t.Logf("attempt %d killed after %v: sequence %d, table %d, catch-up mark %d above %d, high-water %d, done %v",
				attempts, delay, cp.Seq, cp.Table, cp.CatchUpTable, cp.CatchUpHighWater, cp.HighWater, cp.Done)
			d.Close()
			if cp.Seq == lastSeq {
				whole += whole / 2
				t.Logf("attempt %d committed nothing: the machine runs slower than the measured run; kills now within %v..%v", attempts, whole/10, whole/3)
			}
			lastSeq = cp.Seq
		}
	}
	if done.Result.State != syncer.StateCompleted {
		t.Fatalf("no completion after %d attempts, %d of them killed", attempts, kills)
	}
	src, dst := openStore(t, srcPath), openStore(t, dstPath)
	want, err := readReplica(context.Background(), src, tp.identity)
	if err != nil {
		t.Fatal(err)
	}
	if err := want.check(context.Background(), dst, tp.identity); err != nil {
		t.Fatal(err)
	}

	// One uninterrupted run of the final source, for the measure.
	refDir := t.TempDir()
	refSrc, refDst := filepath.Join(refDir, "src.sqlite"), filepath.Join(refDir, "dst.sqlite")
	src.Close()
	if err := copyStore(srcPath, refSrc); err != nil {
		t.Fatal(err)
	}
	if err := copyStore(filepath.Join(tp.dir, "dst.sqlite"), refDst); err != nil {
		t.Fatal(err)
	}
	ref := push(t, openStore(t, refSrc), openStore(t, refDst), tp.identity, syncer.Options{MaxRows: crashMaxRows})

	total := done.Result.Checkpoint.Seq
	factor := float64(total) / float64(ref.Pages)
	t.Logf("kill loop: %d attempts (%d killed), %d pages committed in all, one uninterrupted run %d: factor %.2f",
		attempts+1, kills, total, ref.Pages, factor)
	if bound := ref.Pages + 2*int64(attempts+1); total > bound {
		t.Fatalf("%d pages committed over %d attempts; one run takes %d, so want at most %d (factor %.2f)",
			total, attempts+1, ref.Pages, bound, factor)
	}
}

// timeSyncChild runs one whole push in a child on copies of the templates and returns how
// long its run took, from its ready line to its result.
func timeSyncChild(t *testing.T, tp templates, dir string) time.Duration {
	t.Helper()
	sub := filepath.Join(dir, "timing")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	srcPath, dstPath := tp.copyTo(t, sub)
	var took time.Duration
	for range 3 { // the shortest of three: the machine is shared
		if err := copyStore(filepath.Join(tp.dir, "dst.sqlite"), dstPath); err != nil {
			t.Fatal(err)
		}
		os.Remove(dstPath + "-wal")
		began := time.Now()
		res, killed := runKilledChild(t, crashTask{Src: srcPath, Dst: dstPath, Identity: tp.identity}, time.Hour)
		if killed || res.Result.State != syncer.StateCompleted {
			t.Fatalf("timing run: %+v", res)
		}
		if d := time.Since(began) - res.startup; took == 0 || d < took {
			took = d
		}
	}
	return took
}

// runSyncChild runs task in a child that must exit on its own, and returns its result.
func runSyncChild(t *testing.T, task crashTask) childResult {
	t.Helper()
	res, killed := runKilledChild(t, task, time.Hour)
	if killed {
		t.Fatal("child killed")
	}
	return res.childResult
}

// runKilledChild starts task in a child and kills it with SIGKILL delay after it says it
// is ready, unless it has ended by then. It returns the child's result and whether it was
// killed; a child that fails otherwise fails the test.
func runKilledChild(t *testing.T, task crashTask, delay time.Duration) (res childResultTimed, killed bool) {
	t.Helper()
	cmd := crash.Command(t, crash.Point{}, task)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			t.Errorf("child's output: %v", err)
		}
		// Drained past a line the scanner refused, so that the child never blocks on a full pipe.
		if _, err := io.Copy(io.Discard, stdout); err != nil {
			t.Errorf("drain the child's output: %v", err)
		}
	}()
	var out []string
	var timer <-chan time.Time
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			out = append(out, line)
			if line == readyMarker {
				res.startup = time.Since(began)
				timer = time.After(delay)
			}
			if text, ok := strings.CutPrefix(line, resultMarker); ok {
				if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &res.childResult); err != nil {
					t.Fatalf("child's result %q: %v", text, err)
				}
			}
		case <-timer:
			cmd.Process.Signal(syscall.SIGKILL)
			killed, timer = true, nil
		}
	}
	err = cmd.Wait()
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Fatalf("child raced:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && killed {
			return res, true
		}
	}
	if err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(out, "\n"), stderr.String())
	}
	return res, false // it finished before the kill landed
}

// childResultTimed is a child's result and how long it took to become ready.
type childResultTimed struct {
	childResult
	startup time.Duration
}
