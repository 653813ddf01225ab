package localstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// These tests hold walletsync's BRC-40 producer and consumer against @bsv/wallet-toolbox
// 2.1.26's own getSyncChunk and processSyncChunk, run by the Node peer one call at a time
// (about half a second each, so the fixtures are sized to keep the chunk count small).

// tsStore is a store the toolbox created.
type tsStore struct{ path, sik, name string }

func newTSStore(tb testing.TB, name string, seed uint64) tsStore {
	tb.Helper()
	s := tsStore{path: filepath.Join(tb.TempDir(), "ts.sqlite"), sik: FixtureIdentity(seed), name: name}
	toolboxpeer.Run(tb, nil, "create", "--db", s.path, "--chain", "test", "--sik", s.sik, "--name", s.name)
	return s
}

func writeJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.CreateTemp(tb.TempDir(), "*.json")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		tb.Fatal(err)
	}
	return f.Name()
}

// tsGetChunk is the toolbox's getSyncChunk on db, as the wire carries its answer.
func tsGetChunk(tb testing.TB, db string, args brc40.RequestSyncChunkArgs) []byte {
	tb.Helper()
	var raw json.RawMessage
	toolboxpeer.Run(tb, &raw, "getchunk", "--db", db, "--identity", args.IdentityKey, "--args-file", writeJSON(tb, args))
	return raw
}

// tsSyncArgs is the toolbox consumer's next request (EntitySyncState.fromStorage, then
// makeRequestSyncChunkArgs), read through walletsync's strict decoder.
func tsSyncArgs(tb testing.TB, db tsStore, identity string, producer wallet.Settings, maxItems int64) brc40.RequestSyncChunkArgs {
	tb.Helper()
	var args brc40.RequestSyncChunkArgs
	toolboxpeer.Run(tb, &args, "syncargs", "--db", db.path, "--identity", identity, "--from-sik", producer.StorageIdentityKey,
		"--from-name", producer.StorageName, "--max-items", strconv.FormatInt(maxItems, 10))
	return args
}

func tsProcessChunk(tb testing.TB, db tsStore, producer wallet.Settings, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) brc40.ProcessSyncChunkResult {
	tb.Helper()
	var res brc40.ProcessSyncChunkResult
	toolboxpeer.Run(tb, &res, "processchunk", "--db", db.path, "--identity", args.IdentityKey, "--from-sik", producer.StorageIdentityKey,
		"--from-name", producer.StorageName, "--args-file", writeJSON(tb, args), "--chunk-file", writeJSON(tb, chunk))
	return res
}

func mustOpen(tb testing.TB, path string, opts Options) *Store {
	tb.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func mustSettings(tb testing.TB, s *Store) wallet.Settings {
	tb.Helper()
	st, err := s.Settings(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// pullFromToolbox runs the raw sync loop with the toolbox producing from db and walletsync
// consuming into c, and returns the number of chunks.
func pullFromToolbox(tb testing.TB, db tsStore, c *Store, identity string, maxRoughSize, maxItems int64) int {
	tb.Helper()
	ctx := context.Background()
	for n := 1; n < 1000; n++ {
		st, err := c.FindOrInsertSyncState(ctx, identity, db.sik, db.name)
		if err != nil {
			tb.Fatal(err)
		}
		args := st.MakeRequestSyncChunkArgs(identity, mustSIK(tb, c), maxRoughSize, maxItems)
		var chunk brc40.SyncChunk
		if err := json.Unmarshal(tsGetChunk(tb, db.path, args), &chunk); err != nil {
			tb.Fatalf("decode the toolbox's chunk %d: %v", n, err)
		}
		res, err := c.ProcessSyncChunk(ctx, args, chunk)
		if err != nil {
			tb.Fatalf("chunk %d: %v", n, err)
		}
		if res.Done {
			return n
		}
	}
	tb.Fatal("the loop did not complete")
	return 0
}

// pushToToolbox runs the raw sync loop with walletsync producing from p and the toolbox
// consuming into db, and returns the number of chunks.
func pushToToolbox(tb testing.TB, p *Store, db tsStore, identity string, maxItems int64) int {
	tb.Helper()
	ps := mustSettings(tb, p)
	for n := 1; n < 1000; n++ {
		args := tsSyncArgs(tb, db, identity, ps, maxItems)
		chunk, err := p.GetSyncChunk(context.Background(), args)
		if err != nil {
			tb.Fatalf("chunk %d: %v", n, err)
		}
		if tsProcessChunk(tb, db, ps, args, chunk).Done {
			return n
		}
	}
	tb.Fatal("the loop did not complete")
	return 0
}

// stripDump drops what two consumers of the same chunks may legitimately differ in: the
// creation time and active store of their own user row and default basket, and their sync
// states' own identity (refNum) and times. It also compares a proof request's history and
// notify as JSON values: when walletsync's merge unites history notes it writes their keys
// sorted (as a BRC-38 restore does), the toolbox in the order they arrived.
func stripDump(tb testing.TB, d toolboxpeer.Dump) toolboxpeer.Dump {
	tb.Helper()
	for _, r := range d["proven_tx_reqs"] {
		for _, k := range []string{"history", "notify"} {
			var v any
			if err := json.Unmarshal([]byte(r[k].(string)), &v); err != nil {
				tb.Fatalf("proven_tx_reqs.%s: %v", k, err)
			}
			r[k] = v
		}
	}
	for _, r := range d["users"] {
		delete(r, "created_at")
		delete(r, "activeStorage")
	}
	for _, r := range d["output_baskets"] {
		if r["name"] == "default" {
			delete(r, "created_at")
		}
	}
	for _, r := range d["sync_states"] {
		delete(r, "refNum")
		delete(r, "created_at")
		delete(r, "updated_at")
	}
	return d
}

func TestBRC40Interop_ToolboxProducerWalletsyncConsumer(t *testing.T) {
	t.Parallel()
	id := FixtureIdentity(45)
	a := newTSStore(t, "ts producer", 46)
	toolboxpeer.Run(t, nil, "fill", "--db", a.path, "--identity", id, "--seed", "2", "--labels", "10")
	const maxItems = 20

	// The toolbox's own loop into a toolbox store is the reference.
	ref := newTSStore(t, "ts consumer", 47)
	var tsRun struct{ Chunks, Inserts int }
	toolboxpeer.Run(t, &tsRun, "sync", "--from", a.path, "--to", ref.path, "--identity", id, "--max-items", strconv.Itoa(maxItems))

	c := mustCreate(t, Options{})
	chunks := pullFromToolbox(t, a, c, id, 0, maxItems)
	if chunks != tsRun.Chunks || chunks < 4 {
		t.Fatalf("walletsync consumed %d chunks, the toolbox %d", chunks, tsRun.Chunks)
	}

	// Every row of the producer arrived, in walletsync's reading.
	ar := mustOpen(t, a.path, Options{ReadOnly: true})
	sameWallet(t, ar, c, id)
	// And in the toolbox's reading, walletsync's consumer holds what the toolbox's own
	// consumer holds, ids, notified flags and the sync_states row included: the sync map
	// text byte for byte, when, status, init.
	var got, want toolboxpeer.Dump
	toolboxpeer.Run(t, &got, "dump", "--db", c.Path(), "--identity", id)
	toolboxpeer.Run(t, &want, "dump", "--db", ref.path, "--identity", id)
	compareDumps(t, stripDump(t, got), stripDump(t, want))
	if len(got["sync_states"]) != 1 {
		t.Fatalf("%d sync states", len(got["sync_states"]))
	}

	// Then the producer changes: rows strictly newer, one change without a newer stamp
	// (which must not travel), a proof (never updated), a proof request (its own merge),
	// a new row. The two consumers swap sides: the toolbox continues on walletsync's file
	// and walletsync on the toolbox's, each from the other's stored state, and they must
	// still hold the same rows and state.
	later := "2026-06-01T00:00:00.000Z"
	raw := rawDB(t, a.path)
	for _, q := range []string{
		`UPDATE users SET updated_at = ?1`,
		`UPDATE transactions SET status = 'completed', description = 'now completed', updated_at = ?1 WHERE transactionId = 2`,
		`UPDATE outputs SET spendable = 0, spentBy = 3, updated_at = ?1 WHERE outputId = 3`,
		`UPDATE output_baskets SET numberOfDesiredUTXOs = 20, updated_at = ?1 WHERE name = 'savings'`,
		`UPDATE tx_labels SET isDeleted = 1, updated_at = ?1 WHERE label = 'payment'`,
		`UPDATE tx_labels_map SET isDeleted = 1, updated_at = ?1 WHERE txLabelId = 1 AND transactionId = 1`,
		`UPDATE output_tags_map SET isDeleted = 1, updated_at = ?1 WHERE outputTagId = 1 AND outputId = 2`,
		`UPDATE certificates SET verifier = NULL, updated_at = ?1 WHERE certificateId = 1`,
		`UPDATE certificate_fields SET fieldValue = 'bmV3', updated_at = ?1 WHERE certificateId = 1 AND fieldName = 'alpha'`,
		`UPDATE certificate_fields SET fieldValue = 'c2FtZQ==' WHERE certificateId = 1 AND fieldName = 'beta'`,
		`UPDATE commissions SET isRedeemed = 1, updated_at = ?1 WHERE commissionId = 1`,
		`UPDATE proven_txs SET blockHash = 'ff', updated_at = ?1 WHERE provenTxId = 1`,
		`UPDATE proven_tx_reqs SET status = 'unfail', attempts = 9, batch = 'feedface', notify = '{"transactionIds":[1,3]}',
			history = '{"notes":[{"when":"2026-06-01T00:00:00.000Z","what":"rebroadcast","attempt":9}]}', updated_at = ?1 WHERE provenTxReqId = 1`,
		`INSERT INTO tx_labels (created_at, updated_at, userId, label, isDeleted) VALUES (?1, ?1, 1, 'added later', 0)`,
	} {
		mustExec(t, raw, q, later)
	}
	raw.Close()
	wantArgs := tsSyncArgs(t, ref, id, wallet.Settings{StorageIdentityKey: a.sik, StorageName: a.name}, maxItems)
	c.Close()
	var tsAgain struct{ Chunks, Inserts, Updates int }
	toolboxpeer.Run(t, &tsAgain, "sync", "--from", a.path, "--to", c.Path(), "--identity", id, "--max-items", strconv.Itoa(maxItems))
	r := mustOpen(t, ref.path, Options{})
	st, err := r.FindOrInsertSyncState(t.Context(), id, a.sik, a.name)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.MakeRequestSyncChunkArgs(id, ref.sik, 0, maxItems); !reflect.DeepEqual(got, wantArgs) {
		t.Fatalf("walletsync's next request from the toolbox's state:\n%+v\nthe toolbox's:\n%+v", got, wantArgs)
	}
	pullFromToolbox(t, a, r, id, 0, maxItems)
	if tsAgain.Inserts != 1 || tsAgain.Updates == 0 {
		t.Fatalf("the toolbox's second cycle on walletsync's state: %+v", tsAgain)
	}
	toolboxpeer.Run(t, &got, "dump", "--db", c.Path(), "--identity", id)
	toolboxpeer.Run(t, &want, "dump", "--db", ref.path, "--identity", id)
	// The newer user row carried the producer's activeStorage to both (BRC-40's own rule).
	if got["users"][0]["activeStorage"] != a.sik || want["users"][0]["activeStorage"] != a.sik {
		t.Fatalf("activeStorage after a newer user row: %v and %v, want %s", got["users"][0]["activeStorage"], want["users"][0]["activeStorage"], a.sik)
	}
	compareDumps(t, stripDump(t, got), stripDump(t, want))
}

// sharedStampFixture has the shape of the toolbox's own sync benchmark (walletsync's
// toolbox fixture), scaled down: labels and their map rows all sharing one updated_at, 10%
// of them tombstoned, on transactions and proofs of 32 KiB. Only offsets can page through
// such a batch, and the large rows cross size budgets.
func sharedStampFixture(tb testing.TB, labels int) (*Store, string) {
	tb.Helper()
	s := mustCreate(tb, Options{})
	id := FixtureIdentity(54)
	userID, _, err := s.EnsureUser(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	stamp := isoTime("2026-05-01T10:00:00.000Z")
	big := make([]byte, 32<<10)
	for i := range big {
		big[i] = byte(i * 31)
	}
	err = s.writeTx(context.Background(), func(tx *sql.Tx) error {
		w := newRowWriter(tx)
		defer w.close()
		ins := func(t *wallet.Table, f fields) (int64, error) {
			if _, ok := f["created_at"]; !ok {
				f["created_at"], f["updated_at"] = stamp.Add(-time.Hour), stamp.Add(-time.Hour)
			}
			return w.insert(context.Background(), t, newRow(t, f), false)
		}
		var txs []int64
		for i := range 6 {
			txid := fmt.Sprintf("%064x", 0xabc0+i)
			p, err := ins(wallet.ProvenTxs, fields{"txid": txid, "height": 900000 + i, "index": i, "merklePath": big[:1024], "rawTx": big,
				"blockHash": fmt.Sprintf("%064x", i), "merkleRoot": fmt.Sprintf("%064x", i+1)})
			if err != nil {
				return err
			}
			t, err := ins(wallet.Transactions, fields{"userId": userID, "provenTxId": p, "status": "completed", "reference": fmt.Sprintf("ref-%d", i),
				"isOutgoing": false, "satoshis": 1000 * i, "txid": txid, "rawTx": big})
			if err != nil {
				return err
			}
			txs = append(txs, t)
		}
		for i := range labels {
			l, err := ins(wallet.TxLabels, fields{"created_at": stamp, "updated_at": stamp, "userId": userID, "label": fmt.Sprintf("label-%05d", i), "isDeleted": i%10 == 9})
			if err != nil {
				return err
			}
			if _, err := ins(wallet.TxLabelsMap, fields{"created_at": stamp, "updated_at": stamp, "txLabelId": l, "transactionId": txs[i%len(txs)], "isDeleted": i%10 == 9}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s, id
}

func TestBRC40Interop_ToolboxProducerSharedStampBatch(t *testing.T) {
	t.Parallel()
	// walletsync's full toolbox fixture (10,000 labels, 64 proofs) served by the toolbox
	// takes 11 s in one 26 MB chunk and over a minute under -race (the toolbox spends 4.6 s
	// producing it, walletsync 0.7 s decoding and 2.2 s merging, each several times slower
	// under the race detector); its default 1,000 items would make 23 chunks. The same shape
	// at 1/40 the size keeps every property: the shared stamp split across chunks by
	// offsets alone, and 32 KiB rows that cross the size budget.
	p, id := sharedStampFixture(t, 250)
	db := tsStore{path: p.Path(), sik: mustSIK(t, p), name: mustSettings(t, p).StorageName}
	c := mustCreate(t, Options{})
	chunks := pullFromToolbox(t, db, c, id, 500_000, 150)
	t.Logf("%d chunks", chunks)
	if chunks < 5 {
		t.Fatalf("%d chunks: the budgets did not split the batch", chunks)
	}
	sameWallet(t, p, c, id)
}

func TestBRC40Interop_WalletsyncProducerToolboxConsumer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		producer func(t *testing.T) (*Store, string)
	}{
		{"walletsync store", func(t *testing.T) (*Store, string) {
			p := mustCreate(t, Options{})
			return p, mustSeed(t, p, FixtureSmall, 8)
		}},
		{"toolbox store", func(t *testing.T) (*Store, string) {
			// outputs come in key order from walletsync, in index order from the toolbox
			a := newTSStore(t, "ts producer", 48)
			id := FixtureIdentity(49)
			toolboxpeer.Run(t, nil, "fill", "--db", a.path, "--identity", id, "--seed", "4")
			return mustOpen(t, a.path, Options{}), id
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, id := tc.producer(t)
			const maxItems = 40
			b := newTSStore(t, "ts consumer", 50)
			chunks := pushToToolbox(t, p, b, id, maxItems)

			// The toolbox's own producer on the same file is the reference.
			ref := newTSStore(t, "ts reference", 51)
			var tsRun struct{ Chunks int }
			toolboxpeer.Run(t, &tsRun, "sync", "--from", p.Path(), "--to", ref.path, "--identity", id, "--max-items", strconv.Itoa(maxItems))
			if chunks != tsRun.Chunks || chunks < 3 {
				t.Fatalf("walletsync produced %d chunks, the toolbox %d", chunks, tsRun.Chunks)
			}
			br, rr := mustOpen(t, b.path, Options{ReadOnly: true}), mustOpen(t, ref.path, Options{ReadOnly: true})
			sameWallet(t, p, br, id)  // the toolbox consumer holds walletsync's producer's wallet
			sameWallet(t, rr, br, id) // as the toolbox consumer of the toolbox's producer does
			// The two consumers' states agree on everything but the local ids.
			gs, rs := readSyncState(t, br, id, p), readSyncState(t, rr, id, p)
			if !reflect.DeepEqual(gs.When, rs.When) {
				t.Fatalf("when %v, the toolbox's %v", gs.When, rs.When)
			}
			for _, tb := range wallet.Entities {
				g, r := gs.SyncMap.Entity(tb), rs.SyncMap.Entity(tb)
				if g.Count != r.Count || !reflect.DeepEqual(g.MaxUpdatedAt, r.MaxUpdatedAt) || len(g.IDMap) != len(r.IDMap) {
					t.Errorf("%s: %+v, the toolbox's %+v", tb.Entity, g, r)
				}
			}
		})
	}
}

// exactFixture is a walletsync store on which the toolbox's getSyncChunk, which has no
// ORDER BY, returns rows in key order too: outputs in the order of the toolbox's
// (userId, basketId, spendable, ...) indexes and certificates in the order of their
// (userId, type, ...) index coincide with their ids. Its values cover every column kind,
// NULLs, tombstones, shared updated_at stamps, JSON-escaped and non-BMP text and both
// values of wasBroadcast. No transaction lacks a rawTx that the toolbox could back-fill.
// With differences set it holds what makes the toolbox's chunk differ from walletsync's: a
// transaction T4 whose txid's proof holds the rawTx and a NULL rawTx of its own, and a last
// output outside any basket, which the toolbox's index puts before the others.
func exactFixture(tb testing.TB, differences bool) (*Store, string) {
	tb.Helper()
	s := mustCreate(tb, Options{})
	id := FixtureIdentity(52)
	userID, _, err := s.EnsureUser(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	base := isoTime("2026-05-01T10:00:00.123Z")
	// row gives a row created at step seconds past base and updated 250 ms later; rows
	// with the same step share their stamps.
	row := func(step int, f fields) fields {
		c := base.Add(time.Duration(step) * time.Second)
		f["created_at"], f["updated_at"] = c, c.Add(250*time.Millisecond)
		return f
	}
	ins := func(t *wallet.Table, f fields) int64 { return mustInsertRow(tb, s, t, f) }
	blob := func(seed byte, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	txid := func(k int) string { return fmt.Sprintf("%064x", k*0x1111) }

	p1 := ins(wallet.ProvenTxs, row(1, fields{"txid": txid(1), "height": 800123, "index": 3, "merklePath": blob(1, 72), "rawTx": blob(2, 180),
		"blockHash": txid(91), "merkleRoot": txid(92)}))
	p2 := ins(wallet.ProvenTxs, row(1, fields{"txid": txid(4), "height": 800200, "index": 0, "merklePath": blob(3, 40), "rawTx": blob(4, 120),
		"blockHash": txid(93), "merkleRoot": txid(94)}))
	savings := ins(wallet.OutputBaskets, row(2, fields{"userId": userID, "name": "savings", "numberOfDesiredUTXOs": 10, "minimumDesiredUTXOValue": 5000, "isDeleted": false}))
	ins(wallet.OutputBaskets, row(3, fields{"userId": userID, "name": "vieux panier", "numberOfDesiredUTXOs": 6, "minimumDesiredUTXOValue": 10000, "isDeleted": true}))
	gift := ins(wallet.OutputTags, row(3, fields{"userId": userID, "tag": "gift", "isDeleted": false}))
	old := ins(wallet.OutputTags, row(4, fields{"userId": userID, "tag": "obsolète", "isDeleted": true}))
	pay := ins(wallet.TxLabels, row(4, fields{"userId": userID, "label": "payment", "isDeleted": false}))
	odd := ins(wallet.TxLabels, row(5, fields{"userId": userID, "label": "q\"b\\c\x01\x1f\n\t\u2028<>&😀", "isDeleted": false}))
	jp := ins(wallet.TxLabels, row(5, fields{"userId": userID, "label": "日本語ラベル", "isDeleted": true}))

	t1 := ins(wallet.Transactions, row(6, fields{"userId": userID, "provenTxId": p1, "status": "completed", "reference": "cmVmOjE=", "isOutgoing": false,
		"satoshis": 5000, "version": 1, "lockTime": 0, "description": "received 🎉", "txid": txid(1), "rawTx": blob(2, 180)}))
	t2 := ins(wallet.Transactions, row(7, fields{"userId": userID, "status": "unproven", "reference": "cmVmOjI=", "isOutgoing": true,
		"satoshis": -1210, "version": 1, "lockTime": 0, "description": "paid \"Zoë\"\nfor café", "txid": txid(2), "rawTx": blob(5, 226), "inputBEEF": blob(6, 400)}))
	t3 := ins(wallet.Transactions, row(7, fields{"userId": userID, "status": "unsigned", "reference": "cmVmOjM=", "isOutgoing": true, "satoshis": 0}))
	if differences {
		ins(wallet.Transactions, row(8, fields{"userId": userID, "provenTxId": p2, "status": "completed", "reference": "cmVmOjQ=", "isOutgoing": false,
			"satoshis": 42000, "version": 1, "lockTime": 0, "txid": txid(4)}))
	}

	out := func(step int, f fields) int64 {
		f["userId"], f["change"], f["providedBy"], f["type"] = userID, false, "you", "custom"
		if _, ok := f["purpose"]; !ok {
			f["purpose"] = ""
		}
		return ins(wallet.Outputs, row(step, f))
	}
	// Key order = (basketId NULL first, spendable, satoshis) order.
	o1 := out(9, fields{"transactionId": t2, "vout": 0, "spendable": false, "satoshis": 1000, "txid": txid(2), "customInstructions": `{"note":"ünïcode ✓"}`,
		"lockingScript": []byte{0x51}, "scriptLength": 1, "scriptOffset": 10})
	out(9, fields{"transactionId": t1, "basketId": int64(1), "vout": 0, "spendable": false, "satoshis": 5000, "txid": txid(1), "spentBy": t2,
		"sequenceNumber": 4294967295, "spendingDescription": "spent", "senderIdentityKey": FixtureIdentity(60)})
	out(10, fields{"transactionId": t2, "basketId": int64(1), "vout": 1, "spendable": true, "satoshis": 190, "purpose": "change", "txid": txid(2),
		"derivationPrefix": "ZHA6Mw==", "derivationSuffix": "ZHM6Mw==", "lockingScript": blob(7, 25), "scriptLength": 25, "scriptOffset": 80})
	o4 := out(11, fields{"transactionId": t3, "basketId": savings, "vout": 0, "spendable": true, "satoshis": 2100000000000000, "outputDescription": "all of it"})
	if differences {
		out(11, fields{"transactionId": t3, "vout": 1, "spendable": false, "satoshis": 1})
	}

	for _, m := range []fields{{"outputTagId": gift, "outputId": o1, "isDeleted": false}, {"outputTagId": old, "outputId": o4, "isDeleted": true}} {
		ins(wallet.OutputTagsMap, row(12, m))
	}
	for _, m := range []fields{{"txLabelId": pay, "transactionId": t1}, {"txLabelId": odd, "transactionId": t2}, {"txLabelId": jp, "transactionId": t2}} {
		m["isDeleted"] = m["txLabelId"] == jp
		ins(wallet.TxLabelsMap, row(13, m))
	}
	// Key order = (type, certifier, serialNumber) order.
	c1 := ins(wallet.Certificates, row(14, fields{"userId": userID, "serialNumber": "c2VyaWFsOjE=", "type": "YS10eXBl", "certifier": FixtureIdentity(61),
		"subject": FixtureIdentity(62), "verifier": FixtureIdentity(63), "revocationOutpoint": txid(1) + ".0", "signature": "3044abcd", "isDeleted": false}))
	c2 := ins(wallet.Certificates, row(15, fields{"userId": userID, "serialNumber": "c2VyaWFsOjI=", "type": "Yi10eXBl", "certifier": FixtureIdentity(61),
		"subject": FixtureIdentity(62), "revocationOutpoint": txid(1) + ".1", "signature": "3044ef01", "isDeleted": true}))
	for _, f := range []fields{{"certificateId": c1, "fieldName": "name"}, {"certificateId": c1, "fieldName": "émail"}, {"certificateId": c2, "fieldName": "Zeta"}} {
		f["userId"], f["fieldValue"], f["masterKey"] = userID, "dmFsdWU=", "bWFzdGVy"
		ins(wallet.CertificateFields, row(15, f))
	}
	ins(wallet.Commissions, row(16, fields{"userId": userID, "transactionId": t2, "satoshis": 20, "keyOffset": "a28=", "isRedeemed": false, "lockingScript": blob(8, 25)}))
	ins(wallet.ProvenTxReqs, row(17, fields{"provenTxId": p1, "status": "completed", "attempts": 3, "notified": true, "txid": txid(1),
		"history": `{"notes":[{"when":"2026-05-01T10:00:01.000Z","what":"status"}]}`, "notify": fmt.Sprintf(`{"transactionIds":[%d]}`, t1),
		"rawTx": blob(2, 180), "wasBroadcast": true, "rebroadcastAttempts": 0}))
	ins(wallet.ProvenTxReqs, row(18, fields{"status": "unmined", "attempts": 1, "notified": false, "txid": txid(2), "batch": "b1",
		"history": `{}`, "notify": `{}`, "inputBEEF": blob(9, 50), "wasBroadcast": false, "rebroadcastAttempts": 1}))
	return s, id
}

func TestBRC40Interop_ChunkEqualsToolboxChunk(t *testing.T) {
	t.Parallel()
	s, id := exactFixture(t, false)
	sik := mustSIK(t, s)
	ptr := func(t time.Time) *time.Time { return &t }
	shared := isoTime("2026-05-01T10:00:07.373Z") // the updated_at of two transactions
	for _, tc := range []struct {
		name string
		edit func(a *brc40.RequestSyncChunkArgs)
		// linked are the rows walletsync adds to the toolbox's chunk: older than since,
		// sent because a row that links them into the user's scope is not (sinceFilter).
		linked []string
	}{
		{"everything", func(a *brc40.RequestSyncChunkArgs) {}, nil},
		{"inclusive since on a shared stamp", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(shared) },
			[]string{"provenTxs " + fmt.Sprintf("%064x", 0x1111)}}, // the proof of a request updated later
		{"since equal to the user's stamp", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(brc40.UserEpoch()) }, nil},
		{"few items and offsets", func(a *brc40.RequestSyncChunkArgs) {
			a.MaxItems, a.Offsets[1].Offset, a.Offsets[3].Offset = 5, 1, 2
		}, nil},
		{"items running out on a type's last row", func(a *brc40.RequestSyncChunkArgs) { a.MaxItems = 9 }, nil},
		{"a rough size crossed inside transactions", func(a *brc40.RequestSyncChunkArgs) { a.MaxRoughSize = 3000 }, nil},
		{"a rough size of 0", func(a *brc40.RequestSyncChunkArgs) { a.MaxRoughSize = 0 }, nil},
		{"fewer offsets", func(a *brc40.RequestSyncChunkArgs) { a.Offsets = a.Offsets[:6] }, nil},
		{"offsets past the end", func(a *brc40.RequestSyncChunkArgs) {
			for i := range a.Offsets {
				a.Offsets[i].Offset = 50
			}
		}, nil},
		{"since after everything", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(isoTime("2027-01-01T00:00:00Z")) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := brc40.SyncState{StorageIdentityKey: sik, SyncMap: brc40.NewSyncMap()}
			a := st.MakeRequestSyncChunkArgs(id, FixtureIdentity(53), 0, 0)
			tc.edit(&a)
			chunk, err := s.GetSyncChunk(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			var linked []string
			for _, tb := range wallet.Entities {
				if a.Since == nil || chunk.Rows[tb.Name] == nil {
					continue
				}
				chunk.Rows[tb.Name] = slices.DeleteFunc(chunk.Rows[tb.Name], func(r wallet.Row) bool {
					if brc40.UpdatedAt(tb, r).Before(*a.Since) {
						linked = append(linked, tb.Plural+" "+fmt.Sprint(r[tb.Col(tb.Natural[0])]))
						return true
					}
					return false
				})
			}
			if !slices.Equal(linked, tc.linked) {
				t.Fatalf("rows older than since in walletsync's chunk: %v, want %v", linked, tc.linked)
			}
			got, err := chunk.MarshalJSON() // json.Marshal would re-escape <, >, & and U+2028
			if err != nil {
				t.Fatal(err)
			}
			want := tsGetChunk(t, s.Path(), a)
			if !bytes.Equal(got, want) {
				t.Fatalf("walletsync's chunk differs from the toolbox's:\n%s", firstJSONDifference(got, want))
			}
		})
	}
}

// TestBRC40Interop_KnownProducerDifferences pins the two ways the toolbox's chunk may differ
// from walletsync's for the same store and request: the toolbox's findTransactions fills a
// NULL transactions.rawTx from the proof with the same txid (walletsync sends the row as
// stored), and its outputs come in the order of an index (walletsync's in key order). The
// third, after a since, is walletsync's: the rows a changed row links into the user's scope
// (sinceFilter), which TestBRC40Interop_ChunkEqualsToolboxChunk names and takes out.
func TestBRC40Interop_KnownProducerDifferences(t *testing.T) {
	t.Parallel()
	s, id := exactFixture(t, true)
	st := brc40.SyncState{StorageIdentityKey: mustSIK(t, s), SyncMap: brc40.NewSyncMap()}
	a := st.MakeRequestSyncChunkArgs(id, FixtureIdentity(53), 0, 0)
	chunk, err := s.GetSyncChunk(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	var ts brc40.SyncChunk
	if err := json.Unmarshal(tsGetChunk(t, s.Path(), a), &ts); err != nil {
		t.Fatal(err)
	}

	ri := wallet.Transactions.Col("rawTx")
	var filled int
	for i, r := range ts.Rows[wallet.TableTransactions] {
		g := chunk.Rows[wallet.TableTransactions][i]
		if r[wallet.Transactions.Col("reference")] == "cmVmOjQ=" {
			proof := chunk.Rows[wallet.TableProvenTxs][1][wallet.ProvenTxs.Col("rawTx")]
			if g[ri] != nil || !reflect.DeepEqual(r[ri], proof) {
				t.Fatalf("T4 rawTx: walletsync %v, toolbox %d bytes (proof %d bytes)", g[ri], len(r[ri].([]byte)), len(proof.([]byte)))
			}
			r[ri] = nil
			filled++
		}
	}
	if filled != 1 {
		t.Fatalf("%d back-filled transactions", filled)
	}

	oi := wallet.Outputs.Col("outputId")
	byID := func(x, y wallet.Row) int { return cmp.Compare(x[oi].(int64), y[oi].(int64)) }
	outs := ts.Rows[wallet.TableOutputs]
	if slices.IsSortedFunc(outs, byID) {
		t.Fatal("the toolbox sent outputs in key order; the fixture no longer shows the difference")
	}
	slices.SortFunc(outs, byID)

	if !reflect.DeepEqual(ts, chunk) {
		t.Fatal("the chunks differ beyond the back-filled rawTx and the order of outputs")
	}
}

// readSyncState reads the one sync state of s for the user and producer p, without
// creating anything (s may be read-only).
func readSyncState(tb testing.TB, s *Store, identity string, p *Store) brc40.SyncState {
	tb.Helper()
	tx, err := s.readDB.BeginTx(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	userID, err := lookupUser(context.Background(), tx, identity)
	if err != nil {
		tb.Fatal(err)
	}
	states, err := readSyncStates(context.Background(), tx, "userId = ? AND storageIdentityKey = ?", userID, mustSIK(tb, p))
	if err != nil || len(states) != 1 {
		tb.Fatalf("%d sync states: %v", len(states), err)
	}
	return states[0]
}

// firstJSONDifference shows where two JSON texts first differ, with context.
func firstJSONDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("at byte %d (lengths %d, %d)\n got  …%s\n want …%s", i, len(got), len(want),
		got[lo:min(len(got), i+200)], want[lo:min(len(want), i+200)])
}
