package wire

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"walletsync/syncer"
	"walletsync/wallet"
)

// TestHandler_CommitRefusesBadValues: a page carrying a value the toolbox never writes (a
// negative output, a 3-character txid, an id below 1, text that is not UTF-8) is refused
// invalid_argument naming the table and column before the backend sees it, on SQLite and
// PostgreSQL, and moves no checkpoint; the same page unaltered reaches the backend (which
// refuses it for its references to rows never delivered in that session, naming them).
func TestHandler_CommitRefusesBadValues(t *testing.T) {
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *server
	}{
		{"sqlite", func(t *testing.T) *server { return startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{}) }},
		{"postgres", func(t *testing.T) *server {
			return startBackend(t, newPGStore(t, wallet.ChainTest), nil, HandlerOptions{})
		}},
	} {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			srv := be.start(t)
			a := fixtureUser(61)
			local := newStore(t, wallet.ChainTest)
			seed(t, local, a, 61)
			pa := provider(t, srv, a, ProviderOptions{})
			if _, err := syncer.Run(ctx, local, pa, a.id, syncer.Options{Active: wallet.KeepSourceActive}); err != nil {
				t.Fatal(err)
			}
			v, err := local.OpenView(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			outputs, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: a.id})
			v.Close()
			if err != nil || len(outputs.Rows) == 0 {
				t.Fatalf("outputs: %v", err)
			}
			session := wallet.SessionKey{SourceStorage: "another source", IdentityKey: a.id}
			commit := func(page wallet.Page) error {
				_, err := pa.Commit(ctx, wallet.Batch{Chain: wallet.ChainTest, Expect: 0, Active: wallet.KeepSourceActive, Page: page,
					Checkpoint: wallet.Checkpoint{Session: session, Seq: 1, Mode: wallet.ModeFull, Table: slices.Index(wallet.SyncOrder, wallet.Outputs)}})
				return err
			}
			for _, tc := range []struct {
				column string
				value  any
			}{
				{"satoshis", int64(-1)},
				{"txid", "abc"},
				{"outputId", int64(-1)},
				{"transactionId", int64(0)},
				{"purpose", "change\xff"},
			} {
				page := outputs
				page.Rows = make([]wallet.Row, len(outputs.Rows))
				for i, r := range outputs.Rows {
					page.Rows[i] = slices.Clone(r)
				}
				page.Rows[len(page.Rows)-1][wallet.Outputs.Col(tc.column)] = tc.value
				err := commit(page)
				if !errors.Is(err, wallet.ErrInvalidArgument) || !strings.Contains(err.Error(), "outputs."+tc.column) {
					t.Errorf("outputs.%s = %q: %v, want invalid_argument naming outputs.%s", tc.column, tc.value, err, tc.column)
				}
			}
			err = commit(outputs)
			if !errors.Is(err, wallet.ErrDanglingReference) || !strings.Contains(err.Error(), "outputs.transactionId") {
				t.Fatalf("the page unaltered: %v, want dangling_reference naming outputs.transactionId", err)
			}
			if cp, err := pa.Checkpoint(ctx, session); err != nil || cp.Seq != 0 {
				t.Fatalf("the refused commits moved the session: %+v, %v", cp, err)
			}
		})
	}
}
