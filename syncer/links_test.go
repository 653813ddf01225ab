package syncer_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// The link tests write a wallet the way the toolbox does, through a connection of their own
// on the source file, and sync between the writes: a row that a later write brings into the
// user's scope through a reference must reach the destination with that write, whenever the
// syncs run.

// app is another program writing the source file (the wallet app).
type app struct {
	tb testing.TB
	db *sql.DB
}

func openApp(tb testing.TB, path string) *app {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return &app{tb: tb, db: db}
}

// commit runs stmts in one transaction; ?1 in them is stamp, the ISO time the toolbox
// gives both created_at and updated_at.
func (a *app) commit(stamp string, stmts ...string) {
	a.tb.Helper()
	tx, err := a.db.Begin()
	if err != nil {
		a.tb.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range stmts {
		if _, err := tx.Exec(q, stamp); err != nil {
			a.tb.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		a.tb.Fatal(err)
	}
}

func (a *app) userID(identity string) int64 {
	a.tb.Helper()
	var id int64
	if err := a.db.QueryRow("SELECT userId FROM users WHERE identityKey = ?", identity).Scan(&id); err != nil {
		a.tb.Fatal(err)
	}
	return id
}

func txidOf(n int) string { return fmt.Sprintf("%064x", 0xf00d00+n) }

// The rows, as the toolbox's insert and update methods write them.
func newTransaction(user int64, n int, txid bool) string {
	id := "NULL"
	if txid {
		id = "'" + txidOf(n) + "'"
	}
	return fmt.Sprintf(`INSERT INTO transactions (created_at, updated_at, userId, provenTxId, status, reference, isOutgoing, satoshis, txid)
		VALUES (?1, ?1, %d, NULL, 'unproven', 'link-ref-%d-%d', 0, %d, %s)`, user, user, n, 1000+n, id)
}

func newProof(n int) string {
	return fmt.Sprintf(`INSERT INTO proven_txs (created_at, updated_at, txid, height, "index", merklePath, rawTx, blockHash, merkleRoot)
		VALUES (?1, ?1, '%s', %d, 3, x'0102030405', x'0a0b0c', '%064x', '%064x')`, txidOf(n), 900000+n, n, n+1)
}

func newRequest(n int) string {
	return fmt.Sprintf(`INSERT INTO proven_tx_reqs (created_at, updated_at, provenTxId, status, attempts, notified, txid, history, notify, rawTx, wasBroadcast, rebroadcastAttempts)
		VALUES (?1, ?1, NULL, 'unmined', 1, 0, '%s', '{}', '{}', x'0a0b0c', 1, 0)`, txidOf(n))
}

// proveRequest is the first commit of updateProvenTxReqWithNewProvenTx: the request refers
// to the new proof and is completed.
func proveRequest(n int) string {
	return fmt.Sprintf(`UPDATE proven_tx_reqs SET provenTxId = (SELECT provenTxId FROM proven_txs WHERE txid = '%[1]s'),
		status = 'completed', updated_at = ?1 WHERE txid = '%[1]s'`, txidOf(n))
}

// linkProof is its second commit (notifyTransactionsOfProof): the transactions point at it.
func linkProof(user int64, n int) string {
	return fmt.Sprintf(`UPDATE transactions SET provenTxId = (SELECT provenTxId FROM proven_txs WHERE txid = '%[1]s'),
		status = 'completed', updated_at = ?1 WHERE txid = '%[1]s' AND userId = %[2]d`, txidOf(n), user)
}

// reqMergedOnlyOnce are the proof request columns BRC-40 takes only when the request is new
// at the destination (mergeExisting never overwrites them): a request that was already
// there when the toolbox completed it keeps its old status and no provenTxId. Until the
// transaction links the proof, that proof is then in the source's scope (through the
// request) and not in the destination's, though the destination holds it: such a case
// compares the proofs by txid, whoever's scope they are in.
var reqMergedOnlyOnce = []string{"proven_tx_reqs.status", "proven_tx_reqs.provenTxId"}

func linkedEqual(tb testing.TB, src, dst *localstore.Store, identity string, ignore []string) {
	tb.Helper()
	ctx := context.Background()
	opts := compare.Options{Ignore: append(append([]string{}, syncIgnore.Ignore...), ignore...)}
	if len(ignore) > 0 {
		opts.Tables = wallet.SyncOrder[2:]
		opts.Tables = append([]*wallet.Table{wallet.Users}, opts.Tables...)
		mustHoldProofs(tb, src, dst, identity)
	}
	ws, err := compare.Read(ctx, src, identity, opts)
	if err != nil {
		tb.Fatal(err)
	}
	wd, err := compare.Read(ctx, dst, identity, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if d := compare.Diff(ws, wd); d != "" {
		tb.Fatalf("destination differs from the source:\n%s", d)
	}
}

// mustHoldProofs fails unless dst holds, by txid, every proof in the user's scope at src.
func mustHoldProofs(tb testing.TB, src, dst *localstore.Store, identity string) {
	tb.Helper()
	ctx := context.Background()
	sv, err := src.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer sv.Close()
	page, err := sv.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableProvenTxs, IdentityKey: identity,
		Limits: wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}})
	if err != nil || !page.Done {
		tb.Fatalf("read the source's proofs: %v (done %v)", err, page.Done)
	}
	dv, err := dst.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer dv.Close()
	i := wallet.ProvenTxs.Col("txid")
	for _, r := range page.Rows {
		if _, err := dv.LookupRow(ctx, wallet.TableProvenTxs, "txid", r[i]); err != nil {
			tb.Fatalf("proof %s at the destination: %v", r[i], err)
		}
	}
}

// TestRun_LinkedRowsTravelWithTheirLink runs one case per link of the schema through which
// a write brings rows into the user's scope without changing them (see localstore's link):
// the source is written in steps, the destination is synced after each, and after each it
// holds what the source holds. The proof cases run with the toolbox's two commits a
// millisecond apart and in the same millisecond.
func TestRun_LinkedRowsTravelWithTheirLink(t *testing.T) {
	t.Parallel()
	const t0, t1, t2 = "2026-07-01T10:00:00.000Z", "2026-07-01T10:00:01.000Z", "2026-07-01T10:00:01.001Z"
	other := localstore.FixtureIdentity(77)
	type step struct {
		stamp string
		stmts func(me, them int64) []string
	}
	for _, tc := range []struct {
		name string
		// steps are written in order with a sync after each; the first is written before
		// the first sync.
		steps  []step
		ignore []string
	}{
		{"proof written with its request, linked in a second commit", []step{
			{t0, func(me, _ int64) []string { return []string{newTransaction(me, 1, true), newRequest(1)} }},
			{t1, func(me, _ int64) []string { return []string{newProof(1), proveRequest(1)} }},
			{t2, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, reqMergedOnlyOnce},
		{"proof written with its request, linked in the same millisecond", []step{
			{t0, func(me, _ int64) []string { return []string{newTransaction(me, 1, true), newRequest(1)} }},
			{t1, func(me, _ int64) []string { return []string{newProof(1), proveRequest(1)} }},
			{t1, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, reqMergedOnlyOnce},
		{"request completed before the destination first sees it", []step{
			{t0, func(me, _ int64) []string { return nil }},
			{t1, func(me, _ int64) []string {
				return []string{newTransaction(me, 1, true), newRequest(1), newProof(1), proveRequest(1)}
			}},
			{t2, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, nil}, // the request is new at the destination: its provenTxId must find the proof
		{"proof without a request, linked in a second commit", []step{
			{t0, func(me, _ int64) []string { return []string{newTransaction(me, 1, true)} }},
			{t1, func(me, _ int64) []string { return []string{newProof(1)} }},
			{t2, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, nil},
		{"proof without a request, linked in the same millisecond", []step{
			{t0, func(me, _ int64) []string { return []string{newTransaction(me, 1, true)} }},
			{t1, func(me, _ int64) []string { return []string{newProof(1)} }},
			{t1, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, nil},
		{"request and its proof reached when a transaction gets its txid", []step{
			{t0, func(me, _ int64) []string {
				return []string{newTransaction(me, 1, false), newRequest(1), newProof(1), proveRequest(1)}
			}},
			{t1, func(me, _ int64) []string {
				return []string{fmt.Sprintf("UPDATE transactions SET txid = '%s', updated_at = ?1 WHERE reference = 'link-ref-%d-1'", txidOf(1), me)}
			}},
		}, nil},
		{"another user's request and proof reached by a new transaction", []step{
			{t0, func(_, them int64) []string {
				return []string{newTransaction(them, 1, true), newRequest(1), newProof(1), proveRequest(1), linkProof(them, 1)}
			}},
			{t1, func(me, _ int64) []string { return []string{newTransaction(me, 1, true)} }},
			{t2, func(me, _ int64) []string { return []string{linkProof(me, 1)} }},
		}, nil},
		{"label map reached when its label moves to the user", []step{
			{t0, func(me, them int64) []string {
				return []string{newTransaction(me, 1, true),
					fmt.Sprintf("INSERT INTO tx_labels (created_at, updated_at, userId, label, isDeleted) VALUES (?1, ?1, %d, 'moving', 0)", them),
					fmt.Sprintf(`INSERT INTO tx_labels_map (created_at, updated_at, txLabelId, transactionId, isDeleted) VALUES (?1, ?1,
						(SELECT txLabelId FROM tx_labels WHERE label = 'moving'), (SELECT transactionId FROM transactions WHERE reference = 'link-ref-%d-1'), 0)`, me)}
			}},
			{t1, func(me, _ int64) []string {
				return []string{fmt.Sprintf("UPDATE tx_labels SET userId = %d, updated_at = ?1 WHERE label = 'moving'", me)}
			}},
		}, nil},
		{"tag map reached when its tag moves to the user", []step{
			{t0, func(me, them int64) []string {
				return []string{newTransaction(me, 1, true),
					fmt.Sprintf(`INSERT INTO outputs (created_at, updated_at, userId, transactionId, spendable, change, vout, satoshis, providedBy, purpose, type)
						VALUES (?1, ?1, %[1]d, (SELECT transactionId FROM transactions WHERE reference = 'link-ref-%[1]d-1'), 1, 0, 0, 1001, 'you', 'receive', 'P2PKH')`, me),
					fmt.Sprintf("INSERT INTO output_tags (created_at, updated_at, userId, tag, isDeleted) VALUES (?1, ?1, %d, 'moving', 0)", them),
					fmt.Sprintf(`INSERT INTO output_tags_map (created_at, updated_at, outputTagId, outputId, isDeleted) VALUES (?1, ?1,
						(SELECT outputTagId FROM output_tags WHERE tag = 'moving'),
						(SELECT outputId FROM outputs WHERE transactionId = (SELECT transactionId FROM transactions WHERE reference = 'link-ref-%d-1')), 0)`, me)}
			}},
			{t1, func(me, _ int64) []string {
				return []string{fmt.Sprintf("UPDATE output_tags SET userId = %d, updated_at = ?1 WHERE tag = 'moving'", me)}
			}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, id := seeded(t, localstore.FixtureSmall, 21)
			if _, _, err := src.EnsureUser(context.Background(), other); err != nil {
				t.Fatal(err)
			}
			dst := newStore(t, wallet.ChainTest)
			a := openApp(t, src.Path())
			me, them := a.userID(id), a.userID(other)
			for i, s := range tc.steps {
				a.commit(s.stamp, s.stmts(me, them)...)
				res := push(t, src, dst, id, syncer.Options{})
				if want := map[bool]syncer.Kind{true: syncer.KindFull, false: syncer.KindIncremental}[i == 0]; res.Kind != want {
					t.Fatalf("step %d: a %s run, want %s", i, res.Kind, want)
				}
				linkedEqual(t, src, dst, id, tc.ignore)
			}
			if again := push(t, src, dst, id, syncer.Options{}); again.Kind != syncer.KindUnchanged {
				t.Fatalf("a run after the last: %+v; want unchanged", again)
			}
		})
	}
}

// TestRun_FullSyncRacingATwoStepProof interrupts a first, full push whose view saw the
// toolbox's first proof commit, lets the toolbox link the proof, and resumes: the resumed
// run catches up from the journal, where only the transaction changed, and must still
// bring the proof its view left out. With a request pointing at the proof the first view
// already sends it; without one only the link brings it.
func TestRun_FullSyncRacingATwoStepProof(t *testing.T) {
	t.Parallel()
	for _, withRequest := range []bool{true, false} {
		t.Run(fmt.Sprintf("request=%v", withRequest), func(t *testing.T) {
			t.Parallel()
			src, id := seeded(t, localstore.FixtureSmall, 22)
			dst := newStore(t, wallet.ChainTest)
			a := openApp(t, src.Path())
			me := a.userID(id)
			first := []string{newTransaction(me, 1, true), newProof(1)}
			if withRequest {
				first = append(first, newRequest(1), proveRequest(1))
			}
			a.commit("2026-07-01T10:00:00.000Z", first...)
			cp := cancelAt(t, src, dst, id, wallet.TableOutputs)
			if cp.Done || cp.Mode != wallet.ModeFull {
				t.Fatalf("interrupted at %+v; want an unfinished full run", cp)
			}
			a.commit("2026-07-01T10:00:01.000Z", linkProof(me, 1))
			res := push(t, src, dst, id, syncer.Options{MaxRows: crashMaxRows})
			if res.Resumed != syncer.ResumeCheckpoint || res.CatchUpPages == 0 {
				t.Fatalf("resumed run %+v; want a catch-up from the checkpoint", res)
			}
			linkedEqual(t, src, dst, id, nil)
			if again := push(t, src, dst, id, syncer.Options{}); again.Kind != syncer.KindUnchanged {
				t.Fatalf("a run after the resumed one: %+v; want unchanged", again)
			}
		})
	}
}
