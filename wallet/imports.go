package wallet

import (
	"fmt"
	"time"
)

// The vocabulary of importing a portable backup (a BRC-38 document) into a wallet: the two
// modes BRC-38 defines, the import journal a wallet keeps so that a crashed import resumes and
// a repeated one does nothing, and the counts a merge reports or a preview predicts.

// ImportMode is how a document goes into a wallet. The wire strings are BRC-38's.
type ImportMode string

const (
	// ImportRestore writes the document into an empty wallet (settings aside), keeping its
	// ids, as the toolbox's restoreBRC38 does.
	ImportRestore ImportMode = "restore"
	// ImportMerge merges the document into a wallet with BRC-40's rules, as the toolbox's
	// mergeBRC38 does: natural keys, strictly newer wins, the wallet's own activeStorage kept.
	ImportMerge ImportMode = "merge"
)

// ParseImportMode returns the mode named s, or an error wrapping ErrInvalidArgument.
func ParseImportMode(s string) (ImportMode, error) {
	switch m := ImportMode(s); m {
	case ImportRestore, ImportMerge:
		return m, nil
	}
	return "", fmt.Errorf("import mode %q (merge or restore): %w", s, ErrInvalidArgument)
}

// ImportState is where the import of one document into one wallet stands. The wire strings
// are stable: the journal stores them.
type ImportState string

const (
	// ImportStaged: the document decrypted, validated and loaded into its staging database;
	// the wallet holds none of it yet.
	ImportStaged ImportState = "staged"
	// ImportMerging: pages from the staging database are being committed to the wallet; a
	// rerun resumes from the sync checkpoint.
	ImportMerging ImportState = "merging"
	// ImportDone: the document is in the wallet; importing it again does nothing.
	ImportDone ImportState = "done"
)

// ImportRecord is one entry of a wallet's import journal: one document (named by the SHA-256
// of its plaintext) and how far its import into this wallet went.
type ImportRecord struct {
	// Digest is the lowercase hex SHA-256 of the BRC-38 plaintext.
	Digest string      `json:"digest"`
	Mode   ImportMode  `json:"mode"`
	State  ImportState `json:"state"`
	// IdentityKey is the user the document holds.
	IdentityKey string `json:"identityKey"`
	// Source is the document's sourceStorage.storageIdentityKey.
	Source string `json:"source"`
	// Target is the storageIdentityKey of the wallet the document goes into.
	Target string `json:"target"`
	// Session is the storageIdentityKey of the staging database, the sync session's source
	// while merging: its checkpoint and id maps in the wallet carry this key.
	Session   string    `json:"session"`
	StartedAt time.Time `json:"startedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Inserts and Updates are what the run that finished the import wrote.
	Inserts int64 `json:"inserts"`
	Updates int64 `json:"updates"`
}

// MergeCounts is what a merge does, or a preview predicts it would do, with one table's
// incoming rows. Inserts and Updates are counted exactly as the merge counts its writes;
// every other row is Older (its updated_at is strictly before the matching row's, so it is
// skipped) or Unchanged.
type MergeCounts struct {
	Inserts   int64 `json:"inserts"`
	Updates   int64 `json:"updates"`
	Unchanged int64 `json:"unchanged"`
	Older     int64 `json:"older"`
}

// Add returns the sum of c and o.
func (c MergeCounts) Add(o MergeCounts) MergeCounts {
	return MergeCounts{c.Inserts + o.Inserts, c.Updates + o.Updates, c.Unchanged + o.Unchanged, c.Older + o.Older}
}

// MergePlan is MergeCounts per table.
type MergePlan map[TableName]MergeCounts

// Total sums the plan over its tables.
func (p MergePlan) Total() MergeCounts {
	var sum MergeCounts
	for _, c := range p {
		sum = sum.Add(c)
	}
	return sum
}
