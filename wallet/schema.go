package wallet

import "fmt"

// TableName is the SQL name of a wallet-toolbox table.
type TableName string

// The wallet-toolbox tables walletsync reads and writes. settings, monitor_events and the
// Knex bookkeeping tables are not listed: they are never synced or exported.
const (
	TableUsers             TableName = "users"
	TableProvenTxs         TableName = "proven_txs"
	TableProvenTxReqs      TableName = "proven_tx_reqs"
	TableOutputBaskets     TableName = "output_baskets"
	TableTransactions      TableName = "transactions"
	TableCommissions       TableName = "commissions"
	TableOutputs           TableName = "outputs"
	TableOutputTags        TableName = "output_tags"
	TableOutputTagsMap     TableName = "output_tags_map"
	TableTxLabels          TableName = "tx_labels"
	TableTxLabelsMap       TableName = "tx_labels_map"
	TableCertificates      TableName = "certificates"
	TableCertificateFields TableName = "certificate_fields"
	TableSyncStates        TableName = "sync_states"
)

// Kind is how a column's value is stored and carried. It decides the Go type of the value
// in a Row (see Row) and how each wire format writes it.
type Kind uint8

// Column kinds.
const (
	KindInt  Kind = iota + 1 // INTEGER; int64
	KindText                 // TEXT; string
	KindBool                 // INTEGER 0/1; bool
	KindTime                 // ISO-8601 text with milliseconds and Z; time.Time in UTC
	KindBlob                 // BLOB; []byte
	KindJSON                 // TEXT holding a JSON object; string (the stored text)
)

// Column is one column of a Table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
}

// Scope says how the rows of a table belong to one user, as BRC-40 scopes them.
type Scope uint8

// Scopes.
const (
	ScopeIdentity    Scope = iota + 1 // users: the row whose identityKey is the user's
	ScopeUserID                       // the row's own userId column
	ScopeProvenTx                     // proven_txs: a user's transaction, or its proof request, has the same provenTxId
	ScopeProvenTxReq                  // proven_tx_reqs: a user's transaction has the same txid
	ScopeLabelMap                     // tx_labels_map: through tx_labels.userId
	ScopeTagMap                       // output_tags_map: through output_tags.userId
)

// Ref is a foreign key: Column holds an id of Target's primary key.
type Ref struct {
	Column string
	Target TableName
}

// Table describes one wallet-toolbox table: its columns in DDL order, its keys and how its
// rows belong to a user. Tables are immutable values shared by every package; look them up
// with LookupTable or iterate SyncOrder.
type Table struct {
	Name TableName
	// Entity is the BRC-40 entity name (offsets, syncMap keys); "user" for users.
	Entity string
	// Plural is the BRC-40 chunk array key and the BRC-38 "tables" key.
	Plural string
	// Columns in the order the toolbox's DDL declares them.
	Columns []Column
	// ID is the integer primary key column, or "" for the three map tables without one.
	ID string
	// Key is the unique paging key, ordered; the last column is the tie-breaker.
	Key []string
	// Natural is the BRC-40 natural key that finds the matching row in another store.
	Natural []string
	// Refs are the foreign keys that are remapped through id maps when rows move.
	Refs []Ref
	// Merge are the columns BRC-40 copies onto the matching row when the incoming row is
	// strictly newer (updated_at); users and proof requests have their own rules.
	Merge []string
	// Scope says which rows belong to one user.
	Scope Scope

	index map[string]int
}

// Col returns the position of the named column, or panics: a wrong column name is a
// programming error, never a data error.
func (t *Table) Col(name string) int {
	i, ok := t.index[name]
	if !ok {
		panic(fmt.Sprintf("wallet: table %s has no column %q", t.Name, name))
	}
	return i
}

// HasCol reports whether the table has the named column.
func (t *Table) HasCol(name string) bool { _, ok := t.index[name]; return ok }

// ColumnNames returns the column names in DDL order. The slice is shared; do not modify it.
func (t *Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// IsProof reports whether the table holds proofs (proven_txs, proven_tx_reqs): rows that
// are large and shared across users, so pages of them are capped lower.
func (t *Table) IsProof() bool {
	return t.Name == TableProvenTxs || t.Name == TableProvenTxReqs
}

// Column helpers keep the table list below readable.
func colInt(n string) Column    { return Column{Name: n, Kind: KindInt} }
func colText(n string) Column   { return Column{Name: n, Kind: KindText} }
func colBool(n string) Column   { return Column{Name: n, Kind: KindBool} }
func colTime(n string) Column   { return Column{Name: n, Kind: KindTime} }
func colBlob(n string) Column   { return Column{Name: n, Kind: KindBlob} }
func colJSON(n string) Column   { return Column{Name: n, Kind: KindJSON} }
func null(c Column) Column      { c.Nullable = true; return c }
func stamps() []Column          { return []Column{colTime("created_at"), colTime("updated_at")} }
func cols(c ...Column) []Column { return append(stamps(), c...) }

// The tables. Column lists follow the DDL that @bsv/wallet-toolbox 2.1.26 leaves after its
// 14 migrations (see localstore/schema/toolbox.sql, copied from a file the toolbox made).
var (
	Users = newTable(Table{
		Name: TableUsers, Entity: "user", Plural: "users",
		Columns: cols(colInt("userId"), colText("identityKey"), colText("activeStorage")),
		ID:      "userId", Key: []string{"userId"}, Natural: []string{"identityKey"},
		Scope: ScopeIdentity,
	})
	ProvenTxs = newTable(Table{
		Name: TableProvenTxs, Entity: "provenTx", Plural: "provenTxs",
		Columns: cols(colInt("provenTxId"), colText("txid"), colInt("height"), colInt("index"),
			colBlob("merklePath"), null(colBlob("rawTx")), colText("blockHash"), colText("merkleRoot")),
		ID: "provenTxId", Key: []string{"provenTxId"}, Natural: []string{"txid"},
		Scope: ScopeProvenTx,
	})
	ProvenTxReqs = newTable(Table{
		Name: TableProvenTxReqs, Entity: "provenTxReq", Plural: "provenTxReqs",
		Columns: cols(colInt("provenTxReqId"), null(colInt("provenTxId")), colText("status"),
			colInt("attempts"), colBool("notified"), colText("txid"), null(colText("batch")),
			colJSON("history"), colJSON("notify"), null(colBlob("rawTx")), null(colBlob("inputBEEF")),
			colBool("wasBroadcast"), colInt("rebroadcastAttempts")),
		ID: "provenTxReqId", Key: []string{"provenTxReqId"}, Natural: []string{"txid"},
		Refs:  []Ref{{"provenTxId", TableProvenTxs}},
		Scope: ScopeProvenTxReq,
	})
	OutputBaskets = newTable(Table{
		Name: TableOutputBaskets, Entity: "outputBasket", Plural: "outputBaskets",
		Columns: cols(colInt("basketId"), colInt("userId"), colText("name"),
			colInt("numberOfDesiredUTXOs"), colInt("minimumDesiredUTXOValue"), colBool("isDeleted")),
		ID: "basketId", Key: []string{"basketId"}, Natural: []string{"name", "userId"},
		Merge: []string{"numberOfDesiredUTXOs", "minimumDesiredUTXOValue", "isDeleted"},
		Scope: ScopeUserID,
	})
	Transactions = newTable(Table{
		Name: TableTransactions, Entity: "transaction", Plural: "transactions",
		Columns: cols(colInt("transactionId"), colInt("userId"), null(colInt("provenTxId")),
			colText("status"), colText("reference"), colBool("isOutgoing"), colInt("satoshis"),
			null(colInt("version")), null(colInt("lockTime")), null(colText("description")),
			null(colText("txid")), null(colBlob("inputBEEF")), null(colBlob("rawTx"))),
		ID: "transactionId", Key: []string{"transactionId"}, Natural: []string{"txid", "userId"},
		Refs:  []Ref{{"provenTxId", TableProvenTxs}},
		Merge: []string{"version", "lockTime", "isOutgoing", "status", "provenTxId", "satoshis", "txid", "description", "rawTx", "inputBEEF"},
		Scope: ScopeUserID,
	})
	Commissions = newTable(Table{
		Name: TableCommissions, Entity: "commission", Plural: "commissions",
		Columns: cols(colInt("commissionId"), colInt("userId"), colInt("transactionId"),
			colInt("satoshis"), colText("keyOffset"), colBool("isRedeemed"), colBlob("lockingScript")),
		ID: "commissionId", Key: []string{"commissionId"}, Natural: []string{"transactionId", "userId"},
		Refs:  []Ref{{"transactionId", TableTransactions}},
		Merge: []string{"isRedeemed"},
		Scope: ScopeUserID,
	})
	Outputs = newTable(Table{
		Name: TableOutputs, Entity: "output", Plural: "outputs",
		Columns: cols(colInt("outputId"), colInt("userId"), colInt("transactionId"),
			null(colInt("basketId")), colBool("spendable"), colBool("change"), colInt("vout"),
			colInt("satoshis"), colText("providedBy"), colText("purpose"), colText("type"),
			null(colText("outputDescription")), null(colText("txid")), null(colText("senderIdentityKey")),
			null(colText("derivationPrefix")), null(colText("derivationSuffix")),
			null(colText("customInstructions")), null(colInt("spentBy")), null(colInt("sequenceNumber")),
			null(colText("spendingDescription")), null(colInt("scriptLength")),
			null(colInt("scriptOffset")), null(colBlob("lockingScript"))),
		ID: "outputId", Key: []string{"outputId"}, Natural: []string{"userId", "transactionId", "vout"},
		Refs: []Ref{{"transactionId", TableTransactions}, {"basketId", TableOutputBaskets},
			{"spentBy", TableTransactions}},
		Merge: []string{"spentBy", "spendable", "change", "type", "providedBy", "purpose", "outputDescription", "spendingDescription", "senderIdentityKey", "customInstructions", "scriptLength", "scriptOffset", "lockingScript"},
		Scope: ScopeUserID,
	})
	OutputTags = newTable(Table{
		Name: TableOutputTags, Entity: "outputTag", Plural: "outputTags",
		Columns: cols(colInt("outputTagId"), colInt("userId"), colText("tag"), colBool("isDeleted")),
		ID:      "outputTagId", Key: []string{"outputTagId"}, Natural: []string{"tag", "userId"},
		Merge: []string{"isDeleted"},
		Scope: ScopeUserID,
	})
	OutputTagsMap = newTable(Table{
		Name: TableOutputTagsMap, Entity: "outputTagMap", Plural: "outputTagMaps",
		Columns: cols(colInt("outputTagId"), colInt("outputId"), colBool("isDeleted")),
		Key:     []string{"outputId", "outputTagId"}, Natural: []string{"outputId", "outputTagId"},
		Refs:  []Ref{{"outputTagId", TableOutputTags}, {"outputId", TableOutputs}},
		Merge: []string{"isDeleted"},
		Scope: ScopeTagMap,
	})
	TxLabels = newTable(Table{
		Name: TableTxLabels, Entity: "txLabel", Plural: "txLabels",
		Columns: cols(colInt("txLabelId"), colInt("userId"), colText("label"), colBool("isDeleted")),
		ID:      "txLabelId", Key: []string{"txLabelId"}, Natural: []string{"label", "userId"},
		Merge: []string{"isDeleted"},
		Scope: ScopeUserID,
	})
	TxLabelsMap = newTable(Table{
		Name: TableTxLabelsMap, Entity: "txLabelMap", Plural: "txLabelMaps",
		Columns: cols(colInt("txLabelId"), colInt("transactionId"), colBool("isDeleted")),
		Key:     []string{"transactionId", "txLabelId"}, Natural: []string{"transactionId", "txLabelId"},
		Refs:  []Ref{{"txLabelId", TableTxLabels}, {"transactionId", TableTransactions}},
		Merge: []string{"isDeleted"},
		Scope: ScopeLabelMap,
	})
	Certificates = newTable(Table{
		Name: TableCertificates, Entity: "certificate", Plural: "certificates",
		Columns: cols(colInt("certificateId"), colInt("userId"), colText("serialNumber"),
			colText("type"), colText("certifier"), colText("subject"), null(colText("verifier")),
			colText("revocationOutpoint"), colText("signature"), colBool("isDeleted")),
		ID: "certificateId", Key: []string{"certificateId"},
		Natural: []string{"serialNumber", "certifier", "userId"},
		Merge:   []string{"type", "subject", "serialNumber", "revocationOutpoint", "signature", "verifier", "isDeleted"},
		Scope:   ScopeUserID,
	})
	CertificateFields = newTable(Table{
		Name: TableCertificateFields, Entity: "certificateField", Plural: "certificateFields",
		Columns: cols(colInt("userId"), colInt("certificateId"), colText("fieldName"),
			colText("fieldValue"), colText("masterKey")),
		Key: []string{"certificateId", "fieldName"}, Natural: []string{"certificateId", "userId", "fieldName"},
		Refs:  []Ref{{"certificateId", TableCertificates}},
		Merge: []string{"fieldValue", "masterKey"},
		Scope: ScopeUserID,
	})
	SyncStates = newTable(Table{
		Name: TableSyncStates, Entity: "syncState", Plural: "syncStates",
		Columns: cols(colInt("syncStateId"), colInt("userId"), colText("storageIdentityKey"),
			colText("storageName"), colText("status"), colBool("init"), colText("refNum"),
			colJSON("syncMap"), null(colTime("when")), null(colInt("satoshis")),
			null(colJSON("errorLocal")), null(colJSON("errorOther"))),
		ID: "syncStateId", Key: []string{"syncStateId"}, Natural: []string{"userId", "storageIdentityKey", "storageName"},
		Scope: ScopeUserID,
	})
)

// SyncOrder is the user row followed by the 12 BRC-40 entities in the order that
// getSyncChunk and the offsets of brc40.RequestSyncChunkArgs fix. Every sync, journal and page
// traversal walks tables in this order, so that referenced rows always arrive first.
var SyncOrder = []*Table{
	Users, ProvenTxs, OutputBaskets, OutputTags, TxLabels, Transactions, Outputs,
	TxLabelsMap, OutputTagsMap, Certificates, CertificateFields, Commissions, ProvenTxReqs,
}

// Entities is SyncOrder without the user row: the 12 BRC-40 entities.
var Entities = SyncOrder[1:]

// AllTables is every table a snapshot view can page: SyncOrder plus sync_states, which
// BRC-38 exports but BRC-40 never syncs.
var AllTables = append(append([]*Table{}, SyncOrder...), SyncStates)

// LookupTable returns the table with the given SQL name, or an error wrapping
// ErrInvalidArgument.
func LookupTable(name TableName) (*Table, error) {
	for _, t := range AllTables {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("lookup table %q: %w", name, ErrInvalidArgument)
}

func newTable(t Table) *Table {
	t.index = make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		t.index[c.Name] = i
	}
	for _, k := range append(append(append(append([]string{}, t.Key...), t.Natural...), t.Merge...), t.ID) {
		if k != "" {
			t.Col(k) // every key names a real column
		}
	}
	return &t
}
