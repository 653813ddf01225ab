package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// TestStore_Capabilities_ReadsBesideWriterOnlyInWAL checks that the promise follows the
// journal mode SQLite reports for the file, not the one Open asks for: a read-only open
// leaves a file's mode as it is, so a file in a rollback journal is opened without it.
func TestStore_Capabilities_ReadsBesideWriterOnlyInWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wallet.sqlite")
	s, err := Create(ctx, path, CreateOptions{Chain: wallet.ChainTest}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := s.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !caps.ReadsBesideWriter || caps.ConcurrentReads != MaxReaders {
		t.Fatalf("a store open for writing (WAL) advertises %+v, want reads beside a writer and %d readers", caps, MaxReaders)
	}
	if _, described, err := s.Describe(ctx); err != nil || described != caps {
		t.Fatalf("Describe capabilities %+v, %v; want %+v", described, err, caps)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := raw.QueryRow("PRAGMA journal_mode=DELETE").Scan(&mode); err != nil || mode != "delete" {
		t.Fatalf("switch the file to a rollback journal: %q, %v", mode, err)
	}
	raw.Close()

	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if caps, err = ro.Capabilities(ctx); err != nil {
		t.Fatal(err)
	}
	if caps.ReadsBesideWriter {
		t.Fatalf("a file in a rollback journal advertises %+v, want no reads beside a writer", caps)
	}
}

// TestStore_ReadsBesideCommitSeeWholePages pulls a wallet into a live one page by page, each
// commit under a background write grant of a queue made from the store's own capabilities,
// while readers take foreground and background read grants beside it and read every table's
// row count and the session's checkpoint sequence in one statement. Every state a reader sees
// must be one the wallet had between two commits (recorded after each commit, when nothing
// is in flight): rows of half a page, or rows without their page's checkpoint, would be a
// state never recorded. At the moment each page's rows are written and not yet committed, a
// foreground read granted beside that commit must see exactly the state before the page.
func TestStore_ReadsBesideCommitSeeWholePages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The first pages cover the proven transactions (32 KiB each), baskets, tags and the
	// first thousands of labels; the rest of the copy would only repeat them, slowly under -race.
	const stopAfter = 20
	errEnough := errors.New("enough pages")
	src := mustCreate(t, Options{})
	identity := mustSeed(t, src, FixtureToolbox, 5)

	var (
		dst      *Store
		q        *scheduler.Queue
		mu       sync.Mutex
		allowed  = map[string]bool{}
		last     string // the state after the last commit
		inCommit int    // reads made beside a commit, between its rows and its commit
	)
	// state reads the row count of every table and the checkpoint sequence in one statement,
	// so in one read transaction.
	state := func(ctx context.Context) (string, error) {
		var parts []string
		for _, tb := range wallet.AllTables {
			parts = append(parts, fmt.Sprintf("(SELECT count(*) FROM %s)", tb.Name))
		}
		parts = append(parts, "(SELECT coalesce(max(seq), 0) FROM "+checkpointTable+")")
		vals := make([]any, len(parts))
		counts := make([]int64, len(parts))
		for i := range counts {
			vals[i] = &counts[i]
		}
		if err := dst.readDB.QueryRowContext(ctx, "SELECT "+strings.Join(parts, ", ")).Scan(vals...); err != nil {
			return "", err
		}
		return fmt.Sprint(counts), nil
	}
	// readUnder takes a read grant on a session of its own, reads the state and releases.
	readUnder := func(ctx context.Context, class scheduler.Class) (string, error) {
		s := q.NewSession(identity, "local")
		g, err := s.Acquire(ctx, class, scheduler.Read)
		if err != nil {
			return "", err
		}
		defer s.Release(g)
		return state(ctx)
	}
	var hookErr error
	hook := func(point string) {
		if point != HookRowsWritten {
			return
		}
		// The commit holds its background write grant: this foreground read is granted beside
		// it, or the wait times out and the test fails.
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		got, err := readUnder(wctx, scheduler.Foreground)
		mu.Lock()
		defer mu.Unlock()
		inCommit++
		switch {
		case err != nil:
			hookErr = errors.Join(hookErr, fmt.Errorf("read beside commit %d: %w", inCommit, err))
		case got != last:
			hookErr = errors.Join(hookErr, fmt.Errorf("read beside commit %d saw %s, want the state before the page %s", inCommit, got, last))
		}
	}
	dst = mustCreate(t, Options{CommitHook: hook})
	caps, err := dst.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !caps.ReadsBesideWriter {
		t.Fatalf("a wallet open for writing advertises %+v, want reads beside a writer", caps)
	}
	if q, err = scheduler.New(caps, scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
	if last, err = state(ctx); err != nil {
		t.Fatal(err)
	}
	allowed[last] = true

	// Readers of both classes read the state over and over until the copy ends.
	var seen []string
	copyDone := make(chan struct{})
	var readers sync.WaitGroup
	readErrs := make(chan error, 4)
	for i := range 4 {
		class := scheduler.Foreground
		if i%2 == 1 {
			class = scheduler.Background
		}
		readers.Go(func() {
			for {
				select {
				case <-copyDone:
					return
				default:
				}
				got, err := readUnder(ctx, class)
				if err != nil {
					readErrs <- err
					return
				}
				mu.Lock()
				seen = append(seen, got)
				mu.Unlock()
				// A pause, so that four readers on two cores leave the copy its share.
				time.Sleep(time.Millisecond)
			}
		})
	}

	res, err := syncer.Run(ctx, src, dst, identity, syncer.Options{
		MaxRows: 1000, Active: wallet.KeepDestinationActive, Grants: q.NewSession(identity, "local"),
		Progress: func(p syncer.Progress) error {
			if p.State != syncer.StateCommitted {
				return nil
			}
			// The session commits nothing else until this returns, and readers write nothing.
			got, err := state(ctx)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			allowed[got], last = true, got
			if p.Pages == stopAfter {
				return errEnough
			}
			return nil
		},
	})
	close(copyDone)
	readers.Wait()
	close(readErrs)
	if !errors.Is(err, errEnough) {
		t.Fatalf("pull: %v, want it stopped after %d pages", err, stopAfter)
	}
	for err := range readErrs {
		t.Fatalf("reader: %v", err)
	}
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	if res.Pages != stopAfter || inCommit != stopAfter {
		t.Fatalf("%d pages, %d reads beside a commit; want %d of each", res.Pages, inCommit, stopAfter)
	}
	for _, got := range seen {
		if !allowed[got] {
			t.Fatalf("a reader saw %s, a state between two commits never had (%d states recorded)", got, len(allowed))
		}
	}
	t.Logf("%d pages of up to 1000 rows; %d reads beside commits, %d concurrent reads, all of whole pages", res.Pages, inCommit, len(seen))
}
