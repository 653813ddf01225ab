package wallet

import (
	"errors"
	"fmt"
	"strings"
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

// Refusals of an import. Each is found before the import writes anything to the wallet.
var (
	// ErrOtherIdentity: the backup holds a user the wallet does not, while the wallet holds
	// users of its own; merging it would leave two identities in one wallet (see
	// OtherIdentityError). An import proceeds only when the person asks for it explicitly.
	ErrOtherIdentity = errors.New("the backup holds another identity than the wallet")
	// ErrMergeConflict: a row of the backup cannot go into the wallet as it is (a unique key
	// the wallet already holds for another row, a reference to nothing, two rows matching one
	// natural key); see MergeConflictError. The preview lists them.
	ErrMergeConflict = errors.New("the backup conflicts with the wallet")
	// ErrImportInProgress: a merge into the wallet started and did not finish; the wallet
	// holds part of it until the person finishes it (imports the same file again) or abandons
	// it (see ImportInProgressError).
	ErrImportInProgress = errors.New("import in progress: finish or abandon")
	// ErrWalletChangedSinceImport: the wallet was written by another program (the wallet
	// app) after an unfinished merge began, so abandoning the merge could undo those writes
	// (see WalletChangedError). Nothing was undone; finishing the import is still safe.
	ErrWalletChangedSinceImport = errors.New("the wallet changed after the import began")
)

// OtherIdentityError reports a backup whose user is not among the wallet's users.
type OtherIdentityError struct {
	Path string // the wallet file
	// Backup is the backup's identity key; Wallet the identity keys the wallet holds.
	Backup string
	Wallet []string
}

func (e *OtherIdentityError) Error() string {
	have := make([]string, len(e.Wallet))
	for i, k := range e.Wallet {
		have[i] = ShortKey(k, 16)
	}
	return fmt.Sprintf("the backup's identity %s is not the identity of %s (%s): merging it would leave two identities in one wallet; "+
		"ask for it explicitly (--allow-other-identity) if that is what you want: %v",
		ShortKey(e.Backup, 16), e.Path, strings.Join(have, ", "), ErrOtherIdentity)
}

// Unwrap makes errors.Is(err, ErrOtherIdentity) true.
func (e *OtherIdentityError) Unwrap() error { return ErrOtherIdentity }

// ConflictKind names why a row of a backup cannot be merged. The wire strings are stable.
type ConflictKind string

const (
	// ConflictUnique: the row, as the merge would write it, repeats a unique key that another
	// row of the wallet (or another row of the same backup) already holds.
	ConflictUnique ConflictKind = "unique"
	// ConflictDangling: the row refers to a row that neither the wallet nor the backup holds.
	ConflictDangling ConflictKind = "dangling"
	// ConflictAmbiguous: the wallet holds two rows matching the row's natural key, or a
	// proof request of another batch.
	ConflictAmbiguous ConflictKind = "ambiguous"
)

// MergeConflict is one row of a backup that a merge could not write.
type MergeConflict struct {
	Kind  ConflictKind `json:"kind"`
	Table TableName    `json:"table"`
	// Key is the row's key in the backup (its id, or its two key columns).
	Key []any `json:"key"`
	// Columns names the unique key that collides, or the column that refers to nothing.
	Columns []string `json:"columns,omitempty"`
	// Holder is the key of the wallet's row that already holds the unique key (absent when
	// the holder is another row of the backup).
	Holder []any `json:"holder,omitempty"`
	// Reason says it in words.
	Reason string `json:"reason"`
}

// String describes the conflict in one line.
func (c MergeConflict) String() string {
	return fmt.Sprintf("%s row %v: %s", c.Table, c.Key, c.Reason)
}

// MaxListedConflicts bounds the conflicts a preview or a refusal lists; Total counts all.
const MaxListedConflicts = 100

// MergeConflictError refuses a merge whose backup conflicts with the wallet. It lists the
// first MaxListedConflicts conflicts and counts them all.
type MergeConflictError struct {
	Path      string // the wallet file
	Conflicts []MergeConflict
	Total     int
}

func (e *MergeConflictError) Error() string {
	first := ""
	if len(e.Conflicts) > 0 {
		first = " (the first: " + e.Conflicts[0].String() + ")"
	}
	return fmt.Sprintf("%d rows of the backup cannot be merged into %s%s; nothing was written: %v", e.Total, e.Path, first, ErrMergeConflict)
}

// Unwrap makes errors.Is(err, ErrMergeConflict) true.
func (e *MergeConflictError) Unwrap() error { return ErrMergeConflict }

// ImportInProgressError reports the unfinished merge a wallet holds part of.
type ImportInProgressError struct {
	Path   string // the wallet file
	Record ImportRecord
}

func (e *ImportInProgressError) Error() string {
	return fmt.Sprintf("%s: %v (a merge of backup %s started %s and did not end; import that file again to finish it, "+
		"or abandon it with `walletsync import --db %s --abandon`, which puts the wallet back as it was)",
		e.Path, ErrImportInProgress, ShortKey(e.Record.Digest, 16), FormatTime(e.Record.StartedAt), e.Path)
}

// Unwrap makes errors.Is(err, ErrImportInProgress) true.
func (e *ImportInProgressError) Unwrap() error { return ErrImportInProgress }

// WalletChangedError reports the writes another program made to a wallet while a merge
// into it was unfinished, which an abandon would have undone.
type WalletChangedError struct {
	Path string // the wallet file
	// Changes counts the rows written by others since the merge began; -1 when the change
	// journal cannot tell (it was pruned or rebuilt since), which counts as changed.
	Changes int64
}

func (e *WalletChangedError) Error() string {
	what := fmt.Sprintf("%d rows were written by another program", e.Changes)
	if e.Changes < 0 {
		what = "walletsync cannot tell what another program wrote"
	}
	return fmt.Sprintf("%s: %v: %s since the merge began, and abandoning it could undo them; "+
		"finish the import instead (import the same file again)", e.Path, ErrWalletChangedSinceImport, what)
}

// Unwrap makes errors.Is(err, ErrWalletChangedSinceImport) true.
func (e *WalletChangedError) Unwrap() error { return ErrWalletChangedSinceImport }

// MergePreview is what merging one backup into one wallet would do: the plan, and the rows
// that would make the merge fail (the first MaxListedConflicts of them; ConflictTotal counts
// all). A merge with conflicts is refused before it writes anything.
type MergePreview struct {
	Plan          MergePlan       `json:"plan"`
	Conflicts     []MergeConflict `json:"conflicts,omitempty"`
	ConflictTotal int             `json:"conflictTotal"`
}
