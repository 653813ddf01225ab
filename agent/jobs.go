package agent

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/syncer"
	"walletsync/wallet"
)

// BackupPasswordKey names the unattended backup password in the secrets file. Scheduled
// BRC-39 backups need it without a person.
const BackupPasswordKey = "backup-password"

// RunDestination starts the job that brings destination id up to date (reason says why:
// "manual", "interval", "change"...) and returns its task. A destination already being
// brought up to date gets at most one more run queued behind the running one.
func (a *Agent) RunDestination(id, reason string) (api.Task, error) {
	cfg := a.config()
	d, err := findDestination(cfg, id)
	if err != nil {
		return api.Task{}, err
	}
	ref, err := walletOf(cfg, d)
	if err != nil {
		return api.Task{}, err
	}
	switch d.Kind {
	case api.DestinationSQLite:
		return a.tasks.Start(api.KindSync, d.ID, a.placedJob(d, func(ctx context.Context, h *TaskHandle) error { return a.syncJob(ctx, h, d, ref, reason) }))
	case api.DestinationFolder:
		return a.tasks.Start(api.KindBackup, d.ID, a.drilledJob(a.placedJob(d, func(ctx context.Context, h *TaskHandle) error { return a.backupJob(ctx, h, d, ref, reason) })))
	case api.DestinationBundles:
		return a.tasks.Start(api.KindBundle, d.ID, a.drilledJob(a.placedJob(d, func(ctx context.Context, h *TaskHandle) error { return a.bundleJob(ctx, h, d, ref, reason) })))
	case api.DestinationStorageServer:
		return a.tasks.Start(api.KindSync, d.ID, a.placedJob(d, func(ctx context.Context, h *TaskHandle) error { return a.storageServerJob(ctx, h, d, ref, reason) }))
	}
	return api.Task{}, fmt.Errorf("destination %s: kind %q: %w", d.ID, d.Kind, wallet.ErrInvalidArgument)
}

// drilledJob runs a job that writes a backup file or bundle, and after its success the
// restore drill if none has checked a file yet (drillAfterFirstBackup). The drill starts
// from a goroutine of its own: it is a task of its own, which waits for this one to end.
func (a *Agent) drilledJob(run RunFunc) RunFunc {
	return func(ctx context.Context, h *TaskHandle) error {
		err := run(ctx, h)
		if err == nil {
			go a.drillAfterFirstBackup()
		}
		return err
	}
}

// syncJob pushes every identity of the wallet into the destination's backup wallet file,
// page by page; reading never holds a grant on the wallet (snapshot views), and the commits
// go to the destination file, so foreground work on the wallet is not held up.
func (a *Agent) syncJob(ctx context.Context, h *TaskHandle, d api.Destination, ref api.WalletRef, reason string) error {
	w, err := a.wallet(ctx, ref.Path)
	if err != nil {
		return err
	}
	ids, err := w.identities(ctx, ref)
	if err != nil {
		return err
	}
	settings, err := w.store.Settings(ctx)
	if err != nil {
		return err
	}
	dst, err := localstore.OpenOrCreate(ctx, d.Path, localstore.CreateOptions{Chain: settings.Chain, StorageName: "walletsync backup " + d.Name},
		localstore.Options{Logger: a.log})
	if err != nil {
		return api.AtPath(d.Path, fmt.Errorf("open backup wallet %s: %w", d.Path, err))
	}
	defer dst.Close()
	h.Logf("sync to %s started (%s)", d.Name, reason)
	var res api.SyncResult
	var done syncer.Counters
	for _, id := range ids {
		r, err := a.pushPages(ctx, h, w, dst, id, done)
		res.Sessions = append(res.Sessions, r)
		h.SetResult(res)
		done = addCounters(done, r.Counters)
		if err != nil {
			return err
		}
		h.Logf("%s: %s sync, %d pages, %d rows (%d inserted, %d updated), checkpoint %d",
			wallet.ShortKey(id, 12), r.Kind, r.Pages, r.Rows, r.Inserts, r.Updates, r.Checkpoint.Seq)
	}
	return nil
}

// pushPages runs the page session that pushes identity from the wallet w to dst (a backup
// file, or a storage server on walletsync's wire), reporting its progress to h on top of
// done, the counters of the task's sessions before it. Mirror: both are backups of this
// wallet, so they equal it column for column. Bulk: nothing in the foreground
// waits on the destination, so a first copy takes large pages (the wallet itself is only
// read, through snapshot views, and holds no grant).
func (a *Agent) pushPages(ctx context.Context, h *TaskHandle, w *walletHandle, dst wallet.Destination, identity string, done syncer.Counters) (syncer.Result, error) {
	counted := false
	return syncer.Run(ctx, w.store, dst, identity, syncer.Options{Active: wallet.KeepSourceActive, Mirror: true, MaxRows: a.opts.SyncMaxRows, Bulk: true,
		Progress: func(p syncer.Progress) error {
			if !counted && p.Kind != "" {
				// Once per session, as soon as it knows what it does: the total that the
				// percentage and the time left need.
				counted = true
				h.SetTotal(done.Rows + syncTotal(ctx, w.store, identity, p))
			}
			p.Counters = addCounters(done, p.Counters)
			h.SyncProgress(p)
			return nil
		}})
}

// syncTotal estimates the rows a sync session of identity moves, from its first progress
// event: a full traversal reads the identity's rows of the tables from the checkpoint's
// table on (all of them for a first copy), an incremental one at most the journal entries
// above the checkpoint's high-water mark (a row changed twice is read once), an unchanged
// one nothing. Both counts are single indexed queries on the source. 0 means unknown: the
// dashboard then shows no percentage rather than a wrong one.
func syncTotal(ctx context.Context, src *localstore.Store, identity string, p syncer.Progress) int64 {
	switch p.Kind {
	case syncer.KindFull:
		sum, err := src.Summary(ctx, identity)
		if err != nil {
			return 0
		}
		var n int64
		for _, t := range wallet.SyncOrder[min(p.Checkpoint.Table, len(wallet.SyncOrder)-1):] {
			n += sum.Counts[t.Name]
		}
		return n
	case syncer.KindIncremental:
		j, err := src.JournalState(ctx)
		if err != nil || j.HighWater <= p.Checkpoint.HighWater {
			return 0
		}
		return j.HighWater - p.Checkpoint.HighWater
	}
	return 0
}

// identityRows is how many rows the identities hold in all: what a backup file of each
// writes.
func identityRows(ctx context.Context, src *localstore.Store, ids []string) int64 {
	var n int64
	for _, id := range ids {
		sum, err := src.Summary(ctx, id)
		if err != nil {
			return 0
		}
		for _, c := range sum.Counts {
			n += c
		}
	}
	return n
}

func addCounters(a, b syncer.Counters) syncer.Counters {
	return syncer.Counters{Pages: a.Pages + b.Pages, Rows: a.Rows + b.Rows, Inserts: a.Inserts + b.Inserts,
		Updates: a.Updates + b.Updates, Bytes: a.Bytes + b.Bytes, Requests: a.Requests + b.Requests}
}

// backupJob writes one BRC-39 file per identity into the destination folder (private temp
// file, fsync, rename, folder fsync: a crash never leaves a partial backup under a backup's
// name), records it, and applies the folder's retention.
func (a *Agent) backupJob(ctx context.Context, h *TaskHandle, d api.Destination, ref api.WalletRef, reason string) error {
	pw, err := a.secrets.Get(BackupPasswordKey)
	if err != nil {
		return api.WithHint(fmt.Errorf("backup to %s: no unattended backup password: %w", d.Name, err),
			"set the backup password in Settings; a lost password means lost backups")
	}
	w, err := a.wallet(ctx, ref.Path)
	if err != nil {
		return err
	}
	ids, err := w.identities(ctx, ref)
	if err != nil {
		return err
	}
	removeStaleTemps(d.Path, h)
	h.SetTotal(identityRows(ctx, w.store, ids))
	h.Logf("backup to %s started (%s)", d.Name, reason)
	var written []api.Backup
	for _, id := range ids {
		h.SetDetail("deriving the key and writing " + wallet.ShortKey(id, 8))
		file, err := a.exportFile(ctx, w, id, pw, freeBackupPath(d.Path, id, a.now()), false)
		if err != nil {
			return err
		}
		file.Destination = d.ID
		if err := a.state.RecordBackup(ctx, file); err != nil {
			return err
		}
		written = append(written, file)
		h.SetResult(written)
		var done syncer.Counters
		for _, f := range written {
			for _, n := range f.Rows {
				done.Rows += n
			}
			done.Bytes += f.Size
		}
		h.SetCounters(done)
		a.bus.Publish(api.EventBackupWritten, file)
		h.Logf("wrote %s (%d bytes, sha256 %s)", filepath.Base(file.Path), file.Size, file.SHA256[:16])
	}
	return a.applyRetention(ctx, h, d)
}

// bundleJob writes a whole-store bundle of the wallet into the destination folder, records
// it, and applies the folder's retention. The online copy reads the wallet in steps, each
// under a background read grant of its queue, so foreground work goes between steps; the
// bundle is renamed into place whole, or not at all (bundle.Create).
func (a *Agent) bundleJob(ctx context.Context, h *TaskHandle, d api.Destination, ref api.WalletRef, reason string) error {
	w, err := a.wallet(ctx, ref.Path)
	if err != nil {
		return err
	}
	removeStaleBundleTemps(d.Path, h)
	h.Logf("bundle to %s started (%s)", d.Name, reason)
	h.SetDetail("copying the wallet file")
	now := a.now()
	out := filepath.Join(d.Path, BundleName(now))
	if _, err := os.Lstat(out); err == nil {
		// A bundle of this folder was taken earlier in the same second (names have one
		// second's precision): wait for the next second rather than fail on the name.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(now.Truncate(time.Second).Add(time.Second).Sub(now)):
		}
		now = a.now()
		out = filepath.Join(d.Path, BundleName(now))
	}
	m, err := bundle.Create(ctx, w.store, out, bundle.CreateOptions{Grants: w.queue.NewSession("", "bundle "+d.ID)})
	if err != nil {
		return err
	}
	rec := api.Backup{Path: out, Destination: d.ID, Rows: map[wallet.TableName]int64{}, CreatedAt: now}
	for _, id := range m.Identities {
		for t, n := range id.Rows {
			rec.Rows[t] += n
		}
	}
	for _, f := range m.Files {
		rec.Size += f.SizeBytes
		rec.SHA256 = f.SHA256 // one data file; its digest names the bundle
	}
	if err := a.state.RecordBackup(ctx, rec); err != nil {
		return err
	}
	h.SetResult([]api.Backup{rec})
	var done syncer.Counters
	for _, n := range rec.Rows {
		done.Rows += n
	}
	done.Bytes = rec.Size
	h.SetCounters(done)
	a.bus.Publish(api.EventBackupWritten, rec)
	h.Logf("wrote %s (%d identities, %d bytes compressed from %d)", filepath.Base(out), len(m.Identities), rec.Size, m.SourceSizeBytes)
	return a.applyRetention(ctx, h, d)
}

// removeStaleBundleTemps deletes the temporary folders of bundles that a crash interrupted
// (".walletsync-bundle-….tmp-…", see bundle.Create): they were never renamed into place.
// Only one bundle job runs per folder at a time, so none of them belongs to a running one.
func removeStaleBundleTemps(dir string, h *TaskHandle) {
	stale, _ := filepath.Glob(filepath.Join(dir, "."+backupNamePrefix+bundlePrefix+"-*.tmp-*"))
	for _, f := range stale {
		if os.RemoveAll(f) == nil {
			h.Logf("removed %s, left by an interrupted bundle", filepath.Base(f))
		}
	}
}

// exportFile writes identity's wallet to path as a BRC-39 file under password, replacing a
// backup file there only when overwrite says so (see exportOptions).
func (a *Agent) exportFile(ctx context.Context, w *walletHandle, identity string, password api.Secret, path string, overwrite bool) (api.Backup, error) {
	settings, err := w.store.Settings(ctx)
	if err != nil {
		return api.Backup{}, err
	}
	v, err := w.store.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true, Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return api.Backup{}, err
	}
	defer v.Close()
	res, err := portable.ExportBRC39(ctx, v, settings, identity, password.Reveal(), brc39.DefaultKDFParams, path, a.exportOptions(overwrite))
	if err != nil {
		return api.Backup{}, fmt.Errorf("export %s: %w", wallet.ShortKey(identity, 12), err)
	}
	return api.Backup{Path: res.Path, IdentityKey: identity, Size: res.Size, SHA256: hex.EncodeToString(res.SHA256[:]),
		Rows: res.Stats.Rows, CreatedAt: a.now().UTC()}, nil
}

// Export starts an export task, after the refusals that need no work: a missing path, an
// empty password, and a path the export may not write (checkExport).
func (a *Agent) Export(req api.ExportRequest) (api.Task, error) {
	if err := a.checkExport(req); err != nil {
		return api.Task{}, err
	}
	if err := brc39.DefaultKDFParams.CheckExport(); err != nil {
		return api.Task{}, err
	}
	ref, err := findWalletRef(a.config(), req.Wallet)
	if err != nil {
		return api.Task{}, err
	}
	return a.tasks.Start(api.KindExport, req.Path, func(ctx context.Context, h *TaskHandle) error {
		w, err := a.wallet(ctx, ref.Path)
		if err != nil {
			return err
		}
		id := req.IdentityKey
		if id == "" {
			ids, err := w.identities(ctx, ref)
			if err != nil {
				return err
			}
			id = ids[0]
		}
		h.SetDetail("deriving the key and writing the file")
		file, err := a.exportFile(ctx, w, id, req.Password, req.Path, req.Overwrite)
		if err != nil {
			return err
		}
		h.SetResult(file)
		h.Logf("wrote %s (%d bytes, sha256 %s)", file.Path, file.Size, file.SHA256)
		return nil
	})
}

// findWalletRef returns the configured wallet at path, or the only one when path is empty.
func findWalletRef(c api.Config, path string) (api.WalletRef, error) {
	for _, w := range c.Wallets {
		if w.Path == path || (path == "" && len(c.Wallets) == 1) {
			return w, nil
		}
	}
	return api.WalletRef{}, api.WithHint(fmt.Errorf("wallet %q: %w", path, wallet.ErrNotFound), "add the wallet first")
}

// applyRetention deletes the backup files of d's folder that the retention policy no longer
// keeps (never the newest verified one), and forgets their records.
func (a *Agent) applyRetention(ctx context.Context, h *TaskHandle, d api.Destination) error {
	decisions, err := a.retentionPlan(ctx, d)
	if err != nil {
		return err
	}
	if err := applyRetention(ctx, d.Path, decisions); err != nil {
		return err
	}
	for _, dec := range decisions {
		if !dec.Keep {
			h.Logf("retention deleted %s", dec.File.Name)
			if err := a.state.ForgetBackup(ctx, filepath.Join(d.Path, dec.File.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// notWrittenHere is the reason retention keeps a backup that d did not write.
const notWrittenHere = "not written by this destination"

// retentionPlan is what retention would do with d's folder now, in name order. It sees only
// the entries of d's kind (backup files for a backup folder, bundle folders for a bundle
// folder), and plans only those d wrote (those the state records for d there): a backup
// of another destination sharing the folder, one copied in by hand, or one whose record a
// crash lost is listed, kept, and never counted against d's own.
func (a *Agent) retentionPlan(ctx context.Context, d api.Destination) ([]retentionDecision, error) {
	files, err := readBackupDir(d.Path)
	if err != nil {
		return nil, err
	}
	recs, err := a.backupsHere(ctx, d)
	if err != nil {
		return nil, err
	}
	newestVerified := ""
	own := map[string]bool{}
	for _, r := range recs { // newest first
		own[filepath.Base(r.Path)] = true
		if newestVerified == "" && !r.VerifiedAt.IsZero() {
			newestVerified = filepath.Base(r.Path)
		}
	}
	var mine, others []backupFile
	for _, f := range files {
		switch _, _, ok := parseBackup(f); {
		case !ok || f.Bundle != (d.Kind == api.DestinationBundles):
		case own[f.Name]:
			mine = append(mine, f)
		default:
			others = append(others, f)
		}
	}
	decisions := planRetention(mine, a.config().Retention, newestVerified, a.now())
	for _, f := range others {
		decisions = append(decisions, retentionDecision{File: f, Keep: true, Reasons: []string{notWrittenHere}})
	}
	slices.SortStableFunc(decisions, func(x, y retentionDecision) int { return strings.Compare(x.File.Name, y.File.Name) })
	return decisions, nil
}

// removeStaleTemps deletes the private temp files of backups that a crash interrupted
// (".walletsync-….brc39.tmp-…", see portable.ExportBRC39): they were never renamed into
// place, so no backup is lost, and a folder must not keep partial files. Only one backup
// job runs per folder at a time, so none of them belongs to a running export.
func removeStaleTemps(dir string, h *TaskHandle) {
	stale, _ := filepath.Glob(filepath.Join(dir, ".walletsync-*.brc39.tmp-*"))
	for _, f := range stale {
		if os.Remove(f) == nil {
			h.Logf("removed %s, left by an interrupted backup", filepath.Base(f))
		}
	}
}

// freeBackupPath names a new backup of identity in dir. Names carry the second; a second
// backup within the same second takes the next free second rather than replacing the first.
func freeBackupPath(dir, identity string, now time.Time) string {
	for t := now; ; t = t.Add(time.Second) {
		p := filepath.Join(dir, backupFileName(identity, t))
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			return p
		}
	}
}
