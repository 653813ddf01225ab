package bundle

import (
	"context"
	"fmt"

	"walletsync/localstore"
	"walletsync/wallet"
)

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Hook, when set, is called at each durable step of the swap (localstore.HookBeforeStage
	// ... localstore.HookOldRemoved). It exists for fault injection; production code leaves
	// it nil.
	Hook func(point string)
}

// Restore replaces the wallet file at target (or creates it) with the bundle in dir and
// returns the bundle's manifest. The bundle is checked as Verify checks it, but on the staged
// copy itself: decompressed into a private staging file beside target, digests, integrity,
// foreign keys, schema and counts, and only then swapped in by localstore.Replace, which keeps
// the old file until the swap is durable and leaves a recovery marker that the next open
// finishes or undoes after a crash. Restore refuses, leaving target untouched: a bundle of a
// newer schema (*wallet.SchemaError), a damaged or lying bundle (*wallet.BundleError), a
// wallet that a walletsync process holds (*wallet.LockedError).
func Restore(ctx context.Context, dir, target string, opts RestoreOptions) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, fmt.Errorf("restore bundle: %w", err)
	}
	toolbox := len(localstore.ToolboxMigrations())
	if m.Schema.Walletsync > localstore.SchemaVersion() || m.Schema.ToolboxMigrations > toolbox {
		return m, fmt.Errorf("restore bundle: %w", &wallet.SchemaError{Path: dir,
			Reason: fmt.Sprintf("the bundle's schema (walletsync %d, toolbox %d migrations) is newer than this binary's (%d, %d)",
				m.Schema.Walletsync, m.Schema.ToolboxMigrations, localstore.SchemaVersion(), toolbox),
			Err: wallet.ErrSchemaTooNew})
	}
	err = localstore.Replace(ctx, target, func(ctx context.Context, staged string) error {
		if err := unpack(ctx, dir, m, staged); err != nil {
			return err
		}
		return check(ctx, dir, staged, m)
	}, localstore.ReplaceOptions{Hook: opts.Hook})
	if err != nil {
		return m, fmt.Errorf("restore bundle: %w", err)
	}
	return m, nil
}
