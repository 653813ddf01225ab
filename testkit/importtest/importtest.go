// Package importtest gives tests outside portable a wallet with an unfinished merge, as a
// crash or a Ctrl-C in the middle of an import leaves one.
package importtest

import (
	"context"
	"errors"
	"testing"

	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/syncer"
	"walletsync/wallet"
)

// HalfMerge merges the plaintext BRC-38 document doc into the wallet file at path, staging
// in the folder staging, with another identity allowed and two-row pages, and stops it after
// pages page commits. The wallet then holds part of the document and its import journal
// says "merging"; importing doc again finishes it, portable.Abandon takes it back.
func HalfMerge(tb testing.TB, doc, path, staging string, pages int) {
	tb.Helper()
	open := portable.Opener(func(ctx context.Context, path string, chain wallet.Chain) (*localstore.Store, error) {
		if chain == "" {
			return localstore.Open(ctx, path, localstore.Options{})
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: chain}, localstore.Options{})
	})
	opts := portable.ImportOptions{StagingDir: staging, Open: open, Plaintext: true, AllowOtherIdentity: true, Sync: syncer.Options{MaxRows: 2}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	commits := 0
	_, err := portable.Import(ctx, doc, "", portable.Target{Path: path}, opts, func(p portable.ImportProgress) {
		if p.Sync != nil && p.Sync.State == syncer.StateCommitted {
			if commits++; commits == pages {
				cancel()
			}
		}
	})
	if !errors.Is(err, context.Canceled) {
		tb.Fatalf("merge stopped after %d pages: %v, want it cancelled", pages, err)
	}
}
