package localstore

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"walletsync/testkit/toolboxpeer"
)

// TestMaintainJournal_BesideAnAppTransaction: a real toolbox transaction has read and not
// yet written when journal maintenance is due: maintenance sees it and writes nothing, and
// the transaction commits. Once it has, maintenance runs.
func TestMaintainJournal_BesideAnAppTransaction(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux lets walletsync see another process's transaction without disturbing it; elsewhere maintenance relies on quiet minutes alone (see the README)")
	}
	ctx := context.Background()
	path, id := toolboxCreate(t)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toolboxpeer.Run(t, nil, "fill", "--db", path, "--identity", id) // the app writes; the journal records it
	j := mustJournalState(t, s)
	if j.Entries == 0 {
		t.Fatal("the toolbox's writes left no journal entries")
	}

	app := toolboxpeer.StartAppTxn(t, path, id, "beside maintenance")
	if open, known, err := s.OtherTransactions(ctx); err != nil || !known || !open {
		t.Fatalf("other transactions: open %v, known %v, %v; want the app's seen", open, known, err)
	}
	version := mustWriteVersion(t, s) // the wallet has been quiet since
	res, err := s.MaintainJournal(ctx, JournalMaintenance{Through: j.HighWater, Batch: 5, Version: version})
	if !errors.Is(err, ErrNotQuiet) || res.Deleted != 0 {
		t.Fatalf("maintenance beside an open app transaction: %+v, %v; want ErrNotQuiet and nothing deleted", res, err)
	}
	if r := app.Finish(); !r.Committed {
		t.Fatalf("the app's transaction failed beside maintenance: %+v", r)
	}

	if open, _, err := s.OtherTransactions(ctx); err != nil || open {
		t.Fatalf("other transactions after the app committed: %v, %v", open, err)
	}
	j = mustJournalState(t, s)
	res, err = s.MaintainJournal(ctx, JournalMaintenance{Through: j.HighWater, Batch: 5, Batches: 1000, Version: mustWriteVersion(t, s)})
	if err != nil || res.Deleted != j.Entries || res.More {
		t.Fatalf("maintenance of a quiet wallet: %+v, %v; want all %d entries gone", res, err, j.Entries)
	}
}
