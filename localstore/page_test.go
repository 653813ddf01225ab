package localstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"walletsync/wallet"
)

// scanTable reads a table's rows for the user straight from SQL, in key order: what paging
// must reproduce.
func scanTable(tb testing.TB, s *Store, t *wallet.Table, identity string) []wallet.Row {
	tb.Helper()
	userID, err := lookupUser(context.Background(), s.readDB, identity)
	if err != nil {
		tb.Fatal(err)
	}
	from, where, args := scopeFilter(t, userID)
	rows, err := s.readDB.Query(fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s", joinQuoted("t.", t.ColumnNames()), from, where, joinQuoted("t.", t.Key)), args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []wallet.Row
	for rows.Next() {
		r := make(wallet.Row, len(t.Columns))
		dst := make([]any, len(r))
		for i := range r {
			dst[i] = &r[i]
		}
		if err := rows.Scan(dst...); err != nil {
			tb.Fatal(err)
		}
		if err := t.Normalize(r); err != nil {
			tb.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestReadPage_EqualsScanAtEveryPageSize(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 7)
	for _, limits := range []wallet.Limits{{Rows: 1}, {Rows: 2}, {Rows: 5}, {}, {Rows: 1000, Bytes: 2000}} {
		for _, tb := range wallet.AllTables {
			t.Run(fmt.Sprintf("%s/%d rows %d bytes", tb.Name, limits.Rows, limits.Bytes), func(t *testing.T) {
				v := openView(t, s, SnapshotOptions{})
				want := scanTable(t, s, tb, id)
				got := readAllSplittingBigRows(t, v, tb.Name, id, limits)
				v.Close()
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("paged %d rows, scanned %d; first difference at %d", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

// readAllSplittingBigRows pages a table, reading a row that does not fit alone, as a sync does.
func readAllSplittingBigRows(tb testing.TB, v *Snapshot, table wallet.TableName, identity string, limits wallet.Limits) []wallet.Row {
	tb.Helper()
	var out []wallet.Row
	var after wallet.Cursor
	for {
		p, err := readPage(v, table, identity, after, limits)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			p, err = readPage(v, table, identity, after, wallet.Limits{Rows: 1, Bytes: big.Charge})
		}
		if err != nil {
			tb.Fatalf("read %s: %v", table, err)
		}
		out = append(out, p.Rows...)
		if p.Done {
			return out
		}
		after = p.Next
	}
}

func firstDiff(a, b []wallet.Row) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestReadPage_RowOverBudgetRefusedNotSkipped(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	// A 2 MiB transaction between small ones.
	bigID, err := s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 1, RawTx: make([]byte, 2<<20), Description: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 2, Description: "after"}); err != nil {
		t.Fatal(err)
	}
	v := openView(t, s, SnapshotOptions{})
	tx := wallet.Transactions
	limits := wallet.Limits{Rows: 100, Bytes: 64 << 10}
	var after wallet.Cursor
	var ids []int64
	for {
		p, err := readPage(v, tx.Name, id, after, limits)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			if big.Key[0] != bigID || big.Charge < 4<<20 || big.Limit != limits.Bytes || big.Table != tx.Name {
				t.Fatalf("refusal = %+v, want the big row %d with its charge", big, bigID)
			}
			// Reading it alone, within its charge, works; the cursor did not move past it.
			p, err = readPage(v, tx.Name, id, after, wallet.Limits{Rows: 1, Bytes: big.Charge})
			if err != nil || len(p.Rows) != 1 || p.Rows[0][tx.Col("transactionId")] != bigID {
				t.Fatalf("one-row page of the big row: %v, %v", p.Rows, err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			ids = append(ids, r[tx.Col("transactionId")].(int64))
		}
		if p.Done {
			break
		}
		after = p.Next
	}
	want := scanTable(t, s, tx, id)
	if len(ids) != len(want) {
		t.Fatalf("paged %d transactions, the table has %d", len(ids), len(want))
	}
	for i, r := range want {
		if ids[i] != r[tx.Col("transactionId")] {
			t.Fatalf("transaction %d: paged id %d, want %d", i, ids[i], r[tx.Col("transactionId")])
		}
	}
}

func TestReadPage_RowOverFrameCeilingRefused(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	// 33 MiB of raw bytes charge more than 64 MiB: no page can ever carry this row.
	hugeID, err := s.RecordTransaction(context.Background(), id, wallet.NewTransaction{Satoshis: 1, RawTx: make([]byte, 33<<20)})
	if err != nil {
		t.Fatal(err)
	}
	v := openView(t, s, SnapshotOptions{})
	rows := scanTable(t, s, wallet.Transactions, id)
	last := rows[len(rows)-2] // the row before the huge one
	cur := wallet.EncodeCursor(v.ID(), wallet.Transactions, wallet.Transactions.KeyOf(last))
	_, err = readPage(v, wallet.TableTransactions, id, cur, wallet.Limits{Rows: 1, Bytes: wallet.MaxFrameBytes})
	var big *wallet.RowTooLargeError
	if !errors.As(err, &big) || big.Key[0] != hugeID || big.Charge <= wallet.MaxFrameBytes {
		t.Fatalf("row over the frame ceiling: err = %v, want a *RowTooLargeError for %d", err, hugeID)
	}
}

func TestReadPage_StableUnderConcurrentWrites(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 3)
	ctx := context.Background()
	for i := range 60 {
		if _, err := s.RecordTransaction(ctx, id, wallet.NewTransaction{Satoshis: int64(i), Labels: []string{fmt.Sprintf("l%d", i%9)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range []*wallet.Table{wallet.Transactions, wallet.TxLabelsMap, wallet.Outputs} {
		t.Run(string(tb.Name), func(t *testing.T) {
			want := scanTable(t, s, tb, id)
			v := openView(t, s, SnapshotOptions{})
			rnd := rand.New(rand.NewPCG(1, 2))
			var got []wallet.Row
			var after wallet.Cursor
			db := rawDB(t, s.Path()) // an independent writer, as another program would be
			for {
				p, err := readPage(v, tb.Name, id, after, wallet.Limits{Rows: 3})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Rows...)
				if p.Done {
					break
				}
				after = p.Next
				// Between pages, delete rows (ahead of and behind the cursor) and insert new ones.
				mustExec(t, db, "DELETE FROM tx_labels_map WHERE rowid IN (SELECT rowid FROM tx_labels_map ORDER BY random() LIMIT 2)")
				mustExec(t, db, "DELETE FROM outputs WHERE outputId = (SELECT outputId FROM outputs ORDER BY random() LIMIT 1) AND outputId NOT IN (SELECT outputId FROM output_tags_map)")
				if _, err := s.RecordTransaction(ctx, id, wallet.NewTransaction{Satoshis: rnd.Int64N(100), Labels: []string{"new"},
					Outputs: []wallet.NewOutput{{Vout: 0, Satoshis: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("paged %d rows under concurrent writes, %d existed when the view opened (first difference at %d)", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// TestReadPage_IncrementalRowChangedTwiceReadOnce: a row the journal records twice above
// since (updated in two transactions) comes once in an incremental page.
func TestReadPage_IncrementalRowChangedTwiceReadOnce(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 1)
	v := openView(t, s, SnapshotOptions{})
	since, _ := v.Journal(0)
	v.Close()
	for range 2 {
		mustExec(t, s.writeDB, "UPDATE tx_labels SET label = label || '+' WHERE txLabelId = (SELECT min(txLabelId) FROM tx_labels)")
	}
	w := openView(t, s, SnapshotOptions{})
	defer w.Close()
	p, err := w.ReadPage(t.Context(), wallet.PageRequest{Table: wallet.TableTxLabels, IdentityKey: id, Incremental: true, Since: since})
	if err != nil || len(p.Rows) != 1 || !p.Done {
		t.Fatalf("incremental page above %d: %d rows, done %v, %v; want the one changed label once", since, len(p.Rows), p.Done, err)
	}
}
