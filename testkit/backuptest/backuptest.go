// Package backuptest is the harness of the portable backup tests (portable, portable/brc38):
// private copies of seeded and toolbox-made wallet files, SQL edits that give a test the odd
// rows it needs, the toolbox's own BRC-38 export of a file, and BRC-38 documents built as
// trees and written canonically. It stands below the codec (it imports neither brc38 nor
// brc39), so the codec's own tests use it too.
package backuptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/testkit"
	"walletsync/testkit/tier"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// ExportedAt is the exportedAt every comparison pins on both sides.
var ExportedAt = time.Date(2026, 4, 23, 20, 0, 0, 123_000_000, time.UTC)

// ExportedAtISO is ExportedAt as a document carries it.
const ExportedAtISO = "2026-04-23T20:00:00.123Z"

// SmallSeed is the seed of the small fixture most tests copy.
const SmallSeed = 3

// Fixtures holds what the backup tests share beyond testkit.SeededWallet's seeded wallets:
// the wallet the toolbox itself made, made once, as two peer runs cost seconds. Main
// removes it when the tests end.
type Fixtures struct {
	toolbox func() (string, error)
}

// Main makes the package's Fixtures, stores them in *f, runs the tests and removes the
// toolbox-made wallet whatever the tests did; it returns the exit code for os.Exit. Use it
// from TestMain:
//
//	var fixtures *backuptest.Fixtures
//	func TestMain(m *testing.M) { os.Exit(backuptest.Main(m, &fixtures)) }
func Main(m *testing.M, f **Fixtures) int {
	dir, err := os.MkdirTemp("", "backuptest-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "backuptest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	fx := &Fixtures{}
	// The toolbox-made wallet is made once: two peer runs cost seconds.
	fx.toolbox = sync.OnceValues(func() (string, error) {
		path := filepath.Join(dir, "toolbox.sqlite")
		ctx := context.Background()
		if err := toolboxpeer.Try(ctx, nil, "create", "--db", path, "--chain", "test", "--sik", localstore.FixtureIdentity(78), "--name", "toolbox-peer"); err != nil {
			return "", err
		}
		return path, toolboxpeer.Try(ctx, nil, "fill", "--db", path, "--identity", localstore.FixtureIdentity(77))
	})
	*f = fx
	return m.Run()
}

// Store returns a private copy of a store on the test chain seeded with fixture f and
// seed (testkit.SeededWallet's, with its caveats), and the user's identity key.
func (fx *Fixtures) Store(tb testing.TB, f localstore.Fixture, seed uint64) (path, identity string) {
	tb.Helper()
	return testkit.SeededWallet(tb, f, seed), localstore.FixtureIdentity(seed)
}

// ToolboxStore returns a private copy of a store the toolbox itself created and filled
// with the peer's deterministic wallet: mixed-case and non-ASCII certificate field names
// (NFC and NFD spellings of one name among them), labels, baskets and descriptions.
func (fx *Fixtures) ToolboxStore(tb testing.TB) (path, identity string) {
	tb.Helper()
	tier.Full(tb, "Node and the @bsv/wallet-toolbox peer")
	tmpl, err := fx.toolbox()
	if err != nil {
		tb.Fatal(err)
	}
	path = filepath.Join(tb.TempDir(), "toolbox.sqlite")
	CopyFile(tb, tmpl, path)
	return path, localstore.FixtureIdentity(77)
}

// CopyFile copies a closed wallet file (a clean close leaves no WAL behind).
func CopyFile(tb testing.TB, from, to string) {
	tb.Helper()
	if _, err := os.Stat(from + "-wal"); err == nil {
		tb.Fatalf("%s has a WAL file: it was not closed cleanly", from)
	}
	if err := safefile.CopyNew(from, to); err != nil {
		tb.Fatal(err)
	}
}

// Open opens a wallet file read-only: reading a toolbox-made file must not change it.
func Open(tb testing.TB, path string) *localstore.Store {
	tb.Helper()
	s, err := localstore.Open(context.Background(), path, localstore.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Settings reads the store's settings row.
func Settings(tb testing.TB, s *localstore.Store) wallet.Settings {
	tb.Helper()
	st, err := s.Settings(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// WithView runs fn on a snapshot view of the file at path (with RowLookup when lookup is
// set, as a localstore view has it) and closes the view and the store before returning.
func WithView[T any](tb testing.TB, path string, lookup bool, fn func(wallet.View, wallet.Settings) (T, error)) (T, error) {
	tb.Helper()
	ctx := context.Background()
	s, err := localstore.Open(ctx, path, localstore.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	settings := Settings(tb, s)
	snap, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer snap.Close()
	var v wallet.View = snap // a localstore snapshot is a brc38.RowLookup
	if !lookup {
		v = struct{ wallet.View }{snap} // hides LookupRow
	}
	return fn(v, settings)
}

// Mutate runs SQL on a closed wallet file, to give a test the odd rows it needs.
func Mutate(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// ToolboxExport38 runs the toolbox's exportBRC38Json on the file with exportedAt pinned.
func ToolboxExport38(tb testing.TB, path, identity string) []byte {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "toolbox.brc38.json")
	var res struct {
		SHA256    string `json:"sha256"`
		Collation string `json:"collation"`
	}
	toolboxpeer.Run(tb, &res, "export38", "--db", path, "--identity", identity, "--out", out, "--exported-at", ExportedAtISO)
	if res.Collation != "en-US" {
		tb.Fatalf("the toolbox collates in %q, want en-US", res.Collation)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// RequireSameBytes fails with both digests and the first differing byte in context.
func RequireSameBytes(tb testing.TB, got, want []byte) {
	tb.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	ctx := func(b []byte) string { return string(b[max(0, i-80):min(len(b), i+80)]) }
	g, w := sha256.Sum256(got), sha256.Sum256(want)
	tb.Fatalf("documents differ: walletsync %d bytes SHA-256 %s, toolbox %d bytes SHA-256 %s\nfirst difference at byte %d:\n walletsync ...%s...\n toolbox    ...%s...",
		len(got), hex.EncodeToString(g[:]), len(want), hex.EncodeToString(w[:]), i, ctx(got), ctx(want))
}

// Generic parses a document with encoding/json (numbers as json.Number) for assertions about
// its structure.
func Generic(tb testing.TB, doc []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("document is not JSON: %v", err)
	}
	return m
}

// TrickyValues are SQL edits of the small fixture that put every value the canonical form is
// subtle about where both encoders must write it: U+2028 and U+2029 (raw in JavaScript,
// escaped by encoding/json), '<' '>' '&', quotes, backslashes, control characters, U+007F,
// U+FEFF, astral characters, the empty string, integers at +/-2^53, a NULL description,
// certificate field names whose localeCompare order differs from byte order (case, accents,
// digits, Greek, Cyrillic), JSON-text columns with unsorted and repeated keys, array-index
// keys, numbers JSON.stringify rewrites (1e21, 1.50, -0, 1e-7, 2^64), whitespace, escaped
// astral characters, and SQLite-default and second-precision timestamps.
var TrickyValues = []string{
	`UPDATE tx_labels SET label = 'sep' || char(8232) || 'para' || char(8233) || '<>&"\/' || char(9, 10, 13, 1, 31, 127, 65279, 128512) || 'end' WHERE txLabelId = 1`,
	`UPDATE tx_labels SET label = '' WHERE txLabelId = 2`,
	`UPDATE transactions SET satoshis = 9007199254740992, description = 'party ' || char(127881) WHERE transactionId = 1`,
	`UPDATE transactions SET satoshis = -9007199254740992 WHERE transactionId = 2`,
	`UPDATE transactions SET description = NULL WHERE transactionId = 3`,
	`UPDATE outputs SET satoshis = 9007199254740991 WHERE outputId = 1`,
	`UPDATE certificate_fields SET fieldValue = char(8232) || '"quoted"\' WHERE certificateId = 1 AND fieldName = 'name'`,
	`INSERT INTO certificate_fields (created_at, updated_at, userId, certificateId, fieldName, fieldValue, masterKey)
	 SELECT '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 1, 1, n, 'value of ' || n, 'key'
	 FROM (SELECT 'a' AS n UNION ALL SELECT 'B' UNION ALL SELECT 'b' UNION ALL SELECT char(228) UNION ALL SELECT char(196)
	       UNION ALL SELECT 'r' || char(233) || 'sum' || char(233) UNION ALL SELECT 'Resume' UNION ALL SELECT 'zeta'
	       UNION ALL SELECT '_id' UNION ALL SELECT '10' UNION ALL SELECT '9' UNION ALL SELECT 'a b' UNION ALL SELECT 'a-b'
	       UNION ALL SELECT char(937) || 'mega' UNION ALL SELECT char(969) || 'mega' UNION ALL SELECT char(1025) || 'lka'
	       UNION ALL SELECT char(1105) || 'lka' UNION ALL SELECT 'EMAIL')`,
	`UPDATE proven_tx_reqs SET
	   history = '{"notes":[{"when":"2026-01-01T00:00:00.000Z","what":"x' || char(8232) || 'y","n":1e21,"f":1.50,"z":-0,"big":18446744073709551616,"tiny":1e-7,"nested":{"b":[1,{"y":true,"x":false}],"a":"\u00e9\ud83d\ude00"}}],"' || char(233) || '":1,"Z":2,"a":3,"a":4}',
	   notify = ' { "transactionIds" : [ 3, 1, 2 ] } '
	 WHERE provenTxReqId = 1`,
	`UPDATE sync_states SET syncMap = '{"provenTx":{"idMap":{"10":1,"9":2,"100":3,"-1":4,"01":5},"count":3,"entityName":"provenTx"}}',
	   errorLocal = '{"code":"E","description":"d","stack":"s\n t"}' WHERE syncStateId = 1`,
	`UPDATE output_tags SET created_at = '2026-02-03 04:05:06', updated_at = '2026-02-03T04:05:06Z' WHERE outputTagId = 1`,
}

// BaseTxid and BaseTime are the txid and the time every row of BaseDoc carries.
const (
	BaseTxid = "a3e94fb276722bb6697d957984c64f74e4a855934e8290b4007de034620d954c"
	BaseTime = "2026-04-23T20:00:00.000Z"
)

// BaseDoc is a small valid document, one row in every table, every reference resolving,
// as a tree for the tests to break one rule at a time.
func BaseDoc() map[string]any {
	stamp := func(m map[string]any) map[string]any {
		m["created_at"], m["updated_at"] = BaseTime, BaseTime
		return m
	}
	one := func(m map[string]any) []any { return []any{stamp(m)} }
	u := int64(1)
	return map[string]any{
		"brc": int64(38), "title": "User Wallet Data Format", "formatVersion": int64(1), "exportedAt": BaseTime,
		"sourceStorage": stamp(map[string]any{"chain": "test", "dbtype": "SQLite", "maxOutputScript": int64(1024),
			"storageIdentityKey": "source-storage", "storageName": "source"}),
		"user": stamp(map[string]any{"userId": u, "identityKey": "identity-key", "activeStorage": "source-storage"}),
		"tables": map[string]any{
			"provenTxs": one(map[string]any{"provenTxId": int64(1), "txid": BaseTxid, "height": int64(800000), "index": int64(3),
				"merklePath": "AAEC", "rawTx": "AQIDBA==", "blockHash": "bb", "merkleRoot": "cc"}),
			"provenTxReqs": one(map[string]any{"provenTxReqId": int64(1), "provenTxId": int64(1), "status": "completed",
				"attempts": int64(2), "notified": true, "txid": BaseTxid, "history": map[string]any{"notes": []any{}},
				"notify": map[string]any{"transactionIds": []any{int64(1)}}, "rawTx": "AQIDBA==", "wasBroadcast": int64(1),
				"rebroadcastAttempts": int64(0)}),
			"outputBaskets": one(map[string]any{"basketId": int64(1), "userId": u, "name": "default",
				"numberOfDesiredUTXOs": int64(144), "minimumDesiredUTXOValue": int64(32), "isDeleted": false}),
			"transactions": one(map[string]any{"transactionId": int64(1), "userId": u, "provenTxId": int64(1), "status": "completed",
				"reference": "cmVm", "isOutgoing": false, "satoshis": int64(5000), "description": "d", "txid": BaseTxid, "rawTx": "AQIDBA=="}),
			"commissions": one(map[string]any{"commissionId": int64(1), "userId": u, "transactionId": int64(1), "satoshis": int64(10),
				"keyOffset": "a28=", "isRedeemed": false, "lockingScript": "dqk="}),
			"outputs": one(map[string]any{"outputId": int64(1), "userId": u, "transactionId": int64(1), "basketId": int64(1),
				"spendable": true, "change": true, "vout": int64(0), "satoshis": int64(5000), "providedBy": "storage",
				"purpose": "change", "type": "P2PKH", "spentBy": int64(1), "lockingScript": "dqk="}),
			"outputTags":    one(map[string]any{"outputTagId": int64(1), "userId": u, "tag": "gift", "isDeleted": false}),
			"outputTagMaps": one(map[string]any{"outputTagId": int64(1), "outputId": int64(1), "isDeleted": false}),
			"txLabels":      one(map[string]any{"txLabelId": int64(1), "userId": u, "label": "payment", "isDeleted": false}),
			"txLabelMaps":   one(map[string]any{"txLabelId": int64(1), "transactionId": int64(1), "isDeleted": false}),
			"certificates": one(map[string]any{"certificateId": int64(1), "userId": u, "type": "dHlwZQ==", "serialNumber": "c24=",
				"certifier": "02aa", "subject": "02bb", "revocationOutpoint": BaseTxid + ".0", "signature": "3044", "isDeleted": false}),
			"certificateFields": one(map[string]any{"userId": u, "certificateId": int64(1), "fieldName": "name",
				"fieldValue": "dmFsdWU=", "masterKey": "a2V5"}),
			"syncStates": one(map[string]any{"syncStateId": int64(1), "userId": u, "storageIdentityKey": "backup",
				"storageName": "backup", "status": "success", "init": false, "refNum": "ref-1", "syncMap": map[string]any{},
				"when": BaseTime}),
		},
	}
}

// TableRows returns the rows of the table plural in a document tree.
func TableRows(doc map[string]any, plural string) []any {
	return doc["tables"].(map[string]any)[plural].([]any)
}

// DocRow returns row i of the table plural in a document tree, for a test to change.
func DocRow(doc map[string]any, plural string, i int) map[string]any {
	return TableRows(doc, plural)[i].(map[string]any)
}

// JSNull stands for a null in a document tree: AppendCanonical has no null, so Canonical
// replaces the serialized placeholder with one.
const JSNull = "\x00null"

// Canonical writes a document tree as AppendCanonical does, with every JSNull a null.
func Canonical(t testing.TB, doc map[string]any) []byte {
	return bytes.ReplaceAll(AppendCanonical(t, nil, doc), []byte(`"\u0000null"`), []byte("null"))
}

// AppendCanonical writes v as the toolbox's canonicalize does, from wallet's JSON
// primitives: objects with keys in UTF-16 order, no whitespace, strings and numbers as
// JSON.stringify writes them. v is built from map[string]any, []any, string, int64, float64
// and bool. It sorts keys on its own (compareUTF16), so tests hold the encoder against an
// order it did not compute.
func AppendCanonical(t testing.TB, dst []byte, v any) []byte {
	t.Helper()
	var err error
	switch x := v.(type) {
	case string:
		dst, err = wallet.AppendJSString(dst, x)
	case int64:
		dst, err = wallet.AppendJSInt(dst, x)
	case float64:
		dst, err = wallet.AppendJSNumber(dst, x)
	case bool:
		dst = strconv.AppendBool(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendCanonical(t, dst, e)
		}
		dst = append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendCanonical(t, dst, k)
			dst = append(dst, ':')
			dst = AppendCanonical(t, dst, x[k])
		}
		dst = append(dst, '}')
	default:
		t.Fatalf("AppendCanonical: unsupported %T", v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// compareUTF16 orders strings by UTF-16 code units, as JavaScript sorts object keys.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
