package brc38

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"walletsync/localstore"
	"walletsync/testkit/backuptest"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// These tests hold walletsync's BRC-38 bytes against @bsv/wallet-toolbox 2.1.26's
// exportBRC38Json, run by the interop peer under LC_ALL=C.UTF-8 and TZ=UTC, byte for byte.

// mustTrickyStore is the small fixture with backuptest.TrickyValues applied.
func mustTrickyStore(tb testing.TB) (path, identity string) {
	tb.Helper()
	path, identity = fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
	backuptest.Mutate(tb, path, backuptest.TrickyValues...)
	return path, identity
}

func TestEncode_ByteIdenticalToToolbox(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(testing.TB) (string, string)
	}{
		{"small", func(tb testing.TB) (string, string) {
			return fixtures.Store(tb, localstore.FixtureSmall, backuptest.SmallSeed)
		}},
		{"toolbox", func(tb testing.TB) (string, string) { return fixtures.Store(tb, localstore.FixtureToolbox, 4) }},
		{"toolbox-filled", fixtures.ToolboxStore},
		{"tricky-values", mustTrickyStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := tc.store(t)
			got, stats := encodeFile(t, path, id, false)
			backuptest.RequireSameBytes(t, got, backuptest.ToolboxExport38(t, path, id))
			for _, w := range stats.Warnings {
				// The peer's wallet has an NFC/NFD tie, in the toolbox's order here.
				if w.Kind != WarnCollationUnverified && w.Kind != WarnCollationTie {
					t.Errorf("unexpected warning %s", w)
				}
			}
		})
	}
}

// TestEncode_BackfillAndClosureMatchToolbox covers what keyset pages alone cannot reproduce
// (see RowLookup) on the toolbox's own wallet: transactions stored without rawTx (as the
// toolbox stores every transaction it signs), outputs whose script must be cut from a raw
// transaction (including past its end, which gives an empty script), and a proof that only a
// proof request references. With RowLookup the bytes equal the toolbox's; without it, the
// closure gap is an error and the back-fills are warnings.
func TestEncode_BackfillAndClosureMatchToolbox(t *testing.T) {
	t.Parallel()
	path, id := fixtures.ToolboxStore(t)
	backuptest.Mutate(t, path,
		`UPDATE transactions SET rawTx = NULL WHERE transactionId IN (1, 2, 3, 5)`,        // from proofs 1 and 5, requests 2 and 3
		`UPDATE transactions SET provenTxId = NULL WHERE transactionId = 1`,               // proof 1: now only request 1 references it
		`UPDATE outputs SET lockingScript = NULL WHERE outputId IN (1, 3)`,                // cut from proof 1, from request 2
		`UPDATE outputs SET scriptOffset = 225, lockingScript = X'00' WHERE outputId = 2`, // clamped at the end of request 2's rawTx
		`UPDATE outputs SET scriptLength = 5, scriptOffset = 1000 WHERE outputId = 5`,     // past the end of proof 5's rawTx: empty
	)
	want := backuptest.ToolboxExport38(t, path, id)
	got, stats := encodeFile(t, path, id, true)
	backuptest.RequireSameBytes(t, got, want)
	for _, w := range stats.Warnings {
		if w.Kind != WarnCollationUnverified && w.Kind != WarnCollationTie {
			t.Errorf("unexpected warning %s", w)
		}
	}
	if !strings.Contains(string(got), `"lockingScript":""`) {
		t.Error(`no output carries the empty script cut past the end of its raw transaction`)
	}

	t.Run("WithoutLookup/ClosureGapIsAnError", func(t *testing.T) {
		// Pages hold a proof that only a request references when the request has the proof's
		// txid, as the toolbox writes them (localstore's scope); a request pointing at the
		// proof of another txid is the gap only a lookup fills.
		backuptest.Mutate(t, path, `UPDATE proven_txs SET txid = 'gap:' || txid WHERE provenTxId = 1`)
		defer backuptest.Mutate(t, path, `UPDATE proven_txs SET txid = substr(txid, 5) WHERE provenTxId = 1`)
		_, err := backuptest.WithView(t, path, false, func(v wallet.View, settings wallet.Settings) (Stats, error) {
			return Encode(context.Background(), v, settings, id, backuptest.ExportedAt, &strings.Builder{})
		})
		var ee *EncodeError
		if !errors.As(err, &ee) || !errors.Is(err, ErrNotExportable) || ee.Path != "tables.provenTxs[0]" {
			t.Fatalf("Encode without RowLookup: %v, want an *EncodeError at tables.provenTxs[0] matching ErrNotExportable", err)
		}
	})
	t.Run("WithoutLookup/BackfillsAreWarnings", func(t *testing.T) {
		backuptest.Mutate(t, path, `UPDATE transactions SET provenTxId = 1 WHERE transactionId = 1`)
		got, stats := encodeFile(t, path, id, false)
		var paths []string
		for _, w := range stats.Warnings {
			if w.Kind == WarnBackfillUnavailable {
				paths = append(paths, w.Path)
			}
		}
		wantPaths := []string{"tables.outputs[0].lockingScript", "tables.outputs[1].lockingScript", "tables.outputs[2].lockingScript",
			"tables.outputs[4].lockingScript", "tables.transactions[0].rawTx", "tables.transactions[1].rawTx",
			"tables.transactions[2].rawTx", "tables.transactions[4].rawTx"}
		if !reflect.DeepEqual(paths, wantPaths) {
			t.Fatalf("back-fill warnings at\n %v\nwant\n %v", paths, wantPaths)
		}
		if string(got) == string(backuptest.ToolboxExport38(t, path, id)) {
			t.Fatal("the document without back-fills equals the toolbox's")
		}
	})
	t.Run("ToolboxFailsWhereWalletsyncWarns", func(t *testing.T) {
		// The toolbox's findTransactions reads a request without inputBEEF and throws.
		backuptest.Mutate(t, path, `UPDATE proven_tx_reqs SET inputBEEF = NULL WHERE txid = (SELECT txid FROM transactions WHERE transactionId = 3)`)
		err := toolboxpeer.Try(context.Background(), nil, "export38", "--db", path, "--identity", id, "--out", t.TempDir()+"/x.json")
		if err == nil || !strings.Contains(err.Error(), "not iterable") {
			t.Fatalf("toolbox export: %v, want its 'object null is not iterable' failure", err)
		}
		_, stats := encodeFile(t, path, id, true)
		if !hasWarning(stats, WarnToolboxFails, "tables.transactions[2].rawTx") {
			t.Fatalf("warnings %v lack %s at tables.transactions[2].rawTx", stats.Warnings, WarnToolboxFails)
		}
	})
}

func hasWarning(s Stats, kind WarningKind, path string) bool {
	for _, w := range s.Warnings {
		if w.Kind == kind && w.Path == path {
			return true
		}
	}
	return false
}

// TestEncode_CollationTiesFollowToolboxOrder covers field names of one certificate that are
// equal under localeCompare: NFC and NFD spellings of "émigré" (which the peer's fill inserts
// NFD first, also byte order, and which then trade rows, so that the toolbox lists NFC
// first), and "handle" with a zero-width space inserted before the plain name (byte order
// puts the plain one first). The toolbox keeps such names in its finder's rowid order;
// through a snapshot, which implements RowOrder, walletsync writes the toolbox's bytes
// exactly. A view without RowOrder keeps byte order and warns at each tie.
func TestEncode_CollationTiesFollowToolboxOrder(t *testing.T) {
	t.Parallel()
	path, id := fixtures.ToolboxStore(t)
	nfd := `'e' || char(769) || 'migre' || char(769)`
	nfc := `char(233) || 'migr' || char(233)`
	insert := func(name string) string {
		return `INSERT INTO certificate_fields (created_at, updated_at, userId, certificateId, fieldName, fieldValue, masterKey)
			SELECT '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', userId, certificateId, ` + name + `, 'v', 'k'
			FROM certificates WHERE certificateId = 2`
	}
	backuptest.Mutate(t, path,
		`UPDATE certificate_fields SET fieldName = 'swap' WHERE fieldName = `+nfd,
		`UPDATE certificate_fields SET fieldName = `+nfd+` WHERE certificateId = 2 AND fieldName = `+nfc,
		`UPDATE certificate_fields SET fieldName = `+nfc+` WHERE fieldName = 'swap'`,
		insert(`'hand' || char(8203) || 'le'`),
		insert(`'handle'`))
	want := backuptest.ToolboxExport38(t, path, id)
	if !strings.Contains(string(want), "hand\u200ble") {
		t.Fatal("the toolbox's export lacks the zero-width-space name")
	}

	got, stats := encodeFile(t, path, id, true)
	backuptest.RequireSameBytes(t, got, want)
	for _, w := range stats.Warnings {
		if w.Kind == WarnCollationTie {
			t.Errorf("a tie the snapshot's rowids resolve was warned about: %s", w)
		}
	}

	t.Run("WithoutRowOrder", func(t *testing.T) {
		got, stats := encodeFile(t, path, id, false)
		ties := 0
		for _, w := range stats.Warnings {
			if w.Kind == WarnCollationTie {
				ties++
			}
		}
		if ties != 2 {
			t.Fatalf("warnings %v: want the two ties", stats.Warnings)
		}
		if string(got) == string(want) {
			t.Fatal("without rowids the document equals the toolbox's; the ties test nothing")
		}
		g, w := backuptest.Generic(t, got), backuptest.Generic(t, want)
		gf := g["tables"].(map[string]any)["certificateFields"].([]any)
		wf := w["tables"].(map[string]any)["certificateFields"].([]any)
		if len(gf) != len(wf) {
			t.Fatalf("%d fields, the toolbox %d", len(gf), len(wf))
		}
	})
}
