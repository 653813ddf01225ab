package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// Journal maintenance. The wallet's change journal grows by one row for every row the wallet
// app changes; pruning it is the one write walletsync makes into a wallet file on its own
// initiative, and any commit into the file can fail a wallet app transaction that read
// before it and writes after it (see localstore.MaintainJournal). So it is rare, small and
// done only when the wallet is quiet:
//
//   - the agent looks once a minute, and only while none of its tasks runs;
//   - a wallet is pruned at most once per maintainEvery (a day), and only after nobody has
//     committed to it for quietFor (ten minutes) of the agent's watch, so a wallet in use
//     is never touched, and an app that wrote ten minutes ago is very unlikely to be
//     inside a transaction now;
//   - localstore then checks again before each short transaction that nobody wrote and (on
//     Linux) that no other process is inside a transaction, and stops at the first sign.
//
// What may go: the entries every backup wallet of the wallet already holds. A backup
// wallet's durable checkpoint says what its next run reads (syncer.JournalNeed); the agent
// asks each of its SQLite destinations, so nothing is recorded in the wallet file for it. A
// destination that has not succeeded for staleAfter (a disk unplugged for a month) holds
// nothing back: its next run finds its checkpoint uncovered and copies everything again,
// which costs time and loses nothing. Backup folders hold whole BRC-39 files and need no
// journal. A sync the agent does not run (`walletsync sync` by hand to another file) is not
// asked either, and may likewise fall back to a full copy.
const (
	maintainLook  = time.Minute
	quietFor      = 10 * time.Minute
	maintainEvery = 24 * time.Hour
	staleAfter    = 30 * 24 * time.Hour
)

// quietWatch is what the agent knows of one wallet's writes.
type quietWatch struct {
	version int64     // localstore.Store.WriteVersion at the last look
	since   time.Time // when the version was first seen: quiet since then
	pruned  time.Time // when maintenance last finished its work; zero: not since start
}

// maintainJournals runs journal maintenance at every tick until ctx ends.
func (a *Agent) maintainJournals(ctx context.Context) {
	ticks, stop := ticksOr(a.opts.maintainTicks, maintainLook)
	defer stop()
	watches := map[string]*quietWatch{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		a.maintainOnce(ctx, watches)
		if a.opts.maintainLooked != nil {
			select {
			case a.opts.maintainLooked <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// maintainOnce is one look at every open wallet: it notes writes, and prunes a wallet's
// journal when it is due and quiet.
func (a *Agent) maintainOnce(ctx context.Context, watches map[string]*quietWatch) {
	for _, t := range a.tasks.List() {
		if t.State == api.TaskQueued || t.State == api.TaskRunning || t.State == api.TaskCancelling {
			return // its own work comes first; the next look will do
		}
	}
	a.releaseUnconfigured()
	cfg := a.config()
	now := a.now()
	for _, ref := range cfg.Wallets {
		a.mu.Lock()
		w := a.wallets[ref.Path] // a wallet no task has opened is left alone
		a.mu.Unlock()
		if w == nil {
			continue
		}
		v, err := w.store.WriteVersion(ctx)
		if err != nil {
			a.log.Warn("journal maintenance: read the wallet's write version", "wallet", ref.Path, "err", err)
			continue
		}
		q := watches[ref.Path]
		if q == nil || q.version != v {
			if q == nil {
				q = &quietWatch{}
				watches[ref.Path] = q
			}
			q.version, q.since = v, now
			continue
		}
		if now.Sub(q.since) < quietFor || (!q.pruned.IsZero() && now.Sub(q.pruned) < maintainEvery) {
			continue
		}
		res, err := a.maintainWallet(ctx, cfg, ref, w, v)
		switch {
		case errors.Is(err, localstore.ErrNotQuiet):
			q.since = now // wait for another quiet spell
			a.log.Info("journal maintenance stopped: the wallet is in use", "wallet", ref.Path, "deleted", res.Deleted, "err", err)
		case err != nil:
			q.pruned = now // retried tomorrow, not every minute
			a.log.Warn("journal maintenance", "wallet", ref.Path, "err", err)
		case res.More:
			q.since = now // the rest after another quiet spell
			a.log.Info("journal maintenance", "wallet", ref.Path, "deleted", res.Deleted, "more", true)
		default:
			q.pruned = now
			if res.Deleted > 0 {
				a.log.Info("journal maintenance", "wallet", ref.Path, "deleted", res.Deleted)
			}
		}
	}
}

// maintainWallet prunes ref's journal through what its destinations need, if the wallet
// stays quiet since version.
func (a *Agent) maintainWallet(ctx context.Context, cfg api.Config, ref api.WalletRef, w *walletHandle, version int64) (localstore.MaintenanceResult, error) {
	through, err := a.journalBound(ctx, cfg, ref, w)
	if err != nil {
		return localstore.MaintenanceResult{}, err
	}
	return w.store.MaintainJournal(ctx, localstore.JournalMaintenance{Through: through, Version: version})
}

// journalBound returns how far ref's journal may be pruned: the lowest sequence one of its
// SQLite destinations that succeeded within staleAfter still needs, else everything. It
// fails when a destination that counts cannot be asked, or has a kind it does not know.
func (a *Agent) journalBound(ctx context.Context, cfg api.Config, ref api.WalletRef, w *walletHandle) (int64, error) {
	j, err := w.store.JournalState(ctx)
	if err != nil {
		return 0, err
	}
	settings, err := w.store.Settings(ctx)
	if err != nil {
		return 0, err
	}
	ids, err := w.identities(ctx, ref)
	if err != nil {
		return 0, err
	}
	through := j.HighWater
	for _, d := range cfg.Destinations {
		if r, err := walletOf(cfg, d); err != nil || r.Path != ref.Path {
			continue
		}
		switch d.Kind {
		case api.DestinationFolder, api.DestinationBundles:
			continue // whole BRC-39 files, whole-file bundles: no journal read
		case api.DestinationSQLite:
		default:
			return 0, fmt.Errorf("destination %s: cannot tell what a %q destination needs of the journal: %w", d.ID, d.Kind, wallet.ErrInvalidArgument)
		}
		if last := a.lastSuccess(d.ID); last.IsZero() || a.now().Sub(last) > staleAfter {
			continue // its next run copies everything anyway
		}
		need, err := destinationNeed(ctx, d, settings.StorageIdentityKey, ids)
		if err != nil {
			return 0, fmt.Errorf("destination %s: %w", d.ID, err)
		}
		through = min(through, need)
	}
	return through, nil
}

// destinationNeed opens the backup wallet of d read-only and returns the lowest journal
// sequence the next run of any of ids needs (math.MaxInt64 when none needs any, or the
// file is gone).
func destinationNeed(ctx context.Context, d api.Destination, sourceStorage string, ids []string) (int64, error) {
	const none = int64(1<<63 - 1)
	dst, err := localstore.Open(ctx, d.Path, localstore.Options{ReadOnly: true})
	if errors.Is(err, wallet.ErrNotFound) {
		return none, nil // the backup wallet is gone: its next run copies everything
	}
	if err != nil {
		return 0, fmt.Errorf("read the backup wallet's checkpoints: %w", err)
	}
	defer dst.Close()
	need := none
	for _, id := range ids {
		cp, err := dst.Checkpoint(ctx, wallet.SessionKey{SourceStorage: sourceStorage, IdentityKey: id})
		if err != nil {
			return 0, fmt.Errorf("read the backup wallet's checkpoints: %w", err)
		}
		if seq, ok := syncer.JournalNeed(cp); ok {
			need = min(need, seq)
		}
	}
	return need, nil
}

// ticksOr returns seam when a test set it, else the ticks of a new ticker of every; stop
// stops that ticker.
func ticksOr(seam <-chan time.Time, every time.Duration) (ticks <-chan time.Time, stop func()) {
	if seam != nil {
		return seam, func() {}
	}
	t := time.NewTicker(every)
	return t.C, t.Stop
}
