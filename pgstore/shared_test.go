package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"walletsync/pgstore"
	"walletsync/wallet"
)

// quotas is an admit of at most perIdentity views per identity and all in all.
func quotas(perIdentity, all int) func(int, int) error {
	return func(mine, total int) error {
		if mine >= perIdentity || total >= all {
			return fmt.Errorf("quota: %d of the identity's, %d in all: %w", mine, total, wallet.ErrServerBusy)
		}
		return nil
	}
}

// countIn counts the scratch table's rows in the view's snapshot, as the process s serves
// a page.
func countIn(t *testing.T, s *pgstore.Store, identity, handle string) (int, error) {
	t.Helper()
	var n int
	err := s.ReadPlainView(t.Context(), identity, handle, func(tx pgx.Tx) error {
		return tx.QueryRow(t.Context(), "SELECT count(*) FROM scratch").Scan(&n)
	})
	return n, err
}

// eventually polls cond until it holds, failing the test after a bound far above the
// reaper's interval (never an assertion on how long it took).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 600 {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: never", what)
}

// twoProcesses opens two stores over one new database with a scratch table of one row:
// two server processes, each with its own pool and its own held views.
func twoProcesses(t *testing.T) (url string, a, b *pgstore.Store) {
	t.Helper()
	url = cluster.NewDatabase(t)
	a, b = openPG(t, url), openPG(t, url)
	exec(t, url, "CREATE TABLE scratch (x int); INSERT INTO scratch VALUES (1)")
	return url, a, b
}

// A view opened by one process reads the same rows through the other and through itself,
// whatever commits after it opened; a new read outside it sees the commit.
func TestSharedViews_ConsistentAcrossProcesses(t *testing.T) {
	t.Parallel()
	url, a, b := twoProcesses(t)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, quotas(1, 8))
	if err != nil {
		t.Fatal(err)
	}
	exec(t, url, "INSERT INTO scratch VALUES (2), (3)")
	for name, s := range map[string]*pgstore.Store{"owner": a, "other": b} {
		if n, err := countIn(t, s, "alice", h); err != nil || n != 1 {
			t.Fatalf("%s reads %d rows in the view (%v), want the 1 it opened on", name, n, err)
		}
	}
	if n := count(t, url, "SELECT count(*) FROM scratch"); n != 3 {
		t.Fatalf("outside the view: %d rows", n)
	}
	if a.HeldViews() != 1 || b.HeldViews() != 0 {
		t.Fatalf("held: owner %d, other %d", a.HeldViews(), b.HeldViews())
	}
}

// Handles answer only their identity: another identity's handle and an unknown one get
// the same ErrSnapshotClosed, on both processes.
func TestSharedViews_OtherIdentityIsClosed(t *testing.T) {
	t.Parallel()
	_, a, b := twoProcesses(t)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, quotas(1, 8))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*pgstore.Store{a, b} {
		for _, tc := range []struct{ identity, handle string }{{"mallory", h}, {"alice", "0123456789abcdef0123456789abcdef"}} {
			if _, err := countIn(t, s, tc.identity, tc.handle); !errors.Is(err, wallet.ErrSnapshotClosed) {
				t.Fatalf("%s reading %.8s: %v, want ErrSnapshotClosed", tc.identity, tc.handle, err)
			}
		}
		if err := s.ClosePlainView(t.Context(), "mallory", h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := countIn(t, b, "alice", h); err != nil {
		t.Fatalf("another identity's close closed alice's view: %v", err)
	}
}

// One read of a view at a time, counted over every process: a read through the owner
// while the other process reads is refused with ErrConcurrentRead, and admitted after.
func TestSharedViews_OneReadAtATime(t *testing.T) {
	t.Parallel()
	_, a, b := twoProcesses(t)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, quotas(1, 8))
	if err != nil {
		t.Fatal(err)
	}
	inside, leave := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- b.ReadPlainView(context.WithoutCancel(t.Context()), "alice", h, func(pgx.Tx) error {
			close(inside)
			<-leave
			return nil
		})
	}()
	<-inside
	if _, err := countIn(t, a, "alice", h); !errors.Is(err, wallet.ErrConcurrentRead) {
		t.Fatalf("a second read while one is in flight elsewhere: %v", err)
	}
	close(leave)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := countIn(t, a, "alice", h); err != nil {
		t.Fatalf("a read after the other ended: %v", err)
	}
}

// Quotas count the views of every process: with one view per identity and two in all,
// alice's second view is refused on the other process, the server's third on either; a
// close through the process that does not hold the view frees its quota at once.
func TestSharedViews_QuotasAcrossProcesses(t *testing.T) {
	t.Parallel()
	_, a, b := twoProcesses(t)
	q := quotas(1, 2)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenPlainView(t.Context(), "alice", time.Minute, q); !errors.Is(err, wallet.ErrServerBusy) {
		t.Fatalf("alice's second view, on the other process: %v", err)
	}
	if _, err := b.OpenPlainView(t.Context(), "bob", time.Minute, q); err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenPlainView(t.Context(), "carol", time.Minute, q); !errors.Is(err, wallet.ErrServerBusy) {
		t.Fatalf("the server's third view: %v", err)
	}
	if a.HeldViews() != 1 || b.HeldViews() != 1 {
		t.Fatalf("held: %d and %d, want 1 and 1 (a refused open holds nothing)", a.HeldViews(), b.HeldViews())
	}
	if err := b.ClosePlainView(t.Context(), "alice", h); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenPlainView(t.Context(), "carol", time.Minute, q); err != nil {
		t.Fatalf("after alice's close: %v", err)
	}
}

// A view closed through the process that does not hold it is refused at once everywhere,
// and its owner releases it (its connection, its row) at its reaper's next poll.
func TestSharedViews_CloseThroughOtherReleasedByOwner(t *testing.T) {
	t.Parallel()
	url, a, b := twoProcesses(t)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, quotas(1, 8))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ClosePlainView(t.Context(), "alice", h); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*pgstore.Store{a, b} {
		if _, err := countIn(t, s, "alice", h); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("a read after the close: %v", err)
		}
	}
	eventually(t, "the owner releases the view closed elsewhere", func() bool {
		return a.HeldViews() == 0 && count(t, url, "SELECT count(*) FROM walletsync_views") == 0 &&
			count(t, url, fmt.Sprintf("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %d", pgstore.HeldLocks)) == 0
	})
}

// A view past its lifetime is refused with ErrSnapshotExpired on every process, and its
// owner releases it.
func TestSharedViews_Expiry(t *testing.T) {
	t.Parallel()
	url, a, b := twoProcesses(t)
	h, err := a.OpenPlainView(t.Context(), "alice", 300*time.Millisecond, quotas(1, 8))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the view expires", func() bool {
		_, err := countIn(t, b, "alice", h)
		if err != nil && !errors.Is(err, wallet.ErrSnapshotExpired) && !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("read: %v", err)
		}
		return err != nil
	})
	eventually(t, "the owner releases the expired view", func() bool {
		return a.HeldViews() == 0 && count(t, url, "SELECT count(*) FROM walletsync_views") == 0
	})
}

// The owner's death (its backend ended, as when its process is killed): a read through
// the other process is refused with ErrSnapshotExpired, the dead view no longer counts
// against the quotas, and its row is deleted.
func TestSharedViews_OwnerGone(t *testing.T) {
	t.Parallel()
	url, a, b := twoProcesses(t)
	q := quotas(1, 8)
	h, err := a.OpenPlainView(t.Context(), "alice", time.Minute, q)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, url, fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = %d", pgstore.HeldLocks))
	eventually(t, "the owner's backend ends", func() bool {
		return count(t, url, fmt.Sprintf("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %d", pgstore.HeldLocks)) == 0
	})
	if _, err := countIn(t, b, "alice", h); !errors.Is(err, wallet.ErrSnapshotExpired) {
		t.Fatalf("a read of a dead owner's view: %v, want ErrSnapshotExpired", err)
	}
	h2, err := b.OpenPlainView(t.Context(), "alice", time.Minute, q)
	if err != nil {
		t.Fatalf("alice's new view after her old one's owner died: %v", err)
	}
	if n := count(t, url, "SELECT count(*) FROM walletsync_views"); n != 1 {
		t.Fatalf("%d rows of views, want the new one only", n)
	}
	if n, err := countIn(t, a, "alice", h2); err != nil || n != 1 {
		t.Fatalf("the new view through the first process: %d, %v", n, err)
	}
}
