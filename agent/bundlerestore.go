package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/wallet"
)

// walletInUseError names what keeps a wallet from being replaced, or replaces it.
type walletInUseError struct {
	Wallet string
	// TaskID, Kind and State are the task in the way: a job of the wallet that runs or is
	// queued (which refuses a restore), or the bundle restore itself (which refuses the job).
	TaskID string
	Kind   api.TaskKind
	State  api.TaskState
}

func (e *walletInUseError) Error() string {
	if e.Kind == api.KindBundleRestore {
		return fmt.Sprintf("%s is being replaced by a restore from a bundle (task %s)", e.Wallet, e.TaskID)
	}
	return fmt.Sprintf("%s is in use: a %s task (%s) is %s", e.Wallet, e.Kind, e.TaskID, e.State)
}

// Unwrap makes errors.Is(err, ErrWalletInUse) true.
func (e *walletInUseError) Unwrap() error { return api.ErrWalletInUse }

// bundleDir resolves the bundle folder a request names.
func (a *Agent) bundleDir(req api.BundleRequest) (string, error) {
	if (req.Destination == "") == (req.Path == "") {
		return "", fmt.Errorf("name a bundle folder destination and one of its bundles, or a bundle's folder: %w", wallet.ErrInvalidArgument)
	}
	if req.Path != "" {
		return filepath.Clean(req.Path), nil
	}
	d, err := findDestination(a.config(), req.Destination)
	if err != nil {
		return "", err
	}
	if d.Kind != api.DestinationBundles {
		return "", fmt.Errorf("destination %s is a %s, not a bundle folder: %w", d.ID, d.Kind, wallet.ErrInvalidArgument)
	}
	if _, _, ok := parseBackup(backupFile{Name: req.Name, Bundle: true}); !ok {
		return "", fmt.Errorf("%q is not a bundle name: %w", req.Name, wallet.ErrInvalidArgument)
	}
	return filepath.Join(d.Path, req.Name), nil
}

// PreviewBundle starts a verify task of the bundle req names: its result is the bundle's
// manifest (bundle.Verify's, which reads nothing of any wallet), and it fails with the
// bundle's typed error when the bundle is damaged or lies. A bundle of a destination has its
// outcome recorded as a verify from the Backups page does.
func (a *Agent) PreviewBundle(req api.BundleRequest) (api.Task, error) {
	if req.Destination != "" {
		if _, err := a.bundleDir(req); err != nil {
			return api.Task{}, err
		}
		return a.VerifyBackup(req.Destination, req.Name)
	}
	dir, err := a.bundleDir(req)
	if err != nil {
		return api.Task{}, err
	}
	return a.tasks.Start(api.KindVerify, dir, func(ctx context.Context, h *TaskHandle) error {
		m, err := bundle.Verify(ctx, dir)
		h.SetResult(m)
		return api.AtPath(dir, err)
	})
}

// walletCensus counts what the configured wallet at ref.Path holds now (the only one when
// the path is empty): every identity in the file and the rows of every table.
func (a *Agent) walletCensus(ctx context.Context, ref api.WalletRef) (api.WalletCensus, error) {
	r, err := findWalletRef(a.config(), ref.Path)
	if err != nil {
		return api.WalletCensus{}, err
	}
	c := api.WalletCensus{Wallet: r.Path, Identities: []string{}}
	err = a.foreground(ctx, r.Path, func(w *walletHandle) error {
		census, err := w.store.Census(ctx)
		if err != nil {
			return err
		}
		c.Tables = census.Tables
		ids, err := w.identities(ctx, api.WalletRef{Path: r.Path})
		if err != nil && !errors.Is(err, wallet.ErrNotFound) { // an empty wallet holds no identity
			return err
		}
		c.Identities = append(c.Identities, ids...)
		return nil
	})
	if err != nil {
		return api.WalletCensus{}, fmt.Errorf("count the rows of %s: %w", r.Path, err)
	}
	return c, nil
}

// RestoreBundle starts the restore of the bundle req names into a configured wallet, in
// place: the agent lets go of the wallet, bundle.Restore swaps the bundle's copy in (staged,
// checked, with a recovery marker: see localstore.Replace), and the agent opens the wallet
// again, whatever the outcome. It is refused with a *walletInUseError while a task of the
// wallet runs or waits, and none may start until the restore ends. The task fails, the
// wallet unchanged, with ErrWalletOpenElsewhere while another process has the wallet open,
// and with the bundle's typed error for a damaged bundle or one of a newer schema.
func (a *Agent) RestoreBundle(req api.BundleRequest) (api.Task, error) {
	if !req.Confirm {
		return api.Task{}, api.WithHint(fmt.Errorf("restore a bundle without confirm: %w", wallet.ErrInvalidArgument), "look at the bundle first, then confirm")
	}
	dir, err := a.bundleDir(req)
	if err != nil {
		return api.Task{}, err
	}
	ref, err := findWalletRef(a.config(), req.Wallet)
	if err != nil {
		return api.Task{}, err
	}
	if err := a.claimForRestore(ref.Path); err != nil {
		return api.Task{}, err
	}
	t, err := a.tasks.Start(api.KindBundleRestore, ref.Path, func(ctx context.Context, h *TaskHandle) error {
		return a.restoreBundleJob(ctx, h, dir, ref.Path)
	})
	a.mu.Lock()
	if err != nil {
		delete(a.restoring, ref.Path)
	} else if a.restoring[ref.Path] == claimed { // the job may have ended already
		a.restoring[ref.Path] = t.ID
	}
	a.mu.Unlock()
	return t, err
}

// claimed marks a wallet claimed for a restore whose task is not started yet.
const claimed = "starting"

// claimForRestore marks the wallet at path as being restored, unless a task that may use it
// runs or waits (a task the agent cannot tie to a wallet counts). From then on a.wallet
// refuses it, so no job starts on it until releaseRestore. The check and the mark are one
// step under a.mu, which a.wallet takes too: a task that is not yet listed cannot have the
// wallet yet, and will be refused it.
func (a *Agent) claimForRestore(path string) error {
	cfg := a.config()
	a.mu.Lock()
	defer a.mu.Unlock()
	if id, ok := a.restoring[path]; ok {
		return &walletInUseError{Wallet: path, TaskID: id, Kind: api.KindBundleRestore, State: api.TaskRunning}
	}
	for _, t := range a.tasks.List() {
		if !t.State.Terminal() && taskMayUse(cfg, t, path) {
			return api.WithHint(&walletInUseError{Wallet: path, TaskID: t.ID, Kind: t.Kind, State: t.State},
				"Wait for that task to finish, or cancel it on the Activity page, then restore again. Pause the schedules first if they keep starting tasks.")
		}
	}
	if a.restoring == nil {
		a.restoring = map[string]string{}
	}
	a.restoring[path] = claimed
	return nil
}

// taskMayUse reports whether task t may use the wallet at path: a destination's job uses its
// wallet, an abandon or a restore the one it names, a verify only a backup; any other task
// (an import, an export, a drill) may use any wallet.
func taskMayUse(c api.Config, t api.Task, path string) bool {
	switch t.Kind {
	case api.KindVerify:
		return false
	case api.KindImportAbandon, api.KindBundleRestore:
		return t.Target == path
	case api.KindSync, api.KindBackup, api.KindBundle:
		d, err := findDestination(c, t.Target)
		if err != nil {
			return true
		}
		ref, err := walletOf(c, d)
		return err != nil || ref.Path == path
	}
	return true
}

// restoreBundleJob is a bundle restore's task: let go of the wallet, restore, open it again.
func (a *Agent) restoreBundleJob(ctx context.Context, h *TaskHandle, dir, path string) error {
	h.SetDetail("closing the wallet")
	a.mu.Lock()
	w := a.wallets[path]
	delete(a.wallets, path)
	a.mu.Unlock()
	if w != nil {
		// Close waits for the reads that started before the wallet was claimed.
		if err := w.store.Close(); err != nil {
			a.log.Warn("bundle restore: close the wallet", "wallet", path, "err", err)
		}
	}
	h.SetDetail("restoring")
	h.Logf("restoring %s from the bundle %s", path, dir)
	m, err := bundle.Restore(ctx, dir, path, bundle.RestoreOptions{})
	if errors.Is(err, wallet.ErrWriterLocked) || errors.Is(err, wallet.ErrBusy) {
		err = fmt.Errorf("%w: %w", api.ErrWalletOpenElsewhere, err)
	}
	a.mu.Lock()
	delete(a.restoring, path)
	a.mu.Unlock()

	// Whatever happened, the agent goes on protecting the wallet: the new one, or the old.
	h.SetDetail("opening the wallet")
	res := api.BundleRestored{Bundle: dir, Wallet: path, Manifest: m}
	reopened, oerr := a.wallet(ctx, path)
	if oerr == nil {
		c, cerr := reopened.store.Census(ctx)
		res.Tables, oerr = c.Tables, cerr
	}
	if err != nil {
		return api.AtPath(path, err)
	}
	h.SetResult(res)
	if oerr != nil {
		return api.AtPath(path, fmt.Errorf("open the restored wallet: %w", oerr))
	}
	h.Logf("restored %s from %s: %d identities, made %s", path, filepath.Base(dir), len(m.Identities), m.CreatedAt.Format("2006-01-02 15:04:05Z"))
	return nil
}

// recoverRestores finishes or rolls back, for each configured wallet, a bundle restore that
// a crash interrupted (see localstore.RecoverReplace), before anything else opens it: the
// wallet app must not meet a swap half done. A wallet it cannot recover is logged, and its
// first use says why.
func (a *Agent) recoverRestores(ctx context.Context) {
	for _, ref := range a.config().Wallets {
		done, err := localstore.RecoverReplace(ctx, ref.Path, 0)
		switch {
		case err != nil:
			a.log.Warn("recover an interrupted restore", "wallet", ref.Path, "err", err)
		case done != localstore.RecoveredNothing:
			a.log.Info("interrupted restore recovered", "wallet", ref.Path, "outcome", done)
		}
	}
}
