package syncer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

func TestRun_InvalidOptionsRefusedBeforeWork(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 1)
	dst := newStore(t, wallet.ChainTest)
	tests := []struct {
		name string
		opts syncer.Options
	}{
		{"rows above 1000", syncer.Options{MaxRows: 1001, Active: wallet.KeepSourceActive}},
		{"negative rows", syncer.Options{MaxRows: -1, Active: wallet.KeepSourceActive}},
		{"bytes above 10,000,000", syncer.Options{MaxBytes: 10_000_001, Active: wallet.KeepSourceActive}},
		{"negative bytes", syncer.Options{MaxBytes: -3, Active: wallet.KeepSourceActive}},
		{"lifetime above an hour", syncer.Options{SnapshotLifetime: 2 * time.Hour, Active: wallet.KeepSourceActive}},
		{"no active-storage policy", syncer.Options{}},
		{"negative retries", syncer.Options{Retries: -1, Active: wallet.KeepSourceActive}},
		{"bulk pages with access grants", syncer.Options{Bulk: true, Grants: &scheduler.Session{}, Active: wallet.KeepSourceActive}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("Validate: %v; want the refusal Run gives", err)
			}
			res, err := syncer.Run(context.Background(), src, dst, id, tt.opts)
			if !errors.Is(err, wallet.ErrInvalidArgument) || res.State != syncer.StateFailed || res.Requests != 0 {
				t.Fatalf("result %+v, err %v; want a refusal before any request", res, err)
			}
		})
	}
	if _, err := syncer.Run(context.Background(), src, dst, "", syncer.Options{Active: wallet.KeepSourceActive}); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("empty identity: err = %v", err)
	}
	// The limits at the edges are accepted, and zero values stand for the defaults.
	for _, o := range []syncer.Options{{MaxRows: 1, MaxBytes: 10_000_000, Active: wallet.KeepSourceActive}, {Active: wallet.KeepDestinationActive}} {
		if err := o.Validate(); err != nil {
			t.Fatalf("Validate(%+v): %v", o, err)
		}
	}
	push(t, src, dst, id, syncer.Options{MaxRows: 1, MaxBytes: 10_000_000})
}

func TestRun_LargeRowTravelsAlone(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 1)
	if _, err := src.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 1, RawTx: make([]byte, 3<<20)}); err != nil {
		t.Fatal(err)
	}
	dst := newStore(t, wallet.ChainTest)
	var alone bool
	res := push(t, src, dst, id, syncer.Options{MaxBytes: 64 << 10, Progress: func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted && p.Table == wallet.TableTransactions && p.PageRows == 1 && p.PageBytes > 6<<20 {
			alone = true
		}
		return nil
	}})
	if !alone || res.State != syncer.StateCompleted {
		t.Fatalf("the 3 MiB transaction did not travel alone in a one-row page: %+v", res)
	}
	mustEqual(t, src, dst, id)
}

func TestRun_RowOverFrameCeilingRefused(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 1)
	hugeID, err := src.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 1, RawTx: make([]byte, 33<<20)})
	if err != nil {
		t.Fatal(err)
	}
	dst := newStore(t, wallet.ChainTest)
	res, err := syncer.Run(context.Background(), src, dst, id, syncer.Options{Active: wallet.KeepSourceActive})
	var big *wallet.RowTooLargeError
	if !errors.As(err, &big) || big.Table != wallet.TableTransactions || big.Key[0] != hugeID || res.State != syncer.StateFailed {
		t.Fatalf("sync of a 66 MiB row: %+v, err %v; want a *RowTooLargeError naming transaction %d", res, err, hugeID)
	}
	// Nothing skipped it: the checkpoint stands before the transactions table's huge row, and
	// the next run fails at the same row again.
	cp, _ := dst.Checkpoint(context.Background(), res.Checkpoint.Session)
	if cp.Done || cp.Table > 5 || cp != res.Checkpoint {
		t.Fatalf("checkpoint after the refusal: %+v", cp)
	}
	if _, err := syncer.Run(context.Background(), src, dst, id, syncer.Options{Active: wallet.KeepSourceActive}); !errors.As(err, &big) {
		t.Fatalf("second run: err = %v, want the same refusal", err)
	}
}

func TestRun_CancelStopsAtASafePointAndResumes(t *testing.T) {
	src, id := seeded(t, localstore.FixtureToolbox, 2)
	dst := newStore(t, wallet.ChainTest)
	ctx, cancel := context.WithCancel(context.Background())
	committed := 0
	res, err := syncer.Run(ctx, src, dst, id, syncer.Options{MaxRows: 100, Active: wallet.KeepSourceActive, Progress: func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted {
			if committed++; committed == 5 {
				cancel()
			}
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || res.State != syncer.StateCancelled || res.Pages != 5 {
		t.Fatalf("cancelled run: %+v, err %v; want cancelled after 5 acknowledged pages", res, err)
	}
	durable, _ := dst.Checkpoint(context.Background(), res.Checkpoint.Session)
	if durable != res.Checkpoint || durable.Seq != 5 || durable.Done {
		t.Fatalf("durable checkpoint %+v, result's %+v", durable, res.Checkpoint)
	}
	rest := push(t, src, dst, id, syncer.Options{})
	if rest.State != syncer.StateCompleted || rest.Checkpoint.Seq <= 5 {
		t.Fatalf("resumed run: %+v", rest)
	}
	mustEqual(t, src, dst, id)
}

func TestRun_ProgressErrorStopsKeepingAcknowledgedPages(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 4)
	dst := newStore(t, wallet.ChainTest)
	stop := errors.New("window closed")
	pages := 0
	res, err := syncer.Run(context.Background(), src, dst, id, syncer.Options{MaxRows: 2, Active: wallet.KeepSourceActive, Progress: func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted {
			if pages++; pages == 3 {
				return stop
			}
		}
		return nil
	}})
	if !errors.Is(err, stop) || res.State != syncer.StateFailed || res.Pages != 3 {
		t.Fatalf("result %+v, err %v; want failed with the callback's error after 3 pages", res, err)
	}
	if cp, _ := dst.Checkpoint(context.Background(), res.Checkpoint.Session); cp.Seq != 3 {
		t.Fatalf("acknowledged pages were lost: checkpoint %+v", cp)
	}
}

func TestRun_PullKeepsTheDestinationsActiveStorage(t *testing.T) {
	src, id := seeded(t, localstore.FixtureSmall, 5)
	local := newStore(t, wallet.ChainTest)
	ctx := context.Background()
	if _, _, err := local.EnsureUser(ctx, id); err != nil {
		t.Fatal(err)
	}
	active := func(s *localstore.Store) string {
		v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		p, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: id})
		if err != nil {
			t.Fatal(err)
		}
		return p.Rows[0][wallet.Users.Col("activeStorage")].(string)
	}
	before := active(local)
	if _, err := syncer.Run(ctx, src, local, id, syncer.Options{Active: wallet.KeepDestinationActive}); err != nil {
		t.Fatal(err)
	}
	if got := active(local); got != before {
		t.Fatalf("a pull switched the local active storage from %s to %s", before, got)
	}
	backup := newStore(t, wallet.ChainTest)
	push(t, src, backup, id, syncer.Options{})
	if got, want := active(backup), active(src); got != want {
		t.Fatalf("a push left the backup's active storage at %s, the source's is %s", got, want)
	}
}
