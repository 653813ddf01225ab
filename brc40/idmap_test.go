package brc40

import (
	"errors"
	"testing"

	"walletsync/wallet"
)

// A page's id map remembers what it loaded and what it made, refuses to map an id twice
// differently, and hands over only the new mappings until they are written.
func TestPageIDs_FreshUntilFlushed(t *testing.T) {
	m := NewPageIDs()
	m.Learn(wallet.TableTransactions, 1, 10)
	if err := m.RecordID(wallet.Transactions, 1, 10); err != nil {
		t.Fatalf("recording a loaded mapping again: %v", err)
	}
	if err := m.RecordID(wallet.Transactions, 2, 20); err != nil {
		t.Fatal(err)
	}
	var conflict *wallet.IDMapConflictError
	if err := m.RecordID(wallet.Transactions, 2, 21); !errors.As(err, &conflict) {
		t.Fatalf("a second local id for one source id: %v", err)
	}
	if f := m.Fresh(); len(f) != 1 || len(f[wallet.TableTransactions]) != 1 || f[wallet.TableTransactions][2] != 20 {
		t.Fatalf("fresh %v, want only 2 -> 20", f)
	}
	m.Flushed()
	if id, ok := m.LocalID(wallet.Transactions, 2); !ok || id != 20 || len(m.Fresh()) != 0 {
		t.Fatalf("after Flushed: %d, %v, fresh %v", id, ok, m.Fresh())
	}
}

// ReferencedIDs bounds the ids one page may refer to.
func TestReferencedIDs_Bounded(t *testing.T) {
	rows := make([]wallet.Row, MaxPageIDs+1)
	for i := range rows {
		rows[i] = make(wallet.Row, len(wallet.TxLabels.Columns))
		rows[i][wallet.TxLabels.Col("txLabelId")] = int64(i)
	}
	if _, err := ReferencedIDs(wallet.TxLabels, rows[:MaxPageIDs]); err != nil {
		t.Fatal(err)
	}
	if _, err := ReferencedIDs(wallet.TxLabels, rows); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("%d ids: %v, want ErrInvalidArgument", len(rows), err)
	}
}
