// Package providertest is the one conformance suite every sync provider passes: the local
// SQLite store now, walletsync's HTTP provider and the wallet-toolbox StorageServer adapter
// when they land (restic's backend suite and Litestream's replica-client tests are the
// model). A provider's test file builds a Harness and calls Run.
package providertest

import (
	"context"
	"errors"
	"testing"

	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// Harness makes fresh providers for each case; every call returns independent stores.
type Harness struct {
	// NewSource returns a source on the test chain that holds a wallet (every table
	// non-empty) for the returned identity.
	NewSource func(t *testing.T) (src wallet.Source, identity string)
	// NewDestination returns an empty destination on chain, and a Source reading the same
	// store (for checking what landed).
	NewDestination func(t *testing.T, chain wallet.Chain) (wallet.Destination, wallet.Source)
}

// Run runs every case of the suite.
func Run(t *testing.T, h Harness) {
	t.Run("Source", func(t *testing.T) { runSource(t, h) })
	t.Run("Destination", func(t *testing.T) { runDestination(t, h) })
	t.Run("Session", func(t *testing.T) { runSession(t, h) })
}

// RunSource runs the Source cases alone, for a store that is a source but not a
// destination; they need only Harness.NewSource.
func RunSource(t *testing.T, h Harness) { runSource(t, h) }

func runSource(t *testing.T, h Harness) {
	t.Run("PagesAreCompleteAtEveryPageSize", func(t *testing.T) {
		src, id := h.NewSource(t)
		want, err := compare.Read(t.Context(), src, id, compare.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rows := range []int{1, 3, wallet.MaxPageRows} {
			v := openView(t, src)
			n := 0
			for _, tb := range wallet.SyncOrder {
				got := len(readTable(t, v, tb, id, wallet.Limits{Rows: rows, Bytes: wallet.MaxPageBytes}))
				if got != len(want[tb.Name]) {
					t.Errorf("%d-row pages of %s: %d rows, want %d", rows, tb.Name, got, len(want[tb.Name]))
				}
				n += got
			}
			v.Close()
			if n == 0 {
				t.Fatal("the source holds no rows")
			}
		}
	})
	t.Run("CursorOfAnotherViewRefused", func(t *testing.T) {
		src, id := h.NewSource(t)
		v := openView(t, src)
		p, err := v.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableTxLabels, IdentityKey: id, Limits: wallet.Limits{Rows: 1}})
		if err != nil || p.Done {
			t.Fatalf("first page: %+v, %v", p, err)
		}
		v.Close()
		w := openView(t, src)
		defer w.Close()
		if _, err := w.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableTxLabels, IdentityKey: id, After: p.Next}); !errors.Is(err, wallet.ErrCursorMismatch) {
			t.Fatalf("old cursor on a new view: err = %v, want ErrCursorMismatch", err)
		}
		if _, err := w.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: id, After: p.Next}); !errors.Is(err, wallet.ErrCursorMismatch) {
			t.Fatalf("cursor of another table: err = %v, want ErrCursorMismatch", err)
		}
	})
	t.Run("InvalidLimitsRefused", func(t *testing.T) {
		src, id := h.NewSource(t)
		v := openView(t, src)
		defer v.Close()
		if _, err := v.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: id, Limits: wallet.Limits{Rows: wallet.MaxPageRows + 1}}); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Fatalf("too many rows: err = %v", err)
		}
	})
}

// batchOf builds the first batch of a session: one page of the user row.
func batchOf(t *testing.T, src wallet.Source, id string, seq int64) wallet.Batch {
	t.Helper()
	settings, _, err := src.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	v := openView(t, src)
	defer v.Close()
	p, err := v.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: id})
	if err != nil {
		t.Fatal(err)
	}
	key := wallet.SessionKey{SourceStorage: settings.StorageIdentityKey, IdentityKey: id}
	return wallet.Batch{Chain: settings.Chain, Expect: seq - 1, Active: wallet.KeepSourceActive, Page: p,
		Checkpoint: wallet.Checkpoint{Session: key, Seq: seq, Mode: wallet.ModeFull, Table: 0, Cursor: p.Next, View: v.ID()}}
}

func runDestination(t *testing.T, h Harness) {
	t.Run("BeginOnAFreshDestination", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, _ := h.NewDestination(t, wallet.ChainTest)
		b := batchOf(t, src, id, 1)
		st, err := dst.Begin(t.Context(), b.Checkpoint.Session)
		if err != nil {
			t.Fatal(err)
		}
		if st.Checkpoint.Seq != 0 || st.Checkpoint.Session != b.Checkpoint.Session || st.Settings.Chain != wallet.ChainTest {
			t.Fatalf("fresh destination: %+v", st)
		}
	})
	t.Run("CommitIsDurableAndAcknowledged", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, _ := h.NewDestination(t, wallet.ChainTest)
		b := batchOf(t, src, id, 1)
		ack, err := dst.Commit(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		if err := ack.Match(b); err != nil || ack.Duplicate {
			t.Fatalf("ack %+v: %v", ack, err)
		}
		cp, err := dst.Checkpoint(t.Context(), b.Checkpoint.Session)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Seq != 1 || cp.Cursor != b.Checkpoint.Cursor || cp.View != b.Checkpoint.View {
			t.Fatalf("durable checkpoint %+v, want the committed one", cp)
		}
	})
	t.Run("RepeatedBatchAcknowledgedAsDuplicate", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, _ := h.NewDestination(t, wallet.ChainTest)
		b := batchOf(t, src, id, 1)
		if _, err := dst.Commit(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		ack, err := dst.Commit(t.Context(), b)
		if err != nil || !ack.Duplicate || ack.Inserts != 0 || ack.Updates != 0 || ack.Match(b) != nil {
			t.Fatalf("the same batch again: %+v, %v; want a duplicate acknowledgement that applied nothing", ack, err)
		}
	})
	t.Run("CompareAndSetRefusesStaleBatches", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, _ := h.NewDestination(t, wallet.ChainTest)
		first := batchOf(t, src, id, 1)
		if _, err := dst.Commit(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		second := first
		second.Expect, second.Checkpoint.Seq, second.Checkpoint.Cursor = 1, 2, "moved"
		if _, err := dst.Commit(t.Context(), second); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string]wallet.Batch{"an older batch": first, "a batch expecting a sequence never reached": func() wallet.Batch {
			b := second
			b.Expect, b.Checkpoint.Seq = 7, 8
			return b
		}()} {
			if _, err := dst.Commit(t.Context(), b); !errors.Is(err, wallet.ErrCheckpointConflict) {
				t.Errorf("%s: err = %v, want ErrCheckpointConflict", name, err)
			}
		}
		if cp, _ := dst.Checkpoint(t.Context(), first.Checkpoint.Session); cp.Seq != 2 || cp.Cursor != "moved" {
			t.Fatalf("a refused batch moved the checkpoint: %+v", cp)
		}
	})
	t.Run("OtherChainRefusedBeforeWriting", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, view := h.NewDestination(t, wallet.ChainMain)
		b := batchOf(t, src, id, 1)
		if _, err := dst.Commit(t.Context(), b); !errors.Is(err, wallet.ErrWrongChain) {
			t.Fatalf("test-chain batch at a main-chain destination: err = %v, want ErrWrongChain", err)
		}
		if cp, _ := dst.Checkpoint(t.Context(), b.Checkpoint.Session); cp.Seq != 0 {
			t.Fatalf("the refused batch left a checkpoint: %+v", cp)
		}
		assertNoUser(t, view, id)
	})
	t.Run("MalformedBatchRefused", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, _ := h.NewDestination(t, wallet.ChainTest)
		b := batchOf(t, src, id, 1)
		b.Expect = 5 // does not precede Seq 1
		if _, err := dst.Commit(t.Context(), b); !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Fatalf("sequence out of step: err = %v, want ErrInvalidArgument", err)
		}
	})
}

func runSession(t *testing.T, h Harness) {
	t.Run("FullThenUnchanged", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, view := h.NewDestination(t, wallet.ChainTest)
		res, err := syncer.Run(t.Context(), src, dst, id, syncer.Options{MaxRows: 17, Active: wallet.KeepSourceActive})
		if err != nil || res.State != syncer.StateCompleted || !res.Checkpoint.Done {
			t.Fatalf("sync: %+v, %v", res, err)
		}
		compare.SameWallet(t, src, view, id)
		again, err := syncer.Run(t.Context(), src, dst, id, syncer.Options{Active: wallet.KeepSourceActive})
		if err != nil || again.Kind != syncer.KindUnchanged || again.Requests != 1 || again.Pages != 0 {
			t.Fatalf("re-sync of an unchanged wallet: %+v, %v; want one request, no page", again, err)
		}
	})
	t.Run("MirrorTakesWhatMergeKeeps", func(t *testing.T) { runMirror(t, h) })
	t.Run("ChainMismatchWritesNothing", func(t *testing.T) {
		src, id := h.NewSource(t)
		dst, view := h.NewDestination(t, wallet.ChainMain)
		_, err := syncer.Run(t.Context(), src, dst, id, syncer.Options{Active: wallet.KeepSourceActive})
		if !errors.Is(err, wallet.ErrWrongChain) {
			t.Fatalf("sync across chains: err = %v, want ErrWrongChain", err)
		}
		assertNoUser(t, view, id)
	})
}

// runMirror checks wallet.Batch.Mirror: after a full sync, the source's first proof request
// moves on (another status, more attempts) and a transaction's description is rewritten,
// both keeping their updated_at (a write in the same millisecond as the one before it).
// BRC-40's merge keeps the stored rows (its status rule, and "strictly newer wins"); an
// exact copy takes every column.
func runMirror(t *testing.T, h Harness) {
	limits := wallet.Limits{Rows: 1, Bytes: wallet.MaxPageBytes}
	for _, mirror := range []bool{false, true} {
		src, id := h.NewSource(t)
		dst, view := h.NewDestination(t, wallet.ChainTest)
		res, err := syncer.Run(t.Context(), src, dst, id, syncer.Options{Active: wallet.KeepSourceActive, Mirror: mirror})
		if err != nil {
			t.Fatalf("mirror %v: sync: %v", mirror, err)
		}
		v := openView(t, src)
		req := readTable(t, v, wallet.ProvenTxReqs, id, limits)[0]
		tx := readTable(t, v, wallet.Transactions, id, limits)[0]
		v.Close()
		rq, tt := wallet.ProvenTxReqs, wallet.Transactions
		status := "unmined"
		if req[rq.Col("status")] == status {
			status = "sending"
		}
		req[rq.Col("status")], req[rq.Col("attempts")] = status, req[rq.Col("attempts")].(int64)+3
		tx[tt.Col("description")] = "rewritten in the same millisecond"
		cp := res.Checkpoint
		for _, page := range []wallet.Page{{Table: rq.Name, Rows: []wallet.Row{req}}, {Table: tt.Name, Rows: []wallet.Row{tx}}} {
			next := cp
			next.Seq++
			b := wallet.Batch{Chain: wallet.ChainTest, Expect: cp.Seq, Checkpoint: next, Active: wallet.KeepSourceActive, Mirror: mirror, Page: page}
			ack, err := dst.Commit(t.Context(), b)
			if err != nil || ack.Match(b) != nil {
				t.Fatalf("mirror %v: commit %s: %+v, %v", mirror, page.Table, ack, err)
			}
			cp = ack.Checkpoint
		}
		v = openView(t, view)
		var gotStatus, gotDescription any
		for _, r := range readTable(t, v, rq, id, wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}) {
			if r[rq.Col("txid")] == req[rq.Col("txid")] {
				gotStatus = r[rq.Col("status")]
			}
		}
		for _, r := range readTable(t, v, tt, id, wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}) {
			if r[tt.Col("reference")] == tx[tt.Col("reference")] {
				gotDescription = r[tt.Col("description")]
			}
		}
		v.Close()
		taken := gotStatus == status && gotDescription == tx[tt.Col("description")]
		if taken != mirror {
			t.Errorf("mirror %v: the destination holds status %v and description %q after the source's %q and %q; want them taken only by an exact copy",
				mirror, gotStatus, gotDescription, status, tx[tt.Col("description")])
		}
	}
}

func assertNoUser(t *testing.T, view wallet.Source, id string) {
	t.Helper()
	v := openView(t, view)
	defer v.Close()
	if _, err := v.ReadPage(context.Background(), wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: id}); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("the destination holds the user after a refusal (read: %v)", err)
	}
}

func openView(t *testing.T, src wallet.Source) wallet.View {
	t.Helper()
	v, err := src.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readTable(t *testing.T, v wallet.View, tb *wallet.Table, id string, limits wallet.Limits) []wallet.Row {
	t.Helper()
	rows, err := compare.ReadTable(t.Context(), v, tb, id, limits)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
