// Package pgstore is walletsync serve's PostgreSQL backend: the toolbox's tables in
// PostgreSQL, for many users and for several server processes over one database, behind
// the toolbox wire (remote/toolbox.Store) with the same semantics as localstore's SQLite
// store. The BRC-40 rules themselves (which rows a chunk takes, how a chunk moves the sync
// state, how a matched row merges) are wallet's, shared with localstore; this package holds
// only their queries.
//
// Concurrency between processes is the database's: a chunk is produced from one
// REPEATABLE READ snapshot; a chunk is consumed in one transaction that locks its sync
// state row first and refuses args that no longer match it (compare-and-set, see
// ProcessSyncChunk); users and sync states are created under a per-identity advisory lock.
//
// Store is a brc40.ChunkStore too, so that syncer.RunChunks moves wallets in and out of it
// directly.
//
// Store is a wallet.Source too, for walletsync's paged wire: snapshot views that export
// their snapshot to other connections (view.go), keyset pages identical to localstore's
// (page.go), and a change journal in commit order (journal.go). Its views are shared by
// every server process over the database too (shared.go: wire.SharedViews), so that a
// client's pages may land on any of them.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"walletsync/brc40"
	"walletsync/wallet"
)

// DBType is what the settings row of a PostgreSQL store says in dbtype.
const DBType = "PostgreSQL"

// maxOutputScript is the value the toolbox's migrate() writes into settings.
const maxOutputScript = 1024

// Options configure Open.
type Options struct {
	// Chain, StorageIdentityKey and StorageName make the settings row of a database that
	// has none yet (all three required then); an existing row is kept as it is, and the
	// caller checks its chain (see Settings).
	Chain              wallet.Chain
	StorageIdentityKey string
	StorageName        string
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and the CPU count).
	MaxConns int32
	// MaxViews bounds the snapshot views open at once (see OpenSnapshot), each of which
	// holds a pooled connection for its lifetime (default: half the pool, at least 1).
	MaxViews int
	// Logger receives the cleanups that fail where nobody is left to tell (a shared view's
	// row that would not delete); default: discarded.
	Logger *slog.Logger
}

// Store is a wallet store in one PostgreSQL database, safe for concurrent use by many
// goroutines and by several processes over the same database.
type Store struct {
	pool  *pgxpool.Pool
	where string        // the database's URL without its password, for messages
	views chan struct{} // one token per open snapshot view (see OpenSnapshot)
	log   *slog.Logger
	// shared are the views this process holds of those every process shares (shared.go).
	shared *sharedViews
}

// Open connects to the database at dbURL (postgres://...), brings its schema up to this
// binary's (see migrate: one transaction under an advisory lock, so that two processes
// starting together do not race), writes the settings row when there is none, and returns
// the store. A database whose ledger holds a migration this binary does not know is
// refused with a *wallet.SchemaError matching wallet.ErrSchemaTooNew, and nothing in it is
// changed.
func Open(ctx context.Context, dbURL string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %v: %w", redact(dbURL), wallet.ErrInvalidArgument)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if opts.MaxViews <= 0 {
		opts.MaxViews = max(int(cfg.MaxConns)/2, 1)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{pool: pool, where: redact(dbURL), views: make(chan struct{}, opts.MaxViews), log: opts.Logger, shared: newSharedViews()}
	err = s.tx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if err := migrate(ctx, tx, s.where); err != nil {
			return err
		}
		return ensureSettings(ctx, tx, opts)
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// redact returns dbURL without its password.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func ensureSettings(ctx context.Context, tx pgx.Tx, opts Options) error {
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM settings").Scan(&n); err != nil {
		return fmt.Errorf("read settings: %w", classify(err))
	}
	if n > 0 {
		return nil
	}
	if opts.StorageIdentityKey == "" || opts.StorageName == "" {
		return fmt.Errorf("a new store needs its storage identity key and name: %w", wallet.ErrInvalidArgument)
	}
	if _, err := wallet.ParseChain(string(opts.Chain)); err != nil {
		return fmt.Errorf("a new store needs its chain: %w", err)
	}
	now := wallet.Now()
	_, err := tx.Exec(ctx, `INSERT INTO settings (created_at, updated_at, "storageIdentityKey", "storageName", chain, dbtype, "maxOutputScript")
		VALUES ($1, $1, $2, $3, $4, $5, $6)`, now, opts.StorageIdentityKey, opts.StorageName, string(opts.Chain), DBType, maxOutputScript)
	if err != nil {
		return fmt.Errorf("write settings: %w", classify(err))
	}
	return nil
}

// Source returns the store itself, whatever the identity: one multi-tenant source, which
// the paged wire's Handler scopes per identity (pages to its rows, views to it). With
// Destination it makes the store the wire's backend (remote/wire.Backend), whose views
// every server process over the database shares (remote/wire.SharedViews).
func (s *Store) Source(context.Context, string) (wallet.Source, error) { return s, nil }

// Destination returns the store itself, whatever the identity (see Source).
func (s *Store) Destination(context.Context, string) (wallet.Destination, error) { return s, nil }

// Close releases the shared views this process holds, then closes the pool; calls in
// flight finish first.
func (s *Store) Close() error {
	s.shared.closeAll(s)
	s.pool.Close()
	return nil
}

// Settings returns the store's settings row.
func (s *Store) Settings(ctx context.Context) (wallet.Settings, error) {
	var st wallet.Settings
	var chain string
	err := s.pool.QueryRow(ctx, `SELECT "storageIdentityKey", "storageName", chain, dbtype, "maxOutputScript", created_at, updated_at FROM settings`).
		Scan(&st.StorageIdentityKey, &st.StorageName, &chain, &st.DBType, &st.MaxOutputScript, &st.CreatedAt, &st.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, fmt.Errorf("read settings: %w", wallet.ErrNotFound)
	}
	if err != nil {
		return st, fmt.Errorf("read settings: %w", classify(err))
	}
	st.Chain = wallet.Chain(chain)
	st.CreatedAt, st.UpdatedAt = st.CreatedAt.UTC(), st.UpdatedAt.UTC()
	return st, nil
}

// maxAttempts bounds how often tx runs a transaction that lost a race it may win on a
// retry (a serialization failure, a deadlock, a unique key another transaction inserted
// first).
const maxAttempts = 5

// tx runs fn in one transaction at the isolation level given, committing when fn returns
// nil. A transaction that lost a race to another (see retryable) runs again from the
// start, up to maxAttempts times: fn must do all its reads inside tx.
func (s *Store) tx(ctx context.Context, iso pgx.TxIsoLevel, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: iso}, fn)
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return classify(err)
		}
		select {
		case <-ctx.Done():
			return classify(err)
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// retryable reports whether err is a transaction that lost a race: a serialization
// failure, a deadlock, or a unique violation (a row another transaction inserted between
// this one's lookup and its insert; the run again finds it).
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01", "23505":
		return true
	}
	return false
}

// classify wraps err so that errors.Is finds the wallet sentinel of its SQLSTATE class:
// integrity violations are wallet.ErrConstraint, a full disk wallet.ErrDiskFull, a read-only
// transaction or server wallet.ErrReadOnly, data corruption wallet.ErrCorrupt, and lock
// and serialization failures wallet.ErrBusy. Others are returned unchanged.
func classify(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	var class error
	switch {
	case len(pe.Code) == 5 && pe.Code[:2] == "23":
		class = wallet.ErrConstraint
	case pe.Code == "53100":
		class = wallet.ErrDiskFull
	case pe.Code == "25006":
		class = wallet.ErrReadOnly
	case pe.Code == "XX001" || pe.Code == "XX002":
		class = wallet.ErrCorrupt
	case pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "55P03":
		class = wallet.ErrBusy
	default:
		return err
	}
	if errors.Is(err, class) {
		return err
	}
	return &wallet.ClassError{Class: class, Err: err}
}

var _ brc40.ChunkStore = (*Store)(nil)
