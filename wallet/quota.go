package wallet

import (
	"errors"
	"fmt"
)

// ErrQuotaExceeded: a storage server refused a write because the identity's share of the
// server (its stored bytes, its rows or its sync states) would go past the quota the
// operator set (see QuotaError). Nothing of the request was written; the same request
// fails again until the identity stores less or the operator raises the quota.
var ErrQuotaExceeded = errors.New("storage quota exceeded")

// Quota resources: what a storage server bounds per identity.
const (
	QuotaBytes      = "bytes"       // the stored length of every cell of the identity's rows
	QuotaRows       = "rows"        // the identity's rows, every table of SyncOrder
	QuotaSyncStates = "sync_states" // the stores the identity syncs from (toolbox sync states and walletsync checkpoints)
)

// QuotaError is a refusal at an identity's quota: Resource is one of QuotaBytes, QuotaRows
// and QuotaSyncStates, Used what the identity holds, Adding what the request would add at
// most, Limit the quota. It matches ErrQuotaExceeded.
type QuotaError struct {
	Resource string
	Used     int64
	Adding   int64
	Limit    int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s: %s would be %d with this request, over the quota of %d (nothing was written)", ErrQuotaExceeded, e.Resource, e.Used+e.Adding, e.Limit)
}

// Unwrap makes errors.Is(err, ErrQuotaExceeded) true.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// Usage is what one identity holds in a multi-tenant store: Rows and Bytes over its rows as
// BRC-40 scopes them (a proof shared by two users counts for each), Bytes being the stored
// length of every cell (Table.Charge's lengths, without its doubling and per-cell
// overhead), and Producers the storage identity keys of the stores it syncs from: its
// toolbox sync states and its walletsync checkpoints, each store once.
type Usage struct {
	Rows      int64
	Bytes     int64
	Producers []string
}

// StoredBytes returns the stored length of a row's cells as Usage counts them.
func (t *Table) StoredBytes(r Row) int64 {
	var sum int64
	for _, v := range r {
		sum += storedLen(v)
	}
	return sum
}
