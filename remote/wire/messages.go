package wire

import (
	"walletsync/wallet"
)

// The messages of the wire, one request and one answer per endpoint, all POST under
// Prefix. Heads are JSON in both encodings; only pages and batches carry rows.

// Endpoint paths, relative to Prefix.
const (
	pathCapabilities = "capabilities"
	pathDescribe     = "describe"
	pathOpenView     = "view/open"
	pathReadPage     = "view/read"
	pathResume       = "view/resume"
	pathCloseView    = "view/close"
	pathBegin        = "begin"
	pathCheckpoint   = "checkpoint"
	pathCommit       = "commit"
)

// Version is the wire version this package speaks. A peer that speaks several advertises
// them all; the two sides use the highest they share.
const Version = 1

// Capabilities is a walletsync server's answer on its capabilities endpoint: what a
// client negotiates from on its first request.
type Capabilities struct {
	// Wire is always "walletsync"; a server that answers anything else is not one.
	Wire      string     `json:"wire"`
	Versions  []int      `json:"versions"`
	Encodings []Encoding `json:"encodings"`
	Limits    Limits     `json:"limits"`
}

// Limits are the server's bounds a client must stay within.
type Limits struct {
	MaxFrameBytes   int64 `json:"maxFrameBytes"`
	MaxBodyBytes    int64 `json:"maxBodyBytes"`
	MaxPageRows     int   `json:"maxPageRows"`
	MaxPageBytes    int64 `json:"maxPageBytes"`
	DefaultLifetime int64 `json:"defaultViewLifetimeMs"`
	MaxLifetime     int64 `json:"maxViewLifetimeMs"`
}

// capabilitiesRequest is what a client offers.
type capabilitiesRequest struct {
	Versions  []int      `json:"versions"`
	Encodings []Encoding `json:"encodings"`
}

type empty struct{}

type describeAnswer struct {
	Settings     wallet.Settings     `json:"settings"`
	Capabilities wallet.Capabilities `json:"capabilities"`
}

type openViewRequest struct {
	LifetimeMs int64 `json:"lifetimeMs"`
}

// openViewAnswer describes a retained view. The view's journal coverage travels as an
// interval: Journal(since) is covered exactly for CoveredFrom <= since <= HighWater, the
// shape every change journal has (everything above its floor up to its head is recorded).
type openViewAnswer struct {
	Handle      string `json:"handle"` // addresses the view in later requests
	ID          string `json:"id"`     // the view's own id (wallet.View.ID)
	HighWater   int64  `json:"highWater"`
	Journal     bool   `json:"journal"` // false: no since is covered
	CoveredFrom int64  `json:"coveredFrom"`
}

type readPageRequest struct {
	Handle      string           `json:"handle"`
	Table       wallet.TableName `json:"table"`
	IdentityKey string           `json:"identityKey"`
	After       wallet.Cursor    `json:"after"`
	Rows        int              `json:"rows"`
	Bytes       int64            `json:"bytes"`
	Incremental bool             `json:"incremental"`
	Since       int64            `json:"since"`
}

// pageHead is a wallet.Page without its rows, which travel after the head.
type pageHead struct {
	Table wallet.TableName `json:"table"`
	Next  wallet.Cursor    `json:"next"`
	Done  bool             `json:"done"`
	Bytes int64            `json:"bytes"`
}

func (p pageHead) rowTable() wallet.TableName { return p.Table }

func headOf(p wallet.Page) pageHead {
	return pageHead{Table: p.Table, Next: p.Next, Done: p.Done, Bytes: p.Bytes}
}

func (p pageHead) page(rows []wallet.Row) wallet.Page {
	return wallet.Page{Table: p.Table, Rows: rows, Next: p.Next, Done: p.Done, Bytes: p.Bytes}
}

type resumeRequest struct {
	Handle string           `json:"handle"`
	Table  wallet.TableName `json:"table"`
	Cursor wallet.Cursor    `json:"cursor"`
}

type resumeAnswer struct {
	Cursor wallet.Cursor `json:"cursor"`
}

type closeViewRequest struct {
	Handle string `json:"handle"`
}

type sessionRequest struct {
	Session wallet.SessionKey `json:"session"`
}

// batchHead is a wallet.Batch without its page's rows.
type batchHead struct {
	Chain      wallet.Chain        `json:"chain"`
	Expect     int64               `json:"expect"`
	Checkpoint wallet.Checkpoint   `json:"checkpoint"`
	Active     wallet.ActivePolicy `json:"active"`
	Mirror     bool                `json:"mirror,omitempty"`
	Page       pageHead            `json:"page"`
}

func (b batchHead) rowTable() wallet.TableName { return b.Page.Table }

func headOfBatch(b wallet.Batch) batchHead {
	return batchHead{Chain: b.Chain, Expect: b.Expect, Checkpoint: b.Checkpoint, Active: b.Active, Mirror: b.Mirror, Page: headOf(b.Page)}
}

func (b batchHead) batch(rows []wallet.Row) wallet.Batch {
	return wallet.Batch{Chain: b.Chain, Expect: b.Expect, Checkpoint: b.Checkpoint, Active: b.Active, Mirror: b.Mirror, Page: b.Page.page(rows)}
}
