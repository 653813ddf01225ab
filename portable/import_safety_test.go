package portable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/crash"
	"walletsync/wallet"
)

// walletDigest hashes everything the wallet file at path holds, table by table and row by
// row, in SQLite's own exact form of each value (quote(): the type, every byte): the
// toolbox's tables, their AUTOINCREMENT counters, and walletsync's import journal, undo
// log, checkpoints and id maps. It leaves out the change journal, which records every change
// and its undoing by design (a sync destination must learn of both).
//
// skip names further tables to leave out.
func walletDigest(tb testing.TB, path string, skip ...string) string {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	var tables []string
	for _, n := range sqliteTables(tb, path, "NOT LIKE 'walletsync_journal%'") {
		if !slices.Contains(skip, n) {
			tables = append(tables, n)
		}
	}
	h := sha256.New()
	for _, table := range tables {
		rs, err := db.Query(fmt.Sprintf("SELECT * FROM %q", table))
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rs.Columns()
		rs.Close()
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = fmt.Sprintf("quote(%q)", c)
		}
		q := fmt.Sprintf("SELECT %s FROM %q", strings.Join(quoted, " || ',' || "), table)
		if table == "sqlite_sequence" {
			q += " WHERE name NOT LIKE 'walletsync_journal%'"
		}
		rs, err = db.Query(q)
		if err != nil {
			tb.Fatal(err)
		}
		var rows []string
		for rs.Next() {
			var r string
			if err := rs.Scan(&r); err != nil {
				tb.Fatal(err)
			}
			rows = append(rows, r)
		}
		rs.Close()
		slices.Sort(rows)
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", table, len(rows), strings.Join(rows, "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// otherIdentityBackup returns a backup of the small fixture's wallet under another
// identity: a copy of a wallet made for a second person, so that its transactions keep the
// references of the first (which are unique across a whole wallet).
func otherIdentityBackup(tb testing.TB) (file, identity string) {
	tb.Helper()
	src, _ := fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
	identity = localstore.FixtureIdentity(99)
	backuptest.Mutate(tb, src, fmt.Sprintf("UPDATE users SET identityKey = '%s'", identity))
	file, _ = backupFile(tb, src, identity)
	return file, identity
}

// TestImport_RefusesAnotherIdentity imports the backup of another user into a wallet: it is
// refused, with a typed error and the wallet byte-identical, unless asked for; the preview
// says so and goes on. Asked for, into a wallet whose transactions share the backup's
// references, the merge is refused for its conflicts, again before anything is written; into
// a wallet without them it merges, and the wallet then holds both identities.
func TestImport_RefusesAnotherIdentity(t *testing.T) {
	ctx := context.Background()
	file, other := otherIdentityBackup(t)
	dst, own := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	before, digest := fileHashes(t, dst), walletDigest(t, dst)
	opts := importOptions(t)

	_, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	var oi *wallet.OtherIdentityError
	if !errors.As(err, &oi) || !errors.Is(err, wallet.ErrOtherIdentity) || oi.Backup != other || !slices.Equal(oi.Wallet, []string{own}) {
		t.Fatalf("import of another identity: %v, want *wallet.OtherIdentityError", err)
	}
	if fileHashes(t, dst) != before {
		t.Fatal("the refused import changed the wallet file")
	}

	prev, err := Preview(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil || !prev.OtherIdentity || !slices.Equal(prev.WalletIdentities, []string{own}) {
		t.Fatalf("preview: other identity %v %v, %v", prev.OtherIdentity, prev.WalletIdentities, err)
	}
	if prev.ConflictTotal == 0 || prev.Conflicts[0].Table != wallet.TableTransactions || !slices.Equal(prev.Conflicts[0].Columns, []string{"reference"}) {
		t.Fatalf("preview conflicts: %d %+v", prev.ConflictTotal, prev.Conflicts)
	}

	opts.AllowOtherIdentity = true
	_, err = Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	var mc *wallet.MergeConflictError
	if !errors.As(err, &mc) || mc.Total != prev.ConflictTotal || !errors.Is(err, wallet.ErrMergeConflict) {
		t.Fatalf("import with conflicts: %v, want *wallet.MergeConflictError with %d", err, prev.ConflictTotal)
	}
	if walletDigest(t, dst) != digest {
		t.Fatal("the import refused for its conflicts changed the wallet")
	}
	if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
		t.Fatalf("the staging folder keeps %v", names)
	}

	// Without the shared references, the merge asked for goes in whole.
	backuptest.Mutate(t, dst, "UPDATE transactions SET reference = 'own-' || reference")
	res, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, nil)
	if err != nil || res.Inserts == 0 {
		t.Fatalf("import asked for: %+v, %v", res, err)
	}
	s := backuptest.Open(t, dst)
	defer s.Close()
	if ids, err := s.Identities(ctx); err != nil || !slices.Equal(ids, []string{own, other}) {
		t.Fatalf("identities after the merge: %v, %v", ids, err)
	}
}

// stopAfter returns a progress callback that cancels the import after n page commits.
func stopAfter(n int, cancel context.CancelFunc) func(ImportProgress) {
	commits := 0
	return func(p ImportProgress) {
		if p.Sync != nil && p.Sync.State == syncer.StateCommitted {
			if commits++; commits == n {
				cancel()
			}
		}
	}
}

// mergePages is how many pages an uninterrupted merge of file into a copy of target commits.
func mergePages(tb testing.TB, file string, target func(testing.TB) string, opts ImportOptions) int {
	tb.Helper()
	n := 0
	_, err := Import(context.Background(), file, importPassword, Target{Path: target(tb)}, opts, func(p ImportProgress) {
		if p.Sync != nil && p.Sync.State == syncer.StateCommitted {
			n++
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// requireImportInProgress checks that the wallet at path says, everywhere a person looks,
// that it holds part of an unfinished merge: its info, a snapshot (what export and sync
// read), a sync into it, and the preview of another backup.
func requireImportInProgress(tb testing.TB, path, otherFile string) {
	tb.Helper()
	ctx := context.Background()
	s := backuptest.Open(tb, path)
	defer s.Close()
	info, err := s.Info(ctx)
	if err != nil || info.ImportInProgress == nil || info.ImportInProgress.State != wallet.ImportMerging {
		tb.Fatalf("wallet info of a wallet mid-merge: %+v, %v", info.ImportInProgress, err)
	}
	if _, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{}); !errors.Is(err, wallet.ErrImportInProgress) {
		tb.Fatalf("snapshot of a wallet mid-merge: %v, want ErrImportInProgress", err)
	}
	src, identity := fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
	from := backuptest.Open(tb, src)
	defer from.Close()
	if _, err := syncer.Run(ctx, from, s, identity, syncer.Options{Active: wallet.KeepDestinationActive}); !errors.Is(err, wallet.ErrImportInProgress) {
		tb.Fatalf("sync into a wallet mid-merge: %v, want ErrImportInProgress", err)
	}
	var busy *wallet.ImportInProgressError
	if _, err := Preview(ctx, otherFile, importPassword, Target{Store: s}, importOptions(tb), nil); !errors.As(err, &busy) {
		tb.Fatalf("preview of another backup into a wallet mid-merge: %v, want *wallet.ImportInProgressError", err)
	}
	// walletsync's other writers: the agent's foreground edits and a BRC-40 pull.
	w, err := localstore.Open(ctx, path, localstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	ids, err := w.Identities(ctx)
	if err != nil || len(ids) == 0 {
		tb.Fatalf("identities: %v, %v", ids, err)
	}
	if _, err := w.RecordTransaction(ctx, ids[0], wallet.NewTransaction{Satoshis: 1, Description: "during a merge"}); !errors.As(err, &busy) {
		tb.Fatalf("foreground write into a wallet mid-merge: %v, want *wallet.ImportInProgressError", err)
	}
	if err := w.AddLabel(ctx, ids[0], 1, "during a merge"); !errors.As(err, &busy) {
		tb.Fatalf("label edit in a wallet mid-merge: %v, want *wallet.ImportInProgressError", err)
	}
	st := backuptest.Settings(tb, w)
	if _, err := w.FindOrInsertSyncState(ctx, ids[0], st.StorageIdentityKey, "a producer"); !errors.As(err, &busy) {
		tb.Fatalf("BRC-40 sync state in a wallet mid-merge: %v, want *wallet.ImportInProgressError", err)
	}
}

// TestImport_AbandonLeavesTheWalletAsItWas stops a merge after each of its page commits in
// turn, and abandons it: the wallet, digested whole (every toolbox table, their counters,
// walletsync's import state), is exactly what it was before the import; meanwhile every
// command says the import is in progress. Into a wallet of the same user (rows inserted and
// updated), and of another user asked for (the user and its basket made by the first page).
func TestImport_AbandonLeavesTheWalletAsItWas(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	otherFile, _ := otherIdentityBackup(t)
	seedFour := func(tb testing.TB) string {
		p, _ := fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed+1)
		return p
	}
	for _, tc := range []struct {
		name        string
		file, other string
		target      func(testing.TB) string
		allow       bool
	}{
		{"same identity", file, otherFile, partialWallet, false},
		{"another identity", otherFile, file, seedFour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := importOptions(t)
			opts.AllowOtherIdentity = tc.allow
			pages := mergePages(t, tc.file, tc.target, opts)
			for stop := 1; stop < pages; stop++ {
				dst := tc.target(t)
				before := walletDigest(t, dst)
				ctx, cancel := context.WithCancel(context.Background())
				_, err := Import(ctx, tc.file, importPassword, Target{Path: dst}, opts, stopAfter(stop, cancel))
				cancel()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("stop after %d pages: %v", stop, err)
				}
				if stop == 1 || stop == pages-1 { // every command's refusal, at the first and the last stop
					requireImportInProgress(t, dst, tc.other)
				}
				recs, err := Abandon(context.Background(), Target{Path: dst}, opts)
				if err != nil || len(recs) != 1 || recs[0].State != wallet.ImportMerging {
					t.Fatalf("abandon after %d pages: %+v, %v", stop, recs, err)
				}
				if walletDigest(t, dst) != before {
					t.Fatalf("after %d of %d pages and abandon, the wallet differs from before the import", stop, pages)
				}
				if names := stagingFiles(t, opts.StagingDir); len(names) > 0 {
					t.Fatalf("abandon left %v in the staging folder", names)
				}
				if _, err := Abandon(context.Background(), Target{Path: dst}, opts); !errors.Is(err, wallet.ErrNotFound) {
					t.Fatalf("abandon again: %v, want ErrNotFound", err)
				}
			}
		})
	}
}

// TestImport_AbandonRefusedAfterTheWalletAppWrote stops a merge half-way, lets another
// program (the wallet app, here plain SQL on its own connection) write the wallet, and
// abandons: the abandon is refused with a *wallet.WalletChangedError and undoes nothing,
// because replaying the undo log would overwrite or orphan the app's rows; importing the
// same file again still finishes the merge, keeping the app's write.
func TestImport_AbandonRefusedAfterTheWalletAppWrote(t *testing.T) {
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	opts := importOptions(t)
	// Stopped before its last page, the merge has written rows an abandon would undo (its
	// first pages find the same proofs and baskets, and write nothing).
	stop := mergePages(t, file, partialWallet, opts) - 1
	for _, tc := range []struct {
		name string
		app  string // what the app writes while the merge is unfinished
		want int64
	}{
		{"a new basket", "INSERT INTO output_baskets (created_at, updated_at, userId, name, numberOfDesiredUTXOs, minimumDesiredUTXOValue, isDeleted) " +
			"SELECT created_at, updated_at, userId, 'app basket', 6, 10000, 0 FROM users LIMIT 1", 1},
		{"an edit of a merged row", "UPDATE transactions SET description = 'edited by the app' WHERE transactionId = (SELECT max(transactionId) FROM transactions)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := partialWallet(t)
			ctx, cancel := context.WithCancel(context.Background())
			_, err := Import(ctx, file, importPassword, Target{Path: dst}, opts, stopAfter(stop, cancel))
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("merge stopped after %d pages: %v", stop, err)
			}
			backuptest.Mutate(t, dst, tc.app)
			before := walletDigest(t, dst)
			_, err = Abandon(context.Background(), Target{Path: dst}, opts)
			var changed *wallet.WalletChangedError
			if !errors.As(err, &changed) || !errors.Is(err, wallet.ErrWalletChangedSinceImport) || changed.Changes != tc.want {
				t.Fatalf("abandon after the app wrote: %v, want *wallet.WalletChangedError with %d changes", err, tc.want)
			}
			if walletDigest(t, dst) != before {
				t.Fatal("the refused abandon changed the wallet")
			}
			if _, err := Import(context.Background(), file, importPassword, Target{Path: dst}, opts, nil); err != nil {
				t.Fatalf("finish the import: %v", err)
			}
			s := backuptest.Open(t, dst)
			defer s.Close()
			if err := s.ImportInProgress(context.Background()); err != nil {
				t.Fatalf("after finishing: %v", err)
			}
		})
	}
}

// crashOutcome is what one counting crash child did.
type crashOutcome struct {
	commits int    // durable page commits it made
	killed  bool   // it died by SIGKILL at its boundary
	end     string // its import's result when it ended without a crash
}

// runCountingChild runs a counting crash child (importCrashTask.Count) to its end.
func runCountingChild(t *testing.T, p crash.Point, task importCrashTask) crashOutcome {
	t.Helper()
	task.Count = true
	cmd := crash.Command(t, p, task)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var o crashOutcome
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == importCommitMarker:
			o.commits++
		case strings.HasPrefix(line, importEndMarker):
			o.end = strings.TrimSpace(strings.TrimPrefix(line, importEndMarker))
		}
	}
	var ee *exec.ExitError
	o.killed = errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	if !o.killed && (err != nil || !strings.HasPrefix(string(out[strings.LastIndex(strings.TrimSpace(string(out)), "\n")+1:]), importEndMarker)) {
		t.Fatalf("child (%s): %v\n%s\n%s", p, err, out, stderr.String())
	}
	return o
}

// TestImport_KilledMergeFinishesOrAbandons kills real import processes with SIGKILL at
// random durable points of a merge (the document staged, a page written but not committed, a
// page committed but not acknowledged, the journal done), again and again. After every kill
// the wallet is either untouched (the toolbox's tables as before) or says everywhere that an
// import is in progress; imported again it ends as one uninterrupted merge, each attempt
// having committed at most one whole merge's pages (the factor over all attempts is logged);
// abandoned, it is digest-for-digest what it was before the import.
func TestImport_KilledMergeFinishesOrAbandons(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	src, identity := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, identity)
	otherFile, _ := otherIdentityBackup(t)
	want := cleanMerge(t, file, identity)
	staging := filepath.Join(t.TempDir(), "staging")
	base := runCountingChild(t, crash.Point{At: "never", N: 1}, importCrashTask{File: file, Target: partialWallet(t), Staging: staging, Mode: wallet.ImportMerge})
	if base.killed || base.end != "<nil>" || base.commits == 0 {
		t.Fatalf("uninterrupted merge: %+v", base)
	}
	points := []string{hookStaged, hookRowsWritten, hookCommitted, hookCommitted, hookDone}
	kill := func(target, staging string) crashOutcome {
		at := points[rng.IntN(len(points))]
		n := 1
		if at == hookRowsWritten || at == hookCommitted {
			n = 1 + rng.IntN(base.commits)
		}
		return runCountingChild(t, crash.Point{At: at, N: n}, importCrashTask{File: file, Target: target, Staging: staging, Mode: wallet.ImportMerge})
	}
	// checkAfterKill checks that the wallet is untouched or says the import is in progress.
	checkAfterKill := func(target, toolboxBefore string) {
		s := backuptest.Open(t, target)
		recs, err := s.UnfinishedImports(context.Background())
		s.Close()
		switch {
		case err != nil:
			t.Fatal(err)
		case slices.ContainsFunc(recs, func(r wallet.ImportRecord) bool { return r.State == wallet.ImportMerging }):
			requireImportInProgress(t, target, otherFile)
		case walletDigest(t, target, sqliteTables(t, target, "LIKE 'walletsync_%'")...) != toolboxBefore:
			if rec, _ := journalEntry(t, target, recsDigest(t, file)); rec.State != wallet.ImportDone {
				t.Fatalf("killed outside a merge (%+v), yet the wallet's toolbox tables changed", recs)
			}
		}
	}

	t.Run("finish", func(t *testing.T) {
		target := partialWallet(t)
		toolboxBefore := walletDigest(t, target, sqliteTables(t, target, "LIKE 'walletsync_%'")...)
		total, kills := 0, 0
		for {
			o := kill(target, staging)
			total += o.commits
			if !o.killed {
				if o.end != "<nil>" && !strings.Contains(o.end, ErrAlreadyImported.Error()) {
					t.Fatalf("the import ended with %s", o.end)
				}
				break
			}
			kills++
			if kills > 100*base.commits {
				t.Fatalf("%d kills and no end", kills)
			}
			checkAfterKill(target, toolboxBefore)
		}
		requireSameWallet(t, settledWallet(t, target, identity), want)
		if names := stagingFiles(t, staging); len(names) > 0 {
			t.Fatalf("the staging folder keeps %v", names)
		}
		t.Logf("%d kills; %d pages committed over all attempts, %d by one uninterrupted merge: factor %.2f",
			kills, total, base.commits, float64(total)/float64(base.commits))
		// A rerun resumes from the wallet's durable checkpoint only while the session keeps
		// its view; a new process opens a new view of the staging database, and syncer
		// then traverses it from the first page again (rows already merged count as
		// unchanged). So each attempt commits at most one whole merge.
		if total > (kills+1)*base.commits {
			t.Fatalf("%d attempts committed %d pages, more than %d whole merges of %d", kills+1, total, kills+1, base.commits)
		}
	})

	t.Run("abandon", func(t *testing.T) {
		for range 6 {
			target, staging := partialWallet(t), filepath.Join(t.TempDir(), "staging")
			before := walletDigest(t, target)
			o := kill(target, staging)
			if !o.killed {
				continue // it ended; nothing to abandon
			}
			_, err := Abandon(context.Background(), Target{Path: target}, ImportOptions{StagingDir: staging, Open: testOpener(localstore.Options{})})
			if rec, jerr := journalEntry(t, target, recsDigest(t, file)); jerr == nil && rec.State == wallet.ImportDone {
				continue // killed after done: the import is complete, there is nothing to abandon
			}
			if err != nil {
				t.Fatal(err)
			}
			if walletDigest(t, target) != before {
				t.Fatal("after a kill and abandon, the wallet differs from before the import")
			}
			if names := stagingFiles(t, staging); len(names) > 0 {
				t.Fatalf("the staging folder keeps %v", names)
			}
		}
	})
}

// sqliteTables lists the tables of the wallet at path whose name matches cond, by name.
func sqliteTables(tb testing.TB, path, cond string) []string {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	rs, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name " + cond + " ORDER BY name")
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// recsDigest is the import journal's name for the document in file.
func recsDigest(tb testing.TB, file string) string {
	tb.Helper()
	sum, err := Verify(context.Background(), file, importPassword, importOptions(tb), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return sum.Digest
}
