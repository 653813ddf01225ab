package brc38

import (
	"slices"
	"time"

	"walletsync/wallet"
)

// BRC-38's fixed values (reference: "Top-level keys").
const (
	// BRC38Number is the value of the document's "brc" key.
	BRC38Number = 38
	// BRC38Title is the value of the document's "title" key.
	BRC38Title = "User Wallet Data Format"
	// BRC38FormatVersion is the value of the document's "formatVersion" key.
	BRC38FormatVersion = 1
)

// topKeys are the document's top-level keys in canonical order (UTF-16 code units). All are
// required; the encoder writes them in this order, and "user" comes last.
var topKeys = []string{"brc", "exportedAt", "formatVersion", "sourceStorage", "tables", "title", "user"}

// DocumentTables are the 13 tables a BRC-38 document carries under "tables", in the canonical
// order of their keys (each table's Plural, sorted by UTF-16 code units). Every array is
// present, even when empty. users travels apart, as the top-level "user".
var DocumentTables = []*wallet.Table{
	wallet.CertificateFields, wallet.Certificates, wallet.Commissions, wallet.OutputBaskets,
	wallet.OutputTagsMap, wallet.OutputTags, wallet.Outputs, wallet.ProvenTxReqs, wallet.ProvenTxs,
	wallet.SyncStates, wallet.Transactions, wallet.TxLabelsMap, wallet.TxLabels,
}

// settingsTable describes the "sourceStorage" object: the toolbox's settings row, which has
// no wallet.Table because it is never synced. A document may omit dbtype and
// maxOutputScript (the reference's known-answer document does); the toolbox writes all seven.
var settingsTable = &wallet.Table{Name: "settings", Plural: "sourceStorage", Columns: []wallet.Column{
	{Name: "created_at", Kind: wallet.KindTime}, {Name: "updated_at", Kind: wallet.KindTime},
	{Name: "storageIdentityKey", Kind: wallet.KindText}, {Name: "storageName", Kind: wallet.KindText},
	{Name: "chain", Kind: wallet.KindText}, {Name: "dbtype", Kind: wallet.KindText, Nullable: true},
	{Name: "maxOutputScript", Kind: wallet.KindInt, Nullable: true},
}}

// numericBools are boolean columns the toolbox's export writes as the numbers 0 and 1: its
// finder getProvenTxReqsForUser coerces only `notified` to a boolean, so wasBroadcast leaves
// SQLite as it is stored.
var numericBools = map[wallet.TableName][]string{wallet.TableProvenTxReqs: {"wasBroadcast"}}

// columnDefaults are the DDL defaults of NOT NULL columns (localstore/schema/toolbox.sql).
// The toolbox's import inserts a row without the key and SQLite fills the default, so a
// document may omit these; the decoder fills the same values. Any other NOT NULL column is
// required.
var columnDefaults = map[wallet.TableName]map[string]any{
	wallet.TableCertificates:      {"isDeleted": false},
	wallet.TableCertificateFields: {"masterKey": ""},
	wallet.TableOutputBaskets:     {"numberOfDesiredUTXOs": int64(6), "minimumDesiredUTXOValue": int64(10000), "isDeleted": false},
	wallet.TableCommissions:       {"isRedeemed": false},
	wallet.TableOutputTags:        {"isDeleted": false},
	wallet.TableOutputTagsMap:     {"isDeleted": false},
	wallet.TableTxLabels:          {"isDeleted": false},
	wallet.TableTxLabelsMap:       {"isDeleted": false},
	wallet.TableSyncStates:        {"storageIdentityKey": "", "status": "unknown", "init": false},
	wallet.TableProvenTxReqs: {"status": "unknown", "attempts": int64(0), "notified": false, "history": "{}",
		"notify": "{}", "wasBroadcast": false, "rebroadcastAttempts": int64(0)},
	wallet.TableTransactions: {"satoshis": int64(0)},
	wallet.TableOutputs:      {"spendable": false, "change": false},
}

// docColumn is how one column travels in a document row.
type docColumn struct {
	wallet.Column
	index       int    // position in the table's Columns (and in a wallet.Row)
	key         []byte // the key as written, quoted, with its colon: "name":
	numericBool bool   // a boolean written as 0/1 (see numericBools)
	def         any    // filled when a document omits this NOT NULL column; nil: required
}

// docTable is a table as a document carries it: the row objects' keys in canonical order.
type docTable struct {
	*wallet.Table
	cols    []docColumn    // in canonical key order (UTF-16 code units)
	byName  map[string]int // column name -> position in cols
	idCol   int            // index of the integer primary key column, -1 without one
	userCol int            // index of the userId column, -1 without one
}

// docTables holds the docTable of every table a document carries, users and the settings
// included.
var docTables = func() map[*wallet.Table]*docTable {
	m := map[*wallet.Table]*docTable{}
	for _, t := range append(slices.Clone(DocumentTables), wallet.Users, settingsTable) {
		dt := &docTable{Table: t, byName: map[string]int{}, idCol: -1, userCol: -1}
		for i, c := range t.Columns {
			key, _ := wallet.AppendJSString(nil, c.Name)
			dc := docColumn{Column: c, index: i, key: append(key, ':'),
				numericBool: slices.Contains(numericBools[t.Name], c.Name), def: columnDefaults[t.Name][c.Name]}
			dt.cols = append(dt.cols, dc)
			switch {
			case c.Name == t.ID && t.ID != "":
				dt.idCol = i
			case c.Name == "userId":
				dt.userCol = i
			}
		}
		slices.SortFunc(dt.cols, func(a, b docColumn) int { return CompareKeysUTF16(a.Name, b.Name) })
		for i, c := range dt.cols {
			dt.byName[c.Name] = i
		}
		m[t] = dt
	}
	return m
}()

// tablesByPlural finds a document table by its key inside "tables".
var tablesByPlural = func() map[string]*docTable {
	m := map[string]*docTable{}
	for _, t := range DocumentTables {
		m[t.Plural] = docTables[t]
	}
	return m
}()

// settingsRow and rowSettings convert between wallet.Settings and a settingsTable row.
func settingsRow(s wallet.Settings) wallet.Row {
	return wallet.Row{s.CreatedAt.UTC().Truncate(time.Millisecond), s.UpdatedAt.UTC().Truncate(time.Millisecond),
		s.StorageIdentityKey, s.StorageName, string(s.Chain), s.DBType, s.MaxOutputScript}
}

func rowSettings(r wallet.Row) wallet.Settings {
	s := wallet.Settings{CreatedAt: r[0].(time.Time), UpdatedAt: r[1].(time.Time),
		StorageIdentityKey: r[2].(string), StorageName: r[3].(string), Chain: wallet.Chain(r[4].(string))}
	if v, ok := r[5].(string); ok {
		s.DBType = v
	}
	if v, ok := r[6].(int64); ok {
		s.MaxOutputScript = v
	}
	return s
}
