package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/wallet"
)

// lockIdentity takes the transaction-scoped advisory lock of one identity, which every
// transaction that may create the identity's user or sync states holds: the toolbox's
// schema has no unique key on a sync state's (user, producer, name), so two processes
// creating the same state at once must take turns, and the second finds the first's row.
func lockIdentity(ctx context.Context, tx pgx.Tx, identityKey string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "walletsync identity "+identityKey); err != nil {
		return fmt.Errorf("lock identity: %w", classify(err))
	}
	return nil
}

// ensureUser returns the id of the user identityKey, creating it the way the toolbox's
// findOrInsertUser does when it is missing (brc40.NewUserRows: activeStorage names this
// store, its default basket comes with it); created reports that it did.
func ensureUser(ctx context.Context, tx pgx.Tx, identityKey string) (userID int64, created bool, err error) {
	if identityKey == "" {
		return 0, false, fmt.Errorf("empty identity key: %w", wallet.ErrInvalidArgument)
	}
	if err := lockIdentity(ctx, tx, identityKey); err != nil {
		return 0, false, err
	}
	userID, err = lookupUser(ctx, tx, identityKey)
	if !errors.Is(err, wallet.ErrNotFound) {
		return userID, false, err
	}
	var sik string
	if err := tx.QueryRow(ctx, `SELECT "storageIdentityKey" FROM settings`).Scan(&sik); err != nil {
		return 0, false, fmt.Errorf("read settings: %w", classify(err))
	}
	user, basket := brc40.NewUserRows(identityKey, sik, wallet.Now())
	if userID, err = insertRow(ctx, tx, wallet.Users, user); err != nil {
		return 0, false, err
	}
	basket[wallet.OutputBaskets.Col("userId")] = userID
	if _, err := insertRow(ctx, tx, wallet.OutputBaskets, basket); err != nil {
		return 0, false, err
	}
	return userID, true, nil
}

// lookupUser returns the id of the user identityKey, or wallet.ErrNotFound.
func lookupUser(ctx context.Context, tx pgx.Tx, identityKey string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT "userId" FROM users WHERE "identityKey" = $1`, identityKey).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read user: %w", classify(err))
	}
	return id, nil
}

// FindOrInsertUserRow is the toolbox's findOrInsertUser as a server answers it: the whole
// users row of identityKey (in wallet.Users column order), created as the toolbox creates it
// when missing; isNew reports that this call made it.
func (s *Store) FindOrInsertUserRow(ctx context.Context, identityKey string) (user wallet.Row, isNew bool, err error) {
	err = s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		id, created, err := ensureUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		rows, err := queryRows(ctx, tx, wallet.Users, "SELECT "+selectColumns(wallet.Users, "t")+` FROM users AS t WHERE t."userId" = $1`, id)
		if err != nil {
			return err
		}
		user, isNew = rows[0], created
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("find or insert user: %w", err)
	}
	return user, isNew, nil
}

// SetActive is the toolbox's setActive: users.activeStorage becomes storageIdentityKey and
// updated_at now, so that the next sync carries the choice as the newer user row. A
// missing user is wallet.ErrNotFound.
func (s *Store) SetActive(ctx context.Context, identityKey, storageIdentityKey string) error {
	if storageIdentityKey == "" {
		return fmt.Errorf("set active: empty storage identity key: %w", wallet.ErrInvalidArgument)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE users SET "activeStorage" = $1, updated_at = $2 WHERE "identityKey" = $3`,
		storageIdentityKey, wallet.Now(), identityKey)
	if err != nil {
		return fmt.Errorf("set active: %w", classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set active: identity %s: %w", wallet.ShortKey(identityKey, 16), wallet.ErrNotFound)
	}
	return nil
}

// MakeAvailable returns the store's settings (brc40.ChunkStore).
func (s *Store) MakeAvailable(ctx context.Context) (wallet.Settings, error) {
	return s.Settings(ctx)
}

// FindOrInsertUser returns the user identityKey as a sync needs it, creating it as
// FindOrInsertUserRow does when missing (brc40.ChunkStore).
func (s *Store) FindOrInsertUser(ctx context.Context, identityKey string) (brc40.SyncUser, error) {
	row, isNew, err := s.FindOrInsertUserRow(ctx, identityKey)
	if err != nil {
		return brc40.SyncUser{}, err
	}
	t := wallet.Users
	return brc40.SyncUser{UserID: row[t.Col("userId")].(int64), IdentityKey: identityKey, ActiveStorage: row[t.Col("activeStorage")].(string),
		UpdatedAt: brc40.UpdatedAt(t, row), IsNew: isNew}, nil
}
