package brc40

import (
	"fmt"
	"strings"

	"walletsync/wallet"
)

// PageMerger is a store's half of MergePage: its queries and writes, inside the one
// transaction that merges a page, with BRC-40's rules (see localstore's merger, whose rules
// pgstore's applies alike).
type PageMerger interface {
	// Localize returns in (a row of t with the source's ids) as the store would hold it
	// (Localize).
	Localize(t *wallet.Table, in wallet.Row) (wallet.Row, error)
	// FindMany returns the stored rows of t whose cols equal those of one of locals (their
	// keys are distinct), in any order.
	FindMany(t *wallet.Table, cols []string, locals []wallet.Row) ([]wallet.Row, error)
	// MergeFound merges an incoming row into the stored row found for it.
	MergeFound(t *wallet.Table, in, local, found wallet.Row) error
	// InsertMany inserts locals[i] for every i in idx, as new rows completed by
	// PrepareNew, and maps the source id of rows[i] to the id it got.
	InsertMany(t *wallet.Table, rows, locals []wallet.Row, idx []int) error
	// MergeEach merges rows one at a time, each finding the ones before it.
	MergeEach(t *wallet.Table, rows []wallet.Row) error
}

// MergePage merges one page of t through m, batched: the stored rows matching the whole
// page are found with one FindMany per match key set and batch of rows, the matched rows
// merge one by one (MergeFound), and the unmatched ones are inserted together (InsertMany).
// A page in which two rows share a natural key, a page of one row and a user page go through
// MergeEach instead, so that a row finds the one before it (and a user is never inserted).
func MergePage(m PageMerger, t *wallet.Table, rows []wallet.Row, batch int) error {
	if t == wallet.Users || len(rows) < 2 {
		return m.MergeEach(t, rows)
	}
	locals := make([]wallet.Row, len(rows))
	for i, r := range rows {
		var err error
		if locals[i], err = m.Localize(t, r); err != nil {
			return fmt.Errorf("merge %s row %v: %w", t.Name, t.KeyOf(r), err)
		}
	}
	found, unique, err := findPage(m, t, locals, batch)
	if err != nil {
		return err
	}
	if !unique {
		return m.MergeEach(t, rows)
	}
	var fresh []int
	for i, r := range rows {
		if found[i] == nil {
			fresh = append(fresh, i)
			continue
		}
		if err := m.MergeFound(t, r, locals[i], found[i]); err != nil {
			return fmt.Errorf("merge %s row %v: %w", t.Name, t.KeyOf(r), err)
		}
	}
	return m.InsertMany(t, rows, locals, fresh)
}

// findPage returns, for each local row, the stored row matching it by natural key (nil when
// none), and whether the page's natural keys are distinct. Transactions match by txid first
// and by reference for those still unmatched, as the toolbox's mergeFind does.
func findPage(m PageMerger, t *wallet.Table, locals []wallet.Row, batch int) ([]wallet.Row, bool, error) {
	found := make([]wallet.Row, len(locals))
	for _, cols := range MatchKeys(t) {
		want := map[string]int{}
		var keys []wallet.Row
		for i, r := range locals {
			if found[i] != nil || !Matchable(t, cols, r) {
				continue
			}
			k := NaturalKey(t, cols, r)
			if _, dup := want[k]; dup {
				return nil, false, nil
			}
			want[k] = i
			keys = append(keys, r)
		}
		for start := 0; start < len(keys); start += batch {
			rows, err := m.FindMany(t, cols, keys[start:min(start+batch, len(keys))])
			if err != nil {
				return nil, false, err
			}
			for _, r := range rows {
				i, ok := want[NaturalKey(t, cols, r)]
				if !ok {
					continue
				}
				if found[i] != nil {
					return nil, false, fmt.Errorf("%s: two rows match natural key %v: %w", t.Name, cols, wallet.ErrCorrupt)
				}
				found[i] = r
			}
		}
	}
	return found, true, nil
}

// NaturalKey returns a string that identifies the values of cols in r (a normalized row of
// t): two rows have the same string exactly when they hold the same values there.
func NaturalKey(t *wallet.Table, cols []string, r wallet.Row) string {
	var b strings.Builder
	for _, c := range cols {
		v := wallet.SQLValue(r[t.Col(c)])
		fmt.Fprintf(&b, "%T:%v\x00", v, v)
	}
	return b.String()
}
