package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/wallet"
)

// drillNothingYet is the Skipped reason of a drill that found no backup file to check.
const drillNothingYet = "no backup file to check yet"

// RunDrill starts a restore drill (restic's check done right): the newest backup file of
// every backup folder is decrypted, validated and restored into a scratch wallet, and its
// row counts are compared with what the export recorded. A failure is loud: the task fails,
// the file is marked unverified, a drill.finished event says which and why.
func (a *Agent) RunDrill(reason string) (api.Task, error) {
	return a.tasks.Start(api.KindDrill, drillID, func(ctx context.Context, h *TaskHandle) error { return a.drillJob(ctx, h, reason) })
}

// drillAfterFirstBackup starts the restore drill once a backup file or bundle was written,
// when no drill has checked one yet: a new agent's first drill finds nothing to check and
// says it runs again once a backup exists, and this is that run, instead of the drill's
// next turn (weeks later). It does nothing while a drill is queued or running, or once one
// has checked a file.
func (a *Agent) drillAfterFirstBackup() {
	for _, t := range a.tasks.List() {
		if t.Kind != api.KindDrill {
			continue
		}
		if !t.State.Terminal() || (t.State == api.TaskSucceeded && t.Skipped() == "") {
			return
		}
	}
	if _, err := a.RunDrill("first backup"); err != nil {
		a.log.Warn("restore drill after the first backup not started", "err", err)
	}
}

func (a *Agent) drillJob(ctx context.Context, h *TaskHandle, reason string) error {
	h.Logf("restore drill started (%s)", reason)
	// Which files first: an agent with nothing backed up yet has nothing to drill, which is
	// not a failure, and needs no password.
	type target struct {
		dest   api.Destination
		newest api.BackupRecord
	}
	var targets []target
	for _, d := range a.config().Destinations {
		if d.Kind != api.DestinationFolder && d.Kind != api.DestinationBundles {
			continue
		}
		recs, err := a.backupsHere(ctx, d)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			h.Logf("%s: no backup to drill yet", d.Name)
			continue
		}
		targets = append(targets, target{dest: d, newest: recs[0]})
	}
	if len(targets) == 0 {
		proven, err := a.passwordProven(ctx)
		if err != nil {
			return err
		}
		h.SetResult(api.DrillResult{Files: []api.DrillFile{}, Skipped: drillNothingYet, PasswordProven: proven})
		h.Logf("skipped: %s", drillNothingYet)
		return nil
	}
	// Bundles need no password; BRC-39 files do.
	var pw api.Secret
	for _, t := range targets {
		if t.dest.Kind == api.DestinationFolder && pw.IsZero() {
			var err error
			if pw, err = a.secrets.Get(BackupPasswordKey); err != nil {
				return api.WithHint(fmt.Errorf("restore drill: no unattended backup password: %w", err), "set the backup password in Settings")
			}
		}
	}
	proven, err := a.passwordProven(ctx)
	if err != nil {
		return err
	}
	res := api.DrillResult{PasswordProven: proven}
	if res.PasswordProven.IsZero() {
		h.Logf("the backup password has not been proven by hand yet: test it in Settings (test my password)")
	} else {
		h.Logf("the backup password was last proven by hand %s", res.PasswordProven.Local().Format("2006-01-02 15:04"))
	}
	var failed []error
	for _, t := range targets {
		d, newest := t.dest, t.newest
		h.SetDetail("restoring " + filepath.Base(newest.Path))
		var err error
		if d.Kind == api.DestinationBundles {
			err = drillBundle(ctx, newest)
		} else {
			err = a.drillFile(ctx, newest, pw)
		}
		if ctx.Err() != nil {
			return ctx.Err() // a cancelled drill says nothing about the file
		}
		f := api.DrillFile{Destination: d.ID, Path: newest.Path, OK: err == nil}
		if err != nil {
			f.Error = err.Error()
			failed = append(failed, fmt.Errorf("%s: %w", filepath.Base(newest.Path), err))
			h.Logf("%s: DRILL FAILED for %s: %v", d.Name, filepath.Base(newest.Path), err)
		} else {
			h.Logf("%s: %s restores, counts match the export", d.Name, filepath.Base(newest.Path))
		}
		if err := a.state.MarkVerified(ctx, newest.Path, a.now(), err); err != nil {
			return err
		}
		res.Files = append(res.Files, f)
		h.SetResult(res)
		a.bus.Publish(api.EventDrillFinished, f)
	}
	if len(failed) > 0 {
		return api.WithHint(fmt.Errorf("restore drill: %w", errors.Join(failed...)),
			"a backup that does not restore is no backup: run a backup now and check the backup folder's disk")
	}
	return nil
}

// drillFile restores one backup into a scratch wallet and compares its rows per table with
// the counts recorded when the file was written.
func (a *Agent) drillFile(ctx context.Context, rec api.BackupRecord, pw api.Secret) error {
	// One fixed scratch folder, emptied before and after: a drill a crash interrupted leaves
	// a restored wallet there, which the next drill clears.
	scratch := filepath.Join(string(a.opts.Dir), "drill")
	os.RemoveAll(scratch)
	defer os.RemoveAll(scratch)
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return err
	}
	res, err := portable.Import(ctx, rec.Path, pw.Reveal(), portable.Target{Path: filepath.Join(scratch, "restored.sqlite")},
		a.importOptions(filepath.Join(scratch, "staging"), wallet.ImportRestore), nil)
	if err != nil {
		return err
	}
	for table, want := range rec.Rows {
		if got := res.Tables[table].Inserts; got != want {
			return fmt.Errorf("%s: %d rows restored, the export wrote %d: %w", table, got, want, wallet.ErrCorrupt)
		}
	}
	return nil
}

// drillBundle verifies one bundle (digests, decompression, SQLite's integrity and foreign-key
// checks, counts against its manifest; bundle.Verify never touches the live wallet) and
// compares its rows per table with the counts recorded when it was written.
func drillBundle(ctx context.Context, rec api.BackupRecord) error {
	m, err := bundle.Verify(ctx, rec.Path)
	if err != nil {
		return err
	}
	got := map[wallet.TableName]int64{}
	for _, id := range m.Identities {
		for t, n := range id.Rows {
			got[t] += n
		}
	}
	for table, want := range rec.Rows {
		if got[table] != want {
			return fmt.Errorf("%s: the bundle holds %d rows, %d were recorded when it was written: %w", table, got[table], want, wallet.ErrBundleInvalid)
		}
	}
	return nil
}

// importOptions are the agent's options for portable's import path: its private staging
// folder, and localstore's files.
func (a *Agent) importOptions(staging string, mode wallet.ImportMode) portable.ImportOptions {
	return portable.ImportOptions{StagingDir: staging, Mode: mode, KDFGate: a.deriveGate, Open: portable.Opener(func(ctx context.Context, path string, create wallet.Chain) (*localstore.Store, error) {
		if create == "" {
			return localstore.Open(ctx, path, localstore.Options{Logger: a.log})
		}
		return localstore.Create(ctx, path, localstore.CreateOptions{Chain: create, StorageName: "walletsync"}, localstore.Options{Logger: a.log})
	})}
}
