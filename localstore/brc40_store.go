package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"walletsync/brc40"
	"walletsync/wallet"
)

// The rest of brc40.ChunkStore: what the toolbox's WalletStorageManager asks of a store
// besides chunks, so that syncer.RunChunks drives a local wallet exactly as it drives a
// toolbox StorageServer.

var _ brc40.ChunkStore = (*Store)(nil)

// MakeAvailable returns the store's settings (Settings).
func (s *Store) MakeAvailable(ctx context.Context) (wallet.Settings, error) {
	return s.Settings(ctx)
}

// FindOrInsertUser returns the user identityKey. A user that exists is only read, so a
// read-only store answers for it; a missing one is created as EnsureUser creates it.
func (s *Store) FindOrInsertUser(ctx context.Context, identityKey string) (brc40.SyncUser, error) {
	u, err := s.syncUser(ctx, identityKey)
	if !errors.Is(err, wallet.ErrNotFound) {
		return u, err
	}
	if _, _, err := s.EnsureUser(ctx, identityKey); err != nil {
		return brc40.SyncUser{}, fmt.Errorf("find or insert user: %w", err)
	}
	u, err = s.syncUser(ctx, identityKey)
	u.IsNew = true
	return u, err
}

func (s *Store) syncUser(ctx context.Context, identityKey string) (brc40.SyncUser, error) {
	u := brc40.SyncUser{IdentityKey: identityKey}
	var updated any
	err := s.readDB.QueryRowContext(ctx, "SELECT userId, activeStorage, updated_at FROM users WHERE identityKey = ?", identityKey).
		Scan(&u.UserID, &u.ActiveStorage, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("read user: %w", classify(err))
	}
	switch v := updated.(type) {
	case time.Time:
		u.UpdatedAt = v.UTC().Truncate(time.Millisecond)
	case string:
		u.UpdatedAt, err = wallet.ParseTime(v)
	default:
		err = fmt.Errorf("users.updated_at holds %T", updated)
	}
	if err != nil {
		return u, fmt.Errorf("read user: %w", err)
	}
	return u, nil
}

// SetActive is the toolbox's setActive: users.activeStorage becomes storageIdentityKey and
// updated_at now, so that the next sync carries the choice as the newer user row.
func (s *Store) SetActive(ctx context.Context, identityKey, storageIdentityKey string) error {
	if storageIdentityKey == "" {
		return fmt.Errorf("set active: empty storage identity key: %w", wallet.ErrInvalidArgument)
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE users SET activeStorage = ?, updated_at = ? WHERE identityKey = ?",
			storageIdentityKey, wallet.FormatTime(wallet.Now()), identityKey)
		if err != nil {
			return classify(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set active: %w", err)
	}
	return nil
}
