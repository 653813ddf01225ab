package serve

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"walletsync/brc40"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/wallet"
)

// Default quotas per identity (Quotas). A server creates a user for any key that signs a
// request, so without them one tenant fills the disk for every other.
//
//   - 512 MiB of stored bytes: a busy personal wallet of 100,000 transactions, with their
//     raw transactions, BEEFs, proofs and locking scripts at ~2.5 KB a transaction, holds
//     about 250 MB; twice that leaves room to grow, and a 20 GB small-VM disk still holds
//     dozens of tenants at their quota.
//   - 2,000,000 rows: the same wallet has 5 to 8 rows a transaction (outputs, label and
//     tag maps, proof requests), under 1,000,000.
//   - 32 sync states: a wallet syncs from its active store and a few more (other devices,
//     restores); each walletsync install or toolbox store it pushes from is one.
const (
	DefaultQuotaBytes      int64 = 512 << 20
	DefaultQuotaRows       int64 = 2_000_000
	DefaultQuotaSyncStates int64 = 32
)

// usageRefresh is how long a measured usage is trusted before it is read again from the
// store: other servers of a PostgreSQL database write beside this one. A refusal is always
// decided on a fresh reading.
const usageRefresh = 30 * time.Second

// maxTracked bounds the identities whose usage a server keeps in memory (about 200 bytes
// each); past it, one is forgotten, and read again when it next writes.
const maxTracked = 4096

// Quotas bound what one identity may hold on the server. A field left zero takes its
// default (DefaultQuotaBytes, DefaultQuotaRows, DefaultQuotaSyncStates); a negative one
// turns that bound off.
//
// A write is refused with a *wallet.QuotaError (matching wallet.ErrQuotaExceeded), before
// anything of it is written, when what the identity holds plus the whole request (every
// row counted as new, though some may only update rows it has) would exceed a bound, or
// when it would add a sync state past MaxSyncStates. Within one server, an identity's
// writes are checked one at a time, so its holdings never pass a bound; servers sharing a
// PostgreSQL database each check against a reading at most 30 s old, so together they may
// pass it by what they commit in that time.
type Quotas struct {
	// MaxBytes bounds the stored length of the identity's cells (wallet.Usage.Bytes).
	MaxBytes int64
	// MaxRows bounds the identity's rows over every synced table.
	MaxRows int64
	// MaxSyncStates bounds the stores the identity syncs from: its toolbox sync states
	// (findOrInsertSyncStateAuth) and its paged-wire checkpoints, each store once.
	MaxSyncStates int64
}

func (q Quotas) withDefaults() Quotas {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&q.MaxBytes, DefaultQuotaBytes)
	def(&q.MaxRows, DefaultQuotaRows)
	def(&q.MaxSyncStates, DefaultQuotaSyncStates)
	return q
}

// usageStore is what the quotas need of the server's store (localstore and pgstore).
type usageStore interface {
	Usage(ctx context.Context, identityKey string) (wallet.Usage, error)
	ProbeWrite(ctx context.Context) error
}

// quotaGuard enforces Quotas on both wires and watches whether the store can write: a
// commit that fails with a full disk (or a read-only store) marks it unwritable, and
// /readyz then probes it (usageStore.ProbeWrite) until a write commits again.
type quotaGuard struct {
	q       Quotas
	store   usageStore
	metrics *metrics
	log     *slog.Logger
	seed    maphash.Seed
	// stripes serialize the check and the commit of one identity (and of the few that
	// share its stripe), so that two concurrent writes cannot both pass a bound.
	stripes [64]sync.Mutex
	mu      sync.Mutex
	usage   map[string]*tracked
	// unwritable: the last write failed because the store could not write.
	unwritable atomic.Bool
}

type tracked struct {
	u  wallet.Usage
	at time.Time
}

func newQuotaGuard(q Quotas, store usageStore, m *metrics, log *slog.Logger) *quotaGuard {
	return &quotaGuard{q: q, store: store, metrics: m, log: log, seed: maphash.MakeSeed(), usage: map[string]*tracked{}}
}

// write admits a write of identity from producer ("" for none) adding at most rows and
// bytes, runs it, and accounts for it. It refuses the write with a *wallet.QuotaError
// without running it when a bound would be passed.
func (g *quotaGuard) write(ctx context.Context, identity, producer string, rows, bytes int64, run func() error) error {
	mu := &g.stripes[maphash.String(g.seed, identity)%uint64(len(g.stripes))]
	mu.Lock()
	defer mu.Unlock()
	if err := g.admit(ctx, identity, producer, rows, bytes); err != nil {
		return err
	}
	err := run()
	switch {
	case err == nil:
		g.unwritable.Store(false)
		g.mu.Lock()
		if t := g.usage[identity]; t != nil {
			t.u.Rows += rows
			t.u.Bytes += bytes
			if producer != "" && !slices.Contains(t.u.Producers, producer) {
				t.u.Producers = append(t.u.Producers, producer)
			}
		}
		g.mu.Unlock()
	case errors.Is(err, wallet.ErrDiskFull), errors.Is(err, wallet.ErrReadOnly):
		if !g.unwritable.Swap(true) {
			g.log.Error("the store cannot write: /readyz answers not ready until a write commits", "err", err)
		}
		g.metrics.refuse(refusedDiskFull)
	}
	return err
}

// admit checks one write against the quotas, on the tracked usage when it passes and on a
// fresh reading before it refuses.
func (g *quotaGuard) admit(ctx context.Context, identity, producer string, rows, bytes int64) error {
	u, fresh, err := g.current(ctx, identity, false)
	if err != nil {
		return err
	}
	for {
		qe := g.check(u, producer, rows, bytes)
		if qe == nil {
			return nil
		}
		if fresh {
			g.metrics.refuse("quota_" + qe.Resource)
			return fmt.Errorf("admit a write of %s: %w", wallet.ShortKey(identity, 16), qe)
		}
		if u, fresh, err = g.current(ctx, identity, true); err != nil {
			return err
		}
	}
}

func (g *quotaGuard) check(u wallet.Usage, producer string, rows, bytes int64) *wallet.QuotaError {
	if producer != "" && g.q.MaxSyncStates >= 0 && !slices.Contains(u.Producers, producer) && int64(len(u.Producers))+1 > g.q.MaxSyncStates {
		return &wallet.QuotaError{Resource: wallet.QuotaSyncStates, Used: int64(len(u.Producers)), Adding: 1, Limit: g.q.MaxSyncStates}
	}
	if g.q.MaxRows >= 0 && u.Rows+rows > g.q.MaxRows {
		return &wallet.QuotaError{Resource: wallet.QuotaRows, Used: u.Rows, Adding: rows, Limit: g.q.MaxRows}
	}
	if g.q.MaxBytes >= 0 && u.Bytes+bytes > g.q.MaxBytes {
		return &wallet.QuotaError{Resource: wallet.QuotaBytes, Used: u.Bytes, Adding: bytes, Limit: g.q.MaxBytes}
	}
	return nil
}

// current returns identity's usage: the tracked one unless it is older than usageRefresh
// or reread is set, else a reading of the store (fresh).
func (g *quotaGuard) current(ctx context.Context, identity string, reread bool) (wallet.Usage, bool, error) {
	g.mu.Lock()
	t := g.usage[identity]
	if t != nil && !reread && time.Since(t.at) < usageRefresh {
		u := t.u
		u.Producers = slices.Clone(u.Producers)
		g.mu.Unlock()
		return u, false, nil
	}
	g.mu.Unlock()
	u, err := g.store.Usage(ctx, identity)
	if err != nil {
		return u, false, fmt.Errorf("read the usage of %s: %w", wallet.ShortKey(identity, 16), err)
	}
	g.mu.Lock()
	if _, ok := g.usage[identity]; !ok && len(g.usage) >= maxTracked {
		for k := range g.usage {
			delete(g.usage, k)
			break
		}
	}
	g.usage[identity] = &tracked{u: wallet.Usage{Rows: u.Rows, Bytes: u.Bytes, Producers: slices.Clone(u.Producers)}, at: time.Now()}
	g.mu.Unlock()
	return u, true, nil
}

// probe answers readiness: nil while no write has failed for want of space, else the
// outcome of a probe write (which, when it commits, makes the store writable again).
func (g *quotaGuard) probe(ctx context.Context) error {
	if !g.unwritable.Load() {
		return nil
	}
	if err := g.store.ProbeWrite(ctx); err != nil {
		return err
	}
	if g.unwritable.Swap(false) {
		g.log.Info("the store writes again: /readyz answers ready")
	}
	return nil
}

// writeMetrics writes the quotas, the highest use among the identities tracked, and
// whether the store writes.
func (g *quotaGuard) writeMetrics(w io.Writer) {
	g.mu.Lock()
	var rows, bytes, states int64
	for _, t := range g.usage {
		rows, bytes, states = max(rows, t.u.Rows), max(bytes, t.u.Bytes), max(states, int64(len(t.u.Producers)))
	}
	n := len(g.usage)
	g.mu.Unlock()
	fmt.Fprintln(w, "# HELP walletsync_serve_quota_limit The per-identity quota of each resource (-1: no bound).")
	fmt.Fprintln(w, "# TYPE walletsync_serve_quota_limit gauge")
	fmt.Fprintln(w, "# HELP walletsync_serve_quota_used_max The highest use of each resource among the identities this server has measured.")
	fmt.Fprintln(w, "# TYPE walletsync_serve_quota_used_max gauge")
	for _, r := range []struct {
		name        string
		limit, used int64
	}{{wallet.QuotaBytes, g.q.MaxBytes, bytes}, {wallet.QuotaRows, g.q.MaxRows, rows}, {wallet.QuotaSyncStates, g.q.MaxSyncStates, states}} {
		fmt.Fprintf(w, "walletsync_serve_quota_limit{resource=%q} %d\n", r.name, max(r.limit, -1))
		fmt.Fprintf(w, "walletsync_serve_quota_used_max{resource=%q} %d\n", r.name, r.used)
	}
	fmt.Fprintf(w, "# HELP walletsync_serve_quota_identities Identities whose usage this server keeps in memory (at most %d).\n# TYPE walletsync_serve_quota_identities gauge\nwalletsync_serve_quota_identities %d\n", maxTracked, n)
	writable := 1
	if g.unwritable.Load() {
		writable = 0
	}
	fmt.Fprintf(w, "# HELP walletsync_serve_store_writable 0 after a write failed for want of space (disk full, read-only) until a write commits again, else 1.\n# TYPE walletsync_serve_store_writable gauge\nwalletsync_serve_store_writable %d\n", writable)
}

// refusedDiskFull counts the writes that failed because the store could not write.
const refusedDiskFull = "disk_full"

// quotaReasons are the refusal reasons of the quotas, in /metrics order.
var quotaReasons = []string{"quota_" + wallet.QuotaBytes, "quota_" + wallet.QuotaRows, "quota_" + wallet.QuotaSyncStates, refusedDiskFull}

// chunkSize is what a BRC-40 chunk may add: its rows (the user row, which exists, aside)
// and their stored bytes.
func chunkSize(chunk brc40.SyncChunk) (rows, bytes int64) {
	for name, rs := range chunk.Rows {
		t, err := wallet.LookupTable(name)
		if err != nil {
			continue // the store refuses it
		}
		for _, r := range rs {
			rows++
			bytes += t.StoredBytes(r)
		}
	}
	return rows, bytes
}

// quotaToolbox is the toolbox wire's store behind the quotas.
type quotaToolbox struct {
	toolbox.Store
	g *quotaGuard
}

// FindOrInsertSyncStateAuth refuses a new sync state past MaxSyncStates.
func (s quotaToolbox) FindOrInsertSyncStateAuth(ctx context.Context, identityKey, producerSIK, producerName string) (st brc40.SyncState, isNew bool, err error) {
	err = s.g.write(ctx, identityKey, producerSIK, 0, 0, func() error {
		var err error
		st, isNew, err = s.Store.FindOrInsertSyncStateAuth(ctx, identityKey, producerSIK, producerName)
		return err
	})
	return st, isNew, err
}

// ProcessSyncChunk refuses a chunk that would take the identity past a quota.
func (s quotaToolbox) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (res brc40.ProcessSyncChunkResult, err error) {
	rows, bytes := chunkSize(chunk)
	err = s.g.write(ctx, args.IdentityKey, args.FromStorageIdentityKey, rows, bytes, func() error {
		var err error
		res, err = s.Store.ProcessSyncChunk(ctx, args, chunk)
		return err
	})
	return res, err
}

// quotaBackend is the paged wire's backend behind the quotas.
type quotaBackend struct {
	wire.Backend
	g *quotaGuard
}

// quotaSharedBackend keeps the shared views of a backend that has them (PostgreSQL).
type quotaSharedBackend struct {
	quotaBackend
	wire.SharedViews
}

func newQuotaBackend(b wire.Backend, g *quotaGuard) wire.Backend {
	qb := quotaBackend{b, g}
	if sv, ok := b.(wire.SharedViews); ok {
		return quotaSharedBackend{qb, sv}
	}
	return qb
}

// Destination returns the identity's destination, whose commits are checked.
func (b quotaBackend) Destination(ctx context.Context, identityKey string) (wallet.Destination, error) {
	d, err := b.Backend.Destination(ctx, identityKey)
	if err != nil {
		return nil, err
	}
	return quotaDestination{d, b.g}, nil
}

type quotaDestination struct {
	wallet.Destination
	g *quotaGuard
}

// Commit refuses a page that would take the identity past a quota.
func (d quotaDestination) Commit(ctx context.Context, b wallet.Batch) (ack wallet.Ack, err error) {
	var bytes int64
	if t, err := wallet.LookupTable(b.Page.Table); err == nil {
		for _, r := range b.Page.Rows {
			bytes += t.StoredBytes(r)
		}
	}
	s := b.Checkpoint.Session
	err = d.g.write(ctx, s.IdentityKey, s.SourceStorage, int64(len(b.Page.Rows)), bytes, func() error {
		var err error
		ack, err = d.Destination.Commit(ctx, b)
		return err
	})
	return ack, err
}
