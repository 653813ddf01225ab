package localstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/brc40"
	"walletsync/wallet"
)

// Fixture names a deterministic demo wallet that Seed generates.
type Fixture string

// The fixtures.
const (
	// FixtureSmall: a few rows in every table, with tombstones and NULL optional columns.
	FixtureSmall Fixture = "small"
	// FixtureToolbox: the shape of the toolbox's own sync benchmark: 10,000 labels sharing
	// one updated_at (10% tombstones) mapped to 64 proven transactions with 32 KiB raw
	// transactions and merkle paths, and some rows in every other table.
	FixtureToolbox Fixture = "toolbox"
	// FixtureLarge: a realistic big wallet of about 1 GB.
	FixtureLarge Fixture = "large"
)

// fixtureSpec is the shape of a generated wallet.
type fixtureSpec struct {
	transactions   int     // wallet transactions
	provenShare    float64 // share of transactions that are proven (with a proven_txs row)
	rawTxMin       int     // raw transaction size range, bytes
	rawTxMax       int
	beefShare      float64 // share of transactions carrying an inputBEEF
	beefMin        int
	beefMax        int
	merklePathSize int
	outputsPerTx   int
	labels         int     // distinct tx labels
	labelsOneStamp bool    // all labels and their map rows share one updated_at
	labelTombstone float64 // share of labels (and their map rows) soft-deleted
	labelsPerTx    int     // label map rows per transaction (when not one per label)
	tags           int
	certificates   int
	fieldsPerCert  int
	commitEvery    int // transactions per write transaction
}

var fixtureSpecs = map[Fixture]fixtureSpec{
	FixtureSmall: {transactions: 6, provenShare: 0.5, rawTxMin: 200, rawTxMax: 400, beefShare: 0.5, beefMin: 300, beefMax: 600,
		merklePathSize: 200, outputsPerTx: 2, labels: 4, labelTombstone: 0.25, labelsPerTx: 2, tags: 3, certificates: 2, fieldsPerCert: 6, commitEvery: 100},
	FixtureToolbox: {transactions: 64, provenShare: 1, rawTxMin: 32 << 10, rawTxMax: 32 << 10, merklePathSize: 1024,
		outputsPerTx: 2, labels: 10_000, labelsOneStamp: true, labelTombstone: 0.1, tags: 8, certificates: 4, fieldsPerCert: 4, commitEvery: 1000},
	FixtureLarge: {transactions: 70_000, provenShare: 0.8, rawTxMin: 1 << 10, rawTxMax: 5 << 10, beefShare: 0.5, beefMin: 2 << 10, beefMax: 6 << 10,
		merklePathSize: 1024, outputsPerTx: 2, labels: 2_000, labelTombstone: 0.02, labelsPerTx: 2, tags: 100, certificates: 50, fieldsPerCert: 5, commitEvery: 4000},
}

// ParseFixture returns the fixture named s.
func ParseFixture(s string) (Fixture, error) {
	if _, ok := fixtureSpecs[Fixture(s)]; !ok {
		return "", fmt.Errorf("unknown fixture %q (small, toolbox, large): %w", s, wallet.ErrInvalidArgument)
	}
	return Fixture(s), nil
}

// SeedOptions tune Seed.
type SeedOptions struct {
	// Seed makes the generated rows: the same seed gives the same rows.
	Seed uint64
	// IdentityKey is the user the rows belong to; when empty it is derived from Seed.
	IdentityKey string
	// Progress, when set, is called after each committed batch with the transactions written.
	Progress func(done, total int)
}

// SeedResult says what Seed wrote.
type SeedResult struct {
	IdentityKey string                     `json:"identityKey"`
	UserID      int64                      `json:"userId"`
	Rows        map[wallet.TableName]int64 `json:"rows"`
}

// FixtureIdentity returns the identity key that Seed uses for seed when none is given: a
// valid compressed public key, the same for the same seed.
func FixtureIdentity(seed uint64) string {
	return hex.EncodeToString(secp256k1.PrivKeyFromBytes(FixtureRootKey(seed)).PubKey().SerializeCompressed())
}

// FixtureRootKey returns the 32-byte private key behind FixtureIdentity(seed), so that tests
// and benchmarks can authenticate to a storage server as a fixture's user (BRC-104 signs as
// the wallet's identity). It is derived from public data: never a key for real funds.
func FixtureRootKey(seed uint64) []byte {
	h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("walletsync fixture identity "), seed))
	return h[:]
}

// Seed fills the store with the named fixture for one user, created if missing. Rows are
// valid for the toolbox (statuses, txids, base64 and hex fields, ISO times), deterministic for
// a seed, and written in batches of committed transactions.
func Seed(ctx context.Context, s *Store, f Fixture, opts SeedOptions) (SeedResult, error) {
	spec, ok := fixtureSpecs[f]
	if !ok {
		return SeedResult{}, fmt.Errorf("seed: unknown fixture %q: %w", f, wallet.ErrInvalidArgument)
	}
	if opts.IdentityKey == "" {
		opts.IdentityKey = FixtureIdentity(opts.Seed)
	}
	userID, _, err := s.EnsureUser(ctx, opts.IdentityKey)
	if err != nil {
		return SeedResult{}, fmt.Errorf("seed: %w", err)
	}
	g := &generator{spec: spec, user: userID, identity: opts.IdentityKey,
		rnd:   rand.New(rand.NewPCG(opts.Seed, uint64(len(f)))),
		bytes: rand.NewChaCha8(sha256.Sum256(binary.BigEndian.AppendUint64([]byte(f), opts.Seed))),
		clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(opts.Seed%1000) * time.Hour),
		rows:  map[wallet.TableName]int64{}}
	if err := s.writeTx(ctx, func(tx *sql.Tx) error { return g.prologue(ctx, tx) }); err != nil {
		return SeedResult{}, fmt.Errorf("seed %s: %w", f, err)
	}
	for start := 0; start < spec.transactions; start += spec.commitEvery {
		end := min(start+spec.commitEvery, spec.transactions)
		err := s.writeTx(ctx, func(tx *sql.Tx) error { return g.transactions(ctx, tx, start, end) })
		if err != nil {
			return SeedResult{}, fmt.Errorf("seed %s: %w", f, err)
		}
		if opts.Progress != nil {
			opts.Progress(end, spec.transactions)
		}
	}
	if err := s.writeTx(ctx, func(tx *sql.Tx) error { return g.epilogue(ctx, tx) }); err != nil {
		return SeedResult{}, fmt.Errorf("seed %s: %w", f, err)
	}
	return SeedResult{IdentityKey: opts.IdentityKey, UserID: userID, Rows: g.rows}, nil
}

// generator makes the rows of one fixture. It is single-use and not concurrent.
type generator struct {
	spec     fixtureSpec
	user     int64
	identity string
	rnd      *rand.Rand
	bytes    *rand.ChaCha8
	clock    time.Time // advances a little with every row, so updated_at values differ

	basketID   int64     // the default basket
	labelStamp time.Time // the one updated_at of every label in the toolbox shape
	labelIDs   []int64   // all labels
	tagIDs     []int64
	prevOutID  int64 // the previous transaction's first output, which the next one may spend
	rows       map[wallet.TableName]int64
}

func (g *generator) tick() time.Time {
	g.clock = g.clock.Add(time.Duration(1+g.rnd.IntN(5000)) * time.Millisecond)
	return g.clock
}

func (g *generator) blob(n int) []byte {
	b := make([]byte, n)
	_, _ = g.bytes.Read(b) // ChaCha8.Read always fills b and returns nil
	return b
}

func (g *generator) b64(n int) string { return base64.StdEncoding.EncodeToString(g.blob(n)) }
func (g *generator) hex(n int) string { return hex.EncodeToString(g.blob(n)) }
func (g *generator) size(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + g.rnd.IntN(hi-lo+1)
}

func (g *generator) insert(ctx context.Context, w *rowWriter, t *wallet.Table, f fields) (int64, error) {
	id, err := w.insert(ctx, t, newRow(t, f), false)
	if err == nil {
		g.rows[t.Name]++
	}
	return id, err
}

// stamps returns created_at and updated_at fields, updated at or after created.
func (g *generator) stamps(f fields) fields {
	created := g.tick()
	f["created_at"] = created
	f["updated_at"] = created.Add(time.Duration(g.rnd.IntN(3)) * time.Second)
	return f
}

// prologue writes the rows that transactions refer to: baskets, labels, tags, certificates.
func (g *generator) prologue(ctx context.Context, tx *sql.Tx) error {
	w := newRowWriter(tx)
	defer w.close()
	if err := tx.QueryRowContext(ctx, "SELECT basketId FROM output_baskets WHERE userId = ? AND name = ?", g.user, brc40.DefaultBasket).Scan(&g.basketID); err != nil {
		return classify(err)
	}
	for i, name := range []string{"savings", "tokens", "retired"} {
		if _, err := g.insert(ctx, w, wallet.OutputBaskets, g.stamps(fields{"userId": g.user, "name": name,
			"numberOfDesiredUTXOs": 6, "minimumDesiredUTXOValue": 10000, "isDeleted": i == 2})); err != nil {
			return err
		}
	}
	g.labelStamp = g.tick()
	for i := range g.spec.labels {
		f := fields{"userId": g.user, "label": labelName(i), "isDeleted": g.tombstone(i, g.spec.labels, g.spec.labelTombstone)}
		if g.spec.labelsOneStamp {
			f["created_at"], f["updated_at"] = g.labelStamp, g.labelStamp
		} else {
			g.stamps(f)
		}
		id, err := g.insert(ctx, w, wallet.TxLabels, f)
		if err != nil {
			return err
		}
		g.labelIDs = append(g.labelIDs, id)
	}
	for i := range g.spec.tags {
		id, err := g.insert(ctx, w, wallet.OutputTags, g.stamps(fields{"userId": g.user,
			"tag": fmt.Sprintf("tag-%03d", i), "isDeleted": g.tombstone(i, g.spec.tags, 0.2)}))
		if err != nil {
			return err
		}
		g.tagIDs = append(g.tagIDs, id)
	}
	return g.certificates(ctx, w)
}

// tombstone soft-deletes an evenly spread share of n items.
func (g *generator) tombstone(i, n int, share float64) bool {
	if share <= 0 {
		return false
	}
	every := max(1, int(1/share))
	return i%every == every-1
}

func labelName(i int) string {
	// Some labels carry non-ASCII text, as real ones do.
	switch i % 7 {
	case 3:
		return fmt.Sprintf("café-%05d", i)
	case 5:
		return fmt.Sprintf("ラベル-%05d", i)
	}
	return fmt.Sprintf("label-%05d", i)
}

// certificateFieldNames mixes case and scripts: their localeCompare order differs from
// byte order, which BRC-38's canonical order depends on.
var certificateFieldNames = []string{"name", "Email", "email", "Zeta", "émigré", "日本", "age", "Alpha"}

func (g *generator) certificates(ctx context.Context, w *rowWriter) error {
	for i := range g.spec.certificates {
		certID, err := g.insert(ctx, w, wallet.Certificates, g.stamps(fields{"userId": g.user,
			"serialNumber": g.b64(32), "type": g.b64(32), "certifier": FixtureIdentity(uint64(1000 + i%3)),
			"subject": g.identity, "verifier": g.optional(0.5, FixtureIdentity(uint64(2000+i))),
			"revocationOutpoint": g.hex(32) + ".0", "signature": g.hex(71), "isDeleted": i%4 == 3}))
		if err != nil {
			return err
		}
		for j := range g.spec.fieldsPerCert {
			if _, err := g.insert(ctx, w, wallet.CertificateFields, g.stamps(fields{"userId": g.user,
				"certificateId": certID, "fieldName": certificateFieldNames[j%len(certificateFieldNames)],
				"fieldValue": g.b64(24), "masterKey": g.b64(48)})); err != nil {
				return err
			}
		}
	}
	return nil
}

// optional returns v with probability p, else nil (a NULL column).
func (g *generator) optional(p float64, v any) any {
	if g.rnd.Float64() < p {
		return v
	}
	return nil
}

// transactions writes wallet transactions [start, end) with their proofs, outputs, labels,
// tags, commissions and proof requests.
func (g *generator) transactions(ctx context.Context, tx *sql.Tx, start, end int) error {
	w := newRowWriter(tx)
	defer w.close()
	for i := start; i < end; i++ {
		raw := g.blob(g.size(g.spec.rawTxMin, g.spec.rawTxMax))
		h1 := sha256.Sum256(raw)
		h2 := sha256.Sum256(h1[:])
		txid := hex.EncodeToString(h2[:])
		proven := g.rnd.Float64() < g.spec.provenShare
		var provenTxID any
		status := []string{"unproven", "sending", "nosend", "completed"}[g.rnd.IntN(3)]
		if proven {
			status = "completed"
			id, err := g.insert(ctx, w, wallet.ProvenTxs, g.stamps(fields{"txid": txid, "height": 800_000 + i,
				"index": g.rnd.IntN(3000), "merklePath": g.blob(g.spec.merklePathSize), "rawTx": raw,
				"blockHash": g.hex(32), "merkleRoot": g.hex(32)}))
			if err != nil {
				return err
			}
			provenTxID = id
		}
		var beef any
		if g.rnd.Float64() < g.spec.beefShare {
			beef = g.blob(g.size(g.spec.beefMin, g.spec.beefMax))
		}
		satoshis := int64(1000 + g.rnd.IntN(5_000_000))
		txID, err := g.insert(ctx, w, wallet.Transactions, g.stamps(fields{"userId": g.user, "provenTxId": provenTxID,
			"status": status, "reference": g.b64(12), "isOutgoing": i%3 == 0, "satoshis": satoshis,
			"version": 1, "lockTime": 0, "description": g.optional(0.9, fmt.Sprintf("fixture payment %d", i)),
			"txid": txid, "inputBEEF": beef, "rawTx": raw}))
		if err != nil {
			return err
		}
		if err := g.outputs(ctx, w, i, txID, txid, satoshis); err != nil {
			return err
		}
		if err := g.labelTransaction(ctx, w, i, txID); err != nil {
			return err
		}
		if i%5 == 0 {
			if _, err := g.insert(ctx, w, wallet.Commissions, g.stamps(fields{"userId": g.user, "transactionId": txID,
				"satoshis": 100 + g.rnd.IntN(900), "keyOffset": g.b64(32), "isRedeemed": i%10 == 0,
				"lockingScript": p2pkh(g.blob(20))})); err != nil {
				return err
			}
		}
		reqStatus := "unmined"
		if proven {
			reqStatus = "completed"
		}
		if _, err := g.insert(ctx, w, wallet.ProvenTxReqs, g.stamps(fields{"provenTxId": provenTxID, "status": reqStatus,
			"attempts": g.rnd.IntN(4), "notified": proven, "txid": txid, "batch": g.optional(0.3, fmt.Sprintf("batch-%d", i/10)),
			"history": fmt.Sprintf(`{"notes":[{"when":"%s","what":"fixture","attempts":%d}]}`, wallet.FormatTime(g.clock), i%4),
			"notify":  fmt.Sprintf(`{"transactionIds":[%d]}`, txID), "rawTx": raw, "inputBEEF": beef,
			"wasBroadcast": !proven && i%2 == 0, "rebroadcastAttempts": i % 3})); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) outputs(ctx context.Context, w *rowWriter, i int, txID int64, txid string, satoshis int64) error {
	for vout := range g.spec.outputsPerTx {
		change := vout == g.spec.outputsPerTx-1
		f := fields{"userId": g.user, "transactionId": txID, "spendable": true, "change": change, "vout": vout,
			"satoshis": satoshis / int64(g.spec.outputsPerTx), "providedBy": []string{"you", "storage"}[vout%2],
			"purpose": map[bool]string{true: "change", false: "payment"}[change], "type": "P2PKH", "txid": txid,
			"lockingScript": p2pkh(g.blob(20)), "scriptLength": 25, "scriptOffset": 10 + 34*vout}
		if change {
			f["basketId"] = g.basketID
			f["derivationPrefix"], f["derivationSuffix"] = g.b64(10), g.b64(10)
			f["senderIdentityKey"] = g.identity
		} else {
			f["outputDescription"] = g.optional(0.7, "payment output")
			f["customInstructions"] = g.optional(0.2, `{"type":"fixture"}`)
		}
		outID, err := g.insert(ctx, w, wallet.Outputs, g.stamps(f))
		if err != nil {
			return err
		}
		if vout == 0 && g.prevOutID != 0 && i%2 == 1 {
			// This transaction spends the previous one's first output.
			if _, err := w.tx.ExecContext(ctx, "UPDATE outputs SET spendable = 0, spentBy = ?, spendingDescription = 'fixture spend', updated_at = ? WHERE outputId = ?",
				txID, wallet.FormatTime(g.tick()), g.prevOutID); err != nil {
				return classify(err)
			}
		}
		if vout == 0 {
			g.prevOutID = outID
		}
		if len(g.tagIDs) > 0 && g.rnd.IntN(4) == 0 {
			if _, err := g.insert(ctx, w, wallet.OutputTagsMap, g.stamps(fields{"outputTagId": g.tagIDs[g.rnd.IntN(len(g.tagIDs))],
				"outputId": outID, "isDeleted": g.rnd.IntN(10) == 0})); err != nil {
				return err
			}
		}
	}
	return nil
}

// labelTransaction maps labels to transaction i. The toolbox shape maps every label, spread
// over the transactions; the others give each transaction a few labels.
func (g *generator) labelTransaction(ctx context.Context, w *rowWriter, i int, txID int64) error {
	if len(g.labelIDs) == 0 {
		return nil
	}
	var labels []int
	if g.spec.labelsOneStamp {
		for l := i; l < len(g.labelIDs); l += g.spec.transactions {
			labels = append(labels, l)
		}
	} else {
		for k := range g.spec.labelsPerTx {
			labels = append(labels, (i*7+k*13)%len(g.labelIDs))
		}
	}
	seen := map[int]bool{}
	for _, l := range labels {
		if seen[l] {
			continue
		}
		seen[l] = true
		f := fields{"txLabelId": g.labelIDs[l], "transactionId": txID, "isDeleted": g.tombstone(l, len(g.labelIDs), g.spec.labelTombstone)}
		if g.spec.labelsOneStamp {
			f["created_at"], f["updated_at"] = g.labelStamp, g.labelStamp
		} else {
			g.stamps(f)
		}
		if _, err := g.insert(ctx, w, wallet.TxLabelsMap, f); err != nil {
			return err
		}
	}
	return nil
}

// epilogue writes a sync state, as a wallet that has synced before carries one.
func (g *generator) epilogue(ctx context.Context, tx *sql.Tx) error {
	w := newRowWriter(tx)
	defer w.close()
	syncMap := `{`
	for i, t := range wallet.Entities {
		if i > 0 {
			syncMap += ","
		}
		syncMap += fmt.Sprintf(`"%s":{"entityName":"%s","idMap":{},"count":0}`, t.Entity, t.Entity)
	}
	syncMap += `}`
	_, err := g.insert(ctx, w, wallet.SyncStates, g.stamps(fields{"userId": g.user, "storageIdentityKey": FixtureIdentity(9999),
		"storageName": "fixture backup", "status": "unknown", "init": false, "refNum": g.b64(12), "syncMap": syncMap,
		"when": g.clock}))
	return err
}

// p2pkh returns a pay-to-public-key-hash locking script for a 20-byte hash.
func p2pkh(hash []byte) []byte {
	return append(append([]byte{0x76, 0xa9, 0x14}, hash...), 0x88, 0xac)
}
