package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"walletsync/brc40"
	"walletsync/wallet"
)

// EnsureUser returns the id of the user with identityKey, creating it the way the toolbox's
// findOrInsertUser does when it is missing (brc40.NewUserRows: activeStorage names this
// store, its default basket comes with it). created reports whether the user was new.
func (s *Store) EnsureUser(ctx context.Context, identityKey string) (userID int64, created bool, err error) {
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		userID, created, err = ensureUser(ctx, tx, identityKey)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("ensure user: %w", err)
	}
	return userID, created, nil
}

func ensureUser(ctx context.Context, tx *sql.Tx, identityKey string) (int64, bool, error) {
	if identityKey == "" {
		return 0, false, fmt.Errorf("empty identity key: %w", wallet.ErrInvalidArgument)
	}
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT userId FROM users WHERE identityKey = ?", identityKey).Scan(&id)
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, classify(err)
	}
	var sik string
	if err := tx.QueryRowContext(ctx, "SELECT storageIdentityKey FROM settings LIMIT 1").Scan(&sik); err != nil {
		return 0, false, classify(err)
	}
	user, basket := brc40.NewUserRows(identityKey, sik, wallet.Now())
	w := newRowWriter(tx)
	defer w.close()
	id, err = w.insert(ctx, wallet.Users, user, false)
	if err != nil {
		return 0, false, err
	}
	basket[wallet.OutputBaskets.Col("userId")] = id
	_, err = w.insert(ctx, wallet.OutputBaskets, basket, false)
	return id, true, err
}

// fields names a row's values by column, for building rows readably.
type fields map[string]any

// newRow builds a row of t from named values; columns not named are NULL. A name that is
// not a column of t panics: that is a programming error.
func newRow(t *wallet.Table, f fields) wallet.Row {
	r := make(wallet.Row, len(t.Columns))
	for name, v := range f {
		if i, ok := v.(int); ok {
			v = int64(i)
		}
		r[t.Col(name)] = v
	}
	return r
}

// FindOrInsertUserRow is the toolbox's findOrInsertUser as a server answers it: the whole
// users row of identityKey (in wallet.Users column order), created as EnsureUser creates it
// when missing; isNew reports that this call made it. (FindOrInsertUser is the same for a
// sync, which needs only the user's keys and times.)
func (s *Store) FindOrInsertUserRow(ctx context.Context, identityKey string) (user wallet.Row, isNew bool, err error) {
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		id, created, err := ensureUser(ctx, tx, identityKey)
		if err != nil {
			return err
		}
		rows, err := queryRows(ctx, tx, wallet.Users, "SELECT "+selectColumns(wallet.Users)+" FROM users AS t WHERE t.userId = ?", id)
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
