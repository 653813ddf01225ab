package wallet

import "time"

// The values of the foreground operations a wallet front end performs (localstore runs
// them; the agent's API and the dashboard show them).

// Summary is a wallet at a glance for one user.
type Summary struct {
	IdentityKey string `json:"identityKey"`
	Chain       Chain  `json:"chain"`
	// Balance is the sum of the user's spendable outputs, in satoshis.
	Balance          int64 `json:"balance"`
	SpendableOutputs int64 `json:"spendableOutputs"`
	// Counts holds the user's rows per table, tombstones included.
	Counts map[TableName]int64 `json:"counts"`
}

// Action is one wallet transaction as a front end lists it.
type Action struct {
	TransactionID int64     `json:"transactionId"`
	Txid          string    `json:"txid,omitempty"`
	Status        string    `json:"status"`
	Satoshis      int64     `json:"satoshis"`
	IsOutgoing    bool      `json:"isOutgoing"`
	Description   string    `json:"description,omitempty"`
	Labels        []string  `json:"labels"`
	CreatedAt     time.Time `json:"createdAt"`
}

// ActionQuery pages ListActions, newest first.
type ActionQuery struct {
	// Label keeps only transactions carrying this (not deleted) label; empty keeps all.
	Label string
	// Before resumes below this transaction id; 0 starts at the newest.
	Before int64
	// Limit is the page size, 1..1000 (default 25).
	Limit int
}

// Output is one unspent output as a front end lists it.
type Output struct {
	OutputID  int64    `json:"outputId"`
	Txid      string   `json:"txid,omitempty"`
	Vout      int64    `json:"vout"`
	Satoshis  int64    `json:"satoshis"`
	Basket    string   `json:"basket"`
	Spendable bool     `json:"spendable"`
	Tags      []string `json:"tags"`
}

// OutputQuery pages ListOutputs in id order.
type OutputQuery struct {
	Basket string // the basket's name; required
	After  int64  // resumes above this output id
	Limit  int    // 1..1000 (default 25)
}

// Certificate is one identity certificate with its field names.
type Certificate struct {
	CertificateID int64    `json:"certificateId"`
	Type          string   `json:"type"`
	Certifier     string   `json:"certifier"`
	Subject       string   `json:"subject"`
	SerialNumber  string   `json:"serialNumber"`
	Fields        []string `json:"fields"`
}

// NewTransaction is a transaction a wallet records, with its outputs and labels.
type NewTransaction struct {
	Txid        string
	Reference   string // unique across the store; generated when empty
	Status      string // a toolbox transaction status, e.g. "unproven"
	IsOutgoing  bool
	Satoshis    int64
	Description string
	RawTx       []byte
	Labels      []string
	Outputs     []NewOutput
}

// NewOutput is one output of a NewTransaction.
type NewOutput struct {
	Vout          int64
	Satoshis      int64
	Basket        string // "" leaves the output outside any basket
	LockingScript []byte
	Change        bool
	Tags          []string
}

// SoftDeleteKind names what SoftDelete tombstones.
type SoftDeleteKind string

// What can be soft-deleted by name.
const (
	SoftDeleteBasket SoftDeleteKind = "basket"
	SoftDeleteLabel  SoftDeleteKind = "label"
	SoftDeleteTag    SoftDeleteKind = "tag"
)
