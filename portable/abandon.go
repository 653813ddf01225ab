package portable

import (
	"context"
	"errors"
	"fmt"

	"walletsync/wallet"
)

// Abandon takes back every unfinished import into the target wallet: a merge that stopped
// half-way (a crash, a cancel, a conflict) and the person does not want to finish. Each goes
// in one transaction (Store.AbandonImport): the rows its merge inserted go, the rows it
// updated get their previous values back, and its journal entry, checkpoint and id maps go,
// so the wallet is exactly as it was before the import started; then its staging database
// is removed. It needs neither the backup file nor its password. With opts.Sync.Grants set
// (the agent's live wallet) each transaction runs under a background write grant.
//
// It returns the imports it abandoned, or an error matching wallet.ErrNotFound when there is
// none. Only opts.StagingDir, opts.Open and opts.Sync.Grants are used.
func Abandon(ctx context.Context, target Target, opts ImportOptions) ([]wallet.ImportRecord, error) {
	r := &importRun{opts: opts, path: target.Path, target: target.Store}
	switch {
	case r.target != nil:
		r.path = r.target.Path()
	case opts.Open == nil || r.path == "":
		return nil, fmt.Errorf("abandon: no target wallet or no OpenFunc: %w", wallet.ErrInvalidArgument)
	default:
		var err error
		if r.target, err = opts.Open(ctx, r.path, ""); err != nil {
			return nil, fmt.Errorf("abandon: %w", err)
		}
		r.own = true
	}
	defer r.close()
	recs, err := r.target.UnfinishedImports(ctx)
	if err != nil {
		return nil, fmt.Errorf("abandon: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("abandon: %s holds no unfinished import: %w", r.path, wallet.ErrNotFound)
	}
	var errs []error
	var done []wallet.ImportRecord
	for _, rec := range recs {
		err := r.write(ctx, func() error {
			_, err := r.target.AbandonImport(ctx, rec.Digest)
			return err
		})
		if err == nil && opts.StagingDir != "" {
			err = removeStaging(stagingPath(opts.StagingDir, rec.Digest, r.path))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, rec)
	}
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("abandon: %w", err)
	}
	return done, nil
}
