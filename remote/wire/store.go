package wire

import (
	"context"
	"time"

	"walletsync/localstore"
	"walletsync/wallet"
)

// StoreBackend serves one localstore file to every identity: a multi-tenant store, whose
// rows, checkpoints and id maps Handler scopes per identity. Its views do not wait: a
// localstore file admits localstore.Options.MaxViews snapshot views at a time (serve opens
// it with the Handler's view quota, so that the quotas decide first), and a request that
// finds them all taken is refused with wallet.ErrSnapshotBusy at once rather than holding
// its connection until another view closes; the client retries
// (ProviderOptions.BusyWait) or reports it.
type StoreBackend struct{ Store *localstore.Store }

var _ Backend = StoreBackend{}

// Source returns the store, whatever the identity.
func (b StoreBackend) Source(context.Context, string) (wallet.Source, error) {
	return storeSource{b.Store}, nil
}

// Destination returns the store, whatever the identity.
func (b StoreBackend) Destination(context.Context, string) (wallet.Destination, error) {
	return b.Store, nil
}

// storeSource is the store as a source whose OpenView never waits for the view slot.
type storeSource struct{ *localstore.Store }

func (s storeSource) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{Lifetime: lifetime})
	if err != nil {
		return nil, err
	}
	return v, nil
}
