package portable

import (
	"context"

	"walletsync/wallet"
)

// Store is what an import needs of a wallet file: of the target wallet, and of the staging
// database a document is loaded into before anything touches the target (a wallet file of
// its own, in the staging folder). *localstore.Store implements it. The interface lives here,
// with its one consumer, because localstore and portable never import each other.
type Store interface {
	// A merge is a sync session from the staging database (the Source) into the wallet (the
	// Destination): the same page commits, checkpoints and id maps as any pull.
	wallet.Source
	wallet.Destination

	// Path returns the wallet file's path.
	Path() string
	// Close releases the file.
	Close() error
	// Settings returns the store's settings row: its identity and its chain.
	Settings(ctx context.Context) (wallet.Settings, error)

	// ImportRecord returns the import journal's entry for a document digest, or an error
	// matching wallet.ErrNotFound.
	ImportRecord(ctx context.Context, digest string) (wallet.ImportRecord, error)
	// PutImportRecord writes rec, replacing the entry with its digest.
	PutImportRecord(ctx context.Context, rec wallet.ImportRecord) error
	// CheckEmpty returns nil for a store with no rows but its settings, else an error
	// matching wallet.ErrNotEmpty.
	CheckEmpty(ctx context.Context) error

	// LoadDocument fills an empty store with the rows put passes it, ids kept, and records
	// rec, in one transaction that commits only when fill returns nil.
	LoadDocument(ctx context.Context, rec wallet.ImportRecord, fill func(put func(*wallet.Table, wallet.Row) error) error) error
	// PreviewMerge counts, per table, what merging the user's rows from src would do, with
	// the rules Commit merges by, and finds the rows that would make it fail, writing
	// nothing.
	PreviewMerge(ctx context.Context, src wallet.PageReader, identityKey string, from wallet.Settings) (wallet.MergePreview, error)
	// Identities returns the identity keys of the store's users.
	Identities(ctx context.Context) ([]string, error)
	// UnfinishedImports returns the import journal's entries that are not done.
	UnfinishedImports(ctx context.Context) ([]wallet.ImportRecord, error)
	// ImportInProgress returns an error matching wallet.ErrImportInProgress when a merge
	// into the store started and did not finish, else nil.
	ImportInProgress(ctx context.Context) error
	// AbandonImport takes back, in one transaction, what the unfinished import of a
	// document wrote, and forgets the import.
	AbandonImport(ctx context.Context, digest string) (wallet.ImportRecord, error)
	// RestoreFrom copies every row of the staging store at stagingPath, ids kept, into an
	// empty store, and records rec, in one transaction.
	RestoreFrom(ctx context.Context, stagingPath string, rec wallet.ImportRecord) error
	// CompleteMerge finishes a merge from the staging store at stagingPath: the producer's
	// sync state, the staged sync states re-keyed and upserted, and rec, in one transaction.
	// It returns the sync states it inserted and updated.
	CompleteMerge(ctx context.Context, stagingPath string, rec wallet.ImportRecord, from wallet.Settings) (wallet.MergeCounts, error)
	// SaveAs writes a copy of the store to a new file at path, atomically.
	SaveAs(ctx context.Context, path string) error
	// ForgetSession drops the checkpoint and id maps of the sync sessions from a source.
	ForgetSession(ctx context.Context, sourceStorage string) error
}

// OpenFunc opens the wallet file at path for reading and writing, or, when create names a
// chain, creates it on that chain (refusing a path that exists).
type OpenFunc func(ctx context.Context, path string, create wallet.Chain) (Store, error)

// Opener adapts a function that opens a concrete store type (localstore's) into an OpenFunc.
// It exists so that a failed open yields a nil Store, never a Store holding a nil pointer.
func Opener[S Store](open func(ctx context.Context, path string, create wallet.Chain) (S, error)) OpenFunc {
	return func(ctx context.Context, path string, create wallet.Chain) (Store, error) {
		s, err := open(ctx, path, create)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
