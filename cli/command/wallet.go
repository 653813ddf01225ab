package command

import (
	"context"

	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/wallet"
)

// WalletFiles opens and creates the wallet files of an import (the target and the staging
// databases) with localstore.
func WalletFiles() portable.OpenFunc {
	return portable.Opener(func(ctx context.Context, path string, chain wallet.Chain) (*localstore.Store, error) {
		if chain == "" {
			return localstore.Open(ctx, path, localstore.Options{})
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, localstore.Options{})
	})
}

// CountingView is a snapshot that reports the rows an export has read; it keeps the
// snapshot's LookupRow, which the export's closure needs.
type CountingView struct {
	*localstore.Snapshot
	Rows   int64            // read so far
	Report func(rows int64) // called after every page with Rows
}

// ReadPage reads a page of the snapshot and reports the rows read so far.
func (v *CountingView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	p, err := v.Snapshot.ReadPage(ctx, req)
	v.Rows += int64(len(p.Rows))
	v.Report(v.Rows)
	return p, err
}
