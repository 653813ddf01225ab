package wallet

// JournalBounds say how far a store's change journal can be trusted (see Checkpoint's
// HighWater and View.Journal). Every store keeps them the same way, so the rule of
// CoversSince is the same for all.
type JournalBounds struct {
	// HighWater is the highest journal position ever assigned (it survives pruning).
	HighWater int64 `json:"highWater"`
	// CompleteAfter: every change with a position above it is recorded.
	CompleteAfter int64 `json:"completeAfter"`
	// PrunedThrough: entries at or below it may have been deleted.
	PrunedThrough int64 `json:"prunedThrough"`
}

// CoversSince reports whether a reader that has applied every change up to hwm can catch
// up from the journal alone; when false it must traverse all rows again.
func (j JournalBounds) CoversSince(hwm int64) bool {
	return hwm >= j.CompleteAfter && hwm >= j.PrunedThrough && hwm <= j.HighWater
}
