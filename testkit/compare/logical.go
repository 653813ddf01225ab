// Package compare says whether two stores hold the same wallet, in the two senses the
// tests need:
//
//   - logically (Read, ReadChunks, FromRows, Diff, SameWallet): one user's rows in a form
//     that does not depend on the store's ids, so that tests can say "these two stores hold
//     the same wallet" after a sync, a restore or a crash, whatever ids each store gave the
//     rows. Each row becomes a canonical JSON text: its own id and userId dropped, every
//     foreign key replaced by the natural key of the row it points to, JSON-in-text columns
//     re-encoded with sorted keys. A table is the sorted list of its rows' texts.
//   - file by file (Digests, Same): every table of two SQLite files, ids and all, for the
//     tests of whole-file copies (a bundle and its restore).
package compare

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"walletsync/wallet"
)

// Wallet is one user's rows per table, in canonical form, sorted.
type Wallet map[wallet.TableName][]string

// Options choose what Read leaves out.
type Options struct {
	// Tables to read; SyncOrder when empty.
	Tables []*wallet.Table
	// Ignore names columns to leave out, as "table.column" (e.g. "users.activeStorage").
	Ignore []string
}

// AfterSync returns the options that compare a sync's source and destination: they leave
// out what two stores legitimately differ in after a sync (the toolbox's findOrInsertUser
// gives the user row its own times and active storage, output baskets their creation
// times, and the proof-request merge combines notification lists).
func AfterSync() Options {
	return Options{Ignore: []string{"proven_tx_reqs.notified", "users.activeStorage", "users.updated_at",
		"users.created_at", "output_baskets.created_at"}}
}

// Read pages every table of the user through one view of src and returns the canonical
// form. It fails on a foreign key that points to no row of the view.
func Read(ctx context.Context, src wallet.Source, identityKey string, opts Options) (Wallet, error) {
	v, err := src.OpenView(ctx, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	// Every table the read tables refer to is read too, to resolve keys.
	raw := map[wallet.TableName][]wallet.Row{}
	for _, t := range wallet.AllTables {
		rows, err := ReadTable(ctx, v, t, identityKey, wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes})
		if err != nil {
			return nil, err
		}
		raw[t.Name] = rows
	}
	return FromRows(raw, opts)
}

// FromRows returns the canonical form of one user's rows, read by any reader (Read pages a
// view; a test may take them from another program's dump). raw holds every table the read
// tables refer to, keyed by table; it fails on a foreign key that points to no row of raw.
func FromRows(raw map[wallet.TableName][]wallet.Row, opts Options) (Wallet, error) {
	if len(opts.Tables) == 0 {
		opts.Tables = wallet.SyncOrder
	}
	r := resolver{byID: map[wallet.TableName]map[int64]wallet.Row{}}
	for _, t := range wallet.AllTables {
		if t.ID == "" {
			continue
		}
		r.byID[t.Name] = map[int64]wallet.Row{}
		for _, row := range raw[t.Name] {
			r.byID[t.Name][row[t.Col(t.ID)].(int64)] = row
		}
	}
	ignore := map[string]bool{}
	for _, c := range opts.Ignore {
		ignore[c] = true
	}
	out := Wallet{}
	for _, t := range opts.Tables {
		texts := []string{}
		for _, row := range raw[t.Name] {
			text, err := r.canonical(t, row, ignore)
			if err != nil {
				return nil, err
			}
			texts = append(texts, text)
		}
		slices.Sort(texts)
		out[t.Name] = texts
	}
	return out, nil
}

// Diff describes how b differs from a, table by table (empty when they are equal).
func Diff(a, b Wallet) string {
	var sb strings.Builder
	for _, t := range wallet.AllTables {
		ra, rb := a[t.Name], b[t.Name]
		if slices.Equal(ra, rb) {
			continue
		}
		fmt.Fprintf(&sb, "%s: %d rows vs %d\n", t.Name, len(ra), len(rb))
		for _, x := range ra {
			if !slices.Contains(rb, x) {
				fmt.Fprintf(&sb, "  only in first:  %s\n", x)
				break
			}
		}
		for _, x := range rb {
			if !slices.Contains(ra, x) {
				fmt.Fprintf(&sb, "  only in second: %s\n", x)
				break
			}
		}
	}
	return sb.String()
}

// ReadTable pages table t of the user through v in pages of at most limits, asking a row
// too large for a page alone in a page of its own, and returns every row in page order.
func ReadTable(ctx context.Context, v wallet.View, t *wallet.Table, identityKey string, limits wallet.Limits) ([]wallet.Row, error) {
	var out []wallet.Row
	var after wallet.Cursor
	for {
		req := wallet.PageRequest{Table: t.Name, IdentityKey: identityKey, After: after, Limits: limits}
		p, err := v.ReadPage(ctx, req)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			req.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
			p, err = v.ReadPage(ctx, req)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.Name, err)
		}
		out = append(out, p.Rows...)
		if p.Done {
			return out, nil
		}
		after = p.Next
	}
}

// SameWallet fails tb unless a and b hold the same wallet of identity, up to what a sync
// legitimately changes (AfterSync).
func SameWallet(tb testing.TB, a, b wallet.Source, identity string) {
	tb.Helper()
	wa, err := Read(context.Background(), a, identity, AfterSync())
	if err != nil {
		tb.Fatal(err)
	}
	wb, err := Read(context.Background(), b, identity, AfterSync())
	if err != nil {
		tb.Fatal(err)
	}
	if d := Diff(wa, wb); d != "" {
		tb.Fatalf("the wallets differ:\n%s", d)
	}
}

type resolver struct {
	byID map[wallet.TableName]map[int64]wallet.Row
}

// naturalKey names the row of table target with the given id by its natural key.
func (r resolver) naturalKey(target wallet.TableName, id int64) (string, error) {
	t, _ := wallet.LookupTable(target)
	row, ok := r.byID[target][id]
	if !ok {
		return "", fmt.Errorf("%s id %d: dangling reference", target, id)
	}
	parts := []string{string(target)}
	for _, c := range t.Natural {
		if c == "userId" {
			continue
		}
		v := row[t.Col(c)]
		if ref := refTarget(t, c); ref != "" && v != nil {
			k, err := r.naturalKey(ref, v.(int64))
			if err != nil {
				return "", err
			}
			v = k
		}
		if t == wallet.Transactions && c == "txid" && v == nil {
			v = "reference:" + row[t.Col("reference")].(string)
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, "|"), nil
}

func refTarget(t *wallet.Table, col string) wallet.TableName {
	for _, ref := range t.Refs {
		if ref.Column == col {
			return ref.Target
		}
	}
	return ""
}

func (r resolver) canonical(t *wallet.Table, row wallet.Row, ignore map[string]bool) (string, error) {
	m := map[string]any{}
	for i, c := range t.Columns {
		if c.Name == t.ID || c.Name == "userId" || ignore[string(t.Name)+"."+c.Name] {
			continue
		}
		v := row[i]
		switch x := v.(type) {
		case time.Time:
			v = wallet.FormatTime(x)
		case []byte:
			v = hex.EncodeToString(x)
		case string:
			if c.Kind == wallet.KindJSON {
				var obj any
				if err := json.Unmarshal([]byte(x), &obj); err != nil {
					return "", fmt.Errorf("%s.%s: %w", t.Name, c.Name, err)
				}
				if t == wallet.ProvenTxReqs && c.Name == "notify" {
					obj = r.mapNotify(obj)
				}
				v = obj
			}
		case int64:
			if target := refTarget(t, c.Name); target != "" {
				k, err := r.naturalKey(target, x)
				if err != nil {
					return "", fmt.Errorf("%s.%s: %w", t.Name, c.Name, err)
				}
				v = k
			}
		}
		m[c.Name] = v
	}
	b, err := json.Marshal(m) // encoding/json sorts map keys
	return string(b), err
}

// mapNotify replaces a proof request's notify ids by their transactions' natural keys.
func (r resolver) mapNotify(obj any) any {
	m, ok := obj.(map[string]any)
	if !ok {
		return obj
	}
	ids, _ := m["transactionIds"].([]any)
	keys := []string{}
	for _, id := range ids {
		if f, ok := id.(float64); ok {
			if k, err := r.naturalKey(wallet.TableTransactions, int64(f)); err == nil {
				keys = append(keys, k)
				continue
			}
		}
		keys = append(keys, fmt.Sprint("unresolved:", id))
	}
	slices.Sort(keys)
	m["transactionIds"] = keys
	return m
}
