package localstore

import (
	"fmt"
	"testing"

	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// The rows of the link tests, as the toolbox's insert and update methods write them; ?1 is
// the write's time.
func linkedTx(me int64, txid string, withTxid bool) string {
	id := "NULL"
	if withTxid {
		id = "'" + txid + "'"
	}
	return fmt.Sprintf(`INSERT INTO transactions (created_at, updated_at, userId, status, reference, isOutgoing, satoshis, txid, rawTx)
		VALUES (?1, ?1, %d, 'unproven', 'linked', 0, 5, %s, x'0a0b')`, me, id)
}

func linkedProof(txid string) string {
	return `INSERT INTO proven_txs (created_at, updated_at, txid, height, "index", merklePath, rawTx, blockHash, merkleRoot)
		VALUES (?1, ?1, '` + txid + `', 900001, 2, x'0102', x'0a0b', 'bh', 'mr')`
}

func linkedRequest(txid string) string {
	return `INSERT INTO proven_tx_reqs (created_at, updated_at, provenTxId, status, attempts, notified, txid, history, notify, rawTx, wasBroadcast, rebroadcastAttempts)
		VALUES (?1, ?1, (SELECT provenTxId FROM proven_txs WHERE txid = '` + txid + `'), 'completed', 1, 0, '` + txid + `', '{}', '{}', x'0a0b', 1, 0)`
}

// linkProof is the toolbox's second proof commit: the transaction points at the proof.
func linkProof(txid string) string {
	return `UPDATE transactions SET provenTxId = (SELECT provenTxId FROM proven_txs WHERE txid = '` + txid + `'),
		status = 'completed', updated_at = ?1 WHERE txid = '` + txid + `'`
}

func labelRow(user int64, name string) string {
	return fmt.Sprintf("INSERT INTO tx_labels (created_at, updated_at, userId, label, isDeleted) VALUES (?1, ?1, %d, '%s', 0)", user, name)
}

// TestGetSyncChunk_LinkedRowsGoOutWithTheirLink is the since-based BRC-40 producer's side of
// the link closure: a row that a later write brings into the user's scope, without changing
// it, goes out in the cycle after that write, although its own updated_at is older than
// the cycle's since. Each case writes in steps through another connection (as the wallet
// app does) and runs a BRC-40 cycle after each; the consumer then holds what the producer
// holds. A later write of another row (here a label) is what moves since past the proof's
// stamp between the toolbox's two commits.
func TestGetSyncChunk_LinkedRowsGoOutWithTheirLink(t *testing.T) {
	t.Parallel()
	const t0, t1, t1b, t2 = "2026-07-01T10:00:00.000Z", "2026-07-01T10:00:01.000Z", "2026-07-01T10:00:01.005Z", "2026-07-01T10:00:02.000Z"
	txid := fmt.Sprintf("%064x", 0xbeef01)
	tx := func(me int64, withTxid bool) string { return linkedTx(me, txid, withTxid) }
	proof, request, link := linkedProof(txid), linkedRequest(txid), linkProof(txid)
	label := labelRow
	type step struct {
		stamp string
		stmts func(me, them int64) []string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"proof linked in a second commit, after a later write", []step{
			{t0, func(me, _ int64) []string { return []string{tx(me, true)} }},
			{t1, func(me, _ int64) []string { return []string{proof} }},
			{t1b, func(me, _ int64) []string { return []string{label(me, "later")} }},
			{t2, func(me, _ int64) []string { return []string{link} }},
		}},
		{"proof linked in the same millisecond", []step{
			{t0, func(me, _ int64) []string { return []string{tx(me, true)} }},
			{t1, func(me, _ int64) []string { return []string{proof} }},
			{t1, func(me, _ int64) []string { return []string{link} }},
		}},
		{"request and proof reached when a transaction gets its txid", []step{
			{t0, func(me, _ int64) []string { return []string{tx(me, false), proof, request} }},
			{t1, func(me, _ int64) []string { return []string{label(me, "later")} }},
			{t2, func(me, _ int64) []string {
				return []string{"UPDATE transactions SET txid = '" + txid + "', updated_at = ?1 WHERE reference = 'linked'"}
			}},
		}},
		{"label map reached when its label moves to the user", []step{
			{t0, func(me, them int64) []string {
				return []string{tx(me, true), label(them, "moving"), `INSERT INTO tx_labels_map (created_at, updated_at, txLabelId, transactionId, isDeleted)
					VALUES (?1, ?1, (SELECT txLabelId FROM tx_labels WHERE label = 'moving'), (SELECT transactionId FROM transactions WHERE reference = 'linked'), 0)`}
			}},
			{t1, func(me, _ int64) []string { return []string{label(me, "later")} }},
			{t2, func(me, _ int64) []string {
				return []string{fmt.Sprintf("UPDATE tx_labels SET userId = %d, updated_at = ?1 WHERE label = 'moving'", me)}
			}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
			id := mustSeed(t, p, FixtureSmall, 31)
			them, _, err := p.EnsureUser(t.Context(), FixtureIdentity(78))
			if err != nil {
				t.Fatal(err)
			}
			me, err := lookupUser(t.Context(), p.readDB, id)
			if err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, p.Path())
			for _, s := range tc.steps {
				tx, err := db.Begin()
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range s.stmts(me, them) {
					if _, err := tx.Exec(q, s.stamp); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				pullBRC40(t, p, c, id, 0, 0)
				sameWallet(t, p, c, id)
			}
		})
	}
}

// TestGetSyncChunk_CycleRacingATwoStepProof runs a BRC-40 cycle of many small chunks while
// the toolbox links a proof it recorded (with its request) just before the cycle began, and
// writes a newer row that the same cycle sees: the cycle's since then passes both the
// proof's and the link's stamps, so only the chunk that read proven_txs could carry the
// proof. It does, because the request already pointed at it (see scopeFilter).
func TestGetSyncChunk_CycleRacingATwoStepProof(t *testing.T) {
	t.Parallel()
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := mustSeed(t, p, FixtureSmall, 33)
	me, err := lookupUser(t.Context(), p.readDB, id)
	if err != nil {
		t.Fatal(err)
	}
	txid := fmt.Sprintf("%064x", 0xbeef03)
	db := rawDB(t, p.Path())
	mustExec(t, db, linkedTx(me, txid, true), "2026-07-01T10:00:00.000Z")
	pullBRC40(t, p, c, id, 0, 0)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{linkedProof(txid), linkedRequest(txid)} {
		if _, err := tx.Exec(q, "2026-07-01T10:00:01.000Z"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	pullBRC40Between(t, p, c, id, 0, 3, func(chunks int) {
		if chunks == 1 { // proven_txs is behind the cycle now
			mustExec(t, db, linkProof(txid), "2026-07-01T10:00:02.000Z")
			mustExec(t, db, `UPDATE proven_tx_reqs SET updated_at = ?1 WHERE txid = '`+txid+`'`, "2026-07-01T10:00:03.000Z")
		}
	})
	pullBRC40(t, p, c, id, 0, 0)
	sameWallet(t, p, c, id)
}

// TestReadPage_ProofInScopeThroughItsRequest pins the one place walletsync's scope is wider
// than BRC-40's: between the toolbox's two proof commits, the proof that the request of a
// user's transaction refers to is the user's, so a reader never finds the request pointing
// at a proof it cannot see; another user's proof stays out.
func TestReadPage_ProofInScopeThroughItsRequest(t *testing.T) {
	t.Parallel()
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 32)
	me, err := lookupUser(t.Context(), s.readDB, id)
	if err != nil {
		t.Fatal(err)
	}
	them, _, err := s.EnsureUser(t.Context(), FixtureIdentity(79))
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, s.Path())
	stamp := "2026-07-01T10:00:00.000Z"
	for i, user := range []int64{me, them} {
		txid := fmt.Sprintf("%064x", 0xcafe00+i)
		mustExec(t, db, fmt.Sprintf(`INSERT INTO transactions (created_at, updated_at, userId, status, reference, isOutgoing, satoshis, txid)
			VALUES (?1, ?1, %d, 'unproven', 'scope-%d', 0, 5, '%s')`, user, i, txid), stamp)
		mustExec(t, db, `INSERT INTO proven_txs (created_at, updated_at, txid, height, "index", merklePath, rawTx, blockHash, merkleRoot)
			VALUES (?1, ?1, ?2, 900001, 2, x'0102', x'0a0b', 'bh', 'mr')`, stamp, txid)
		mustExec(t, db, `INSERT INTO proven_tx_reqs (created_at, updated_at, provenTxId, status, attempts, notified, txid, history, notify, wasBroadcast, rebroadcastAttempts)
			VALUES (?1, ?1, (SELECT provenTxId FROM proven_txs WHERE txid = ?2), 'completed', 1, 0, ?2, '{}', '{}', 1, 0)`, stamp, txid)
	}
	v, err := s.OpenSnapshot(t.Context(), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	seen := map[string]bool{}
	for _, r := range readAll(t, v, wallet.TableProvenTxs, id, wallet.Limits{}) {
		seen[r[wallet.ProvenTxs.Col("txid")].(string)] = true
	}
	if mine, theirs := fmt.Sprintf("%064x", 0xcafe00), fmt.Sprintf("%064x", 0xcafe01); !seen[mine] || seen[theirs] {
		t.Fatalf("proofs in scope %v; want the user's unlinked proof %s and not the other user's %s", seen, mine, theirs)
	}
}

// TestBRC40Interop_LinkedProofReachesAToolboxConsumer runs the toolbox's two proof commits
// with a BRC-40 cycle between them (after a later write has moved since past the proof's
// stamp) into two toolbox consumers: one fed by walletsync's producer, which ends holding
// the proof, and one by the toolbox's own, which loses it for good (its transaction stays
// completed without a proof). The second half pins the toolbox's behaviour that makes the
// first half worth having.
func TestBRC40Interop_LinkedProofReachesAToolboxConsumer(t *testing.T) {
	t.Parallel()
	p := mustCreate(t, Options{})
	id := FixtureIdentity(80)
	me, _, err := p.EnsureUser(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := newTSStore(t, "ts consumer", 81), newTSStore(t, "ts reference", 82)
	sync := func() {
		pushToToolbox(t, p, ours, id, 1000)
		toolboxpeer.Run(t, nil, "sync", "--from", p.Path(), "--to", theirs.path, "--identity", id)
	}
	txid := fmt.Sprintf("%064x", 0xbeef02)
	db := rawDB(t, p.Path())
	// A cycle after the later write (between the proof and its link) and after the link.
	for _, w := range []struct {
		stamp, q string
		sync     bool
	}{
		{"2026-07-01T10:00:00.000Z", linkedTx(me, txid, true), false},
		{"2026-07-01T10:00:01.000Z", linkedProof(txid), false},
		{"2026-07-01T10:00:01.005Z", labelRow(me, "later"), true},
		{"2026-07-01T10:00:02.000Z", linkProof(txid), true},
	} {
		mustExec(t, db, w.q, w.stamp)
		if w.sync {
			sync()
		}
	}
	sameWallet(t, p, mustOpen(t, ours.path, Options{ReadOnly: true}), id)
	var d toolboxpeer.Dump
	toolboxpeer.Run(t, &d, "dump", "--db", theirs.path, "--identity", id)
	if tx := d["transactions"]; len(tx) != 1 || tx[0]["status"] != "completed" || tx[0]["provenTxId"] != nil || len(d["proven_txs"]) != 0 {
		t.Fatalf("the toolbox's own producer and consumer: transactions %v, proofs %v; want a completed transaction without its proof", tx, d["proven_txs"])
	}
}
