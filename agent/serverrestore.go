package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"walletsync/agent/api"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// serverStagingDir holds the staging wallets of server previews (private, 0700): the rows
// a server gave out, kept from the preview to the confirm so that the restore merges exactly
// what the person saw counted. A folder of its own, apart from the import staging, whose
// files the imports manage.
func (a *Agent) serverStagingDir() string { return filepath.Join(string(a.opts.Dir), "server-staging") }

// stagingTag names a wallet's staging files: a digest of its path, so that a preview clears
// only its own wallet's earlier previews, and the name stays free of glob characters.
func stagingTag(walletPath string) string {
	sum := sha256.Sum256([]byte(walletPath))
	return hex.EncodeToString(sum[:6])
}

// serverTarget is the task target of previews and restores into a wallet: one at a time, so
// a preview never replaces the staging wallet a restore is reading.
func serverTarget(walletPath string) string { return "server-restore:" + walletPath }

// previewServerRestore starts a KindServerPreview task. The restore is honest by
// construction: the preview pulls the server's rows (RunChunks, the toolbox's own pull)
// into a new private staging wallet and counts them there, and the restore merges that
// staging wallet into the wallet, so nothing the person did not see counted is written,
// and a server that changes meanwhile changes nothing. Starting a preview clears the
// staging wallets of the same wallet's earlier previews: only its newest preview can be
// confirmed. Another wallet's preview stays confirmable.
func (a *Agent) previewServerRestore(req api.ServerRestoreRequest) (api.Task, error) {
	ref, err := findWalletRef(a.config(), req.Wallet)
	if err != nil {
		return api.Task{}, err
	}
	signer, _, err := a.signer(req.URL, req.Signer)
	if err != nil {
		return api.Task{}, err
	}
	return a.tasks.Start(api.KindServerPreview, serverTarget(ref.Path), func(ctx context.Context, h *TaskHandle) error {
		return a.serverPreviewJob(ctx, h, req.URL, signer, ref)
	})
}

func (a *Agent) serverPreviewJob(ctx context.Context, h *TaskHandle, rawURL string, signer auth.Signer, ref api.WalletRef) error {
	h.SetDetail("asking the server")
	chain, ids, err := a.walletFacts(ctx, ref)
	if err != nil && !errors.Is(err, wallet.ErrNotFound) { // an empty wallet holds no identity yet
		return api.AtPath(ref.Path, err)
	}
	check, err := checkServer(ctx, rawURL, signer, chain, nil)
	if err != nil {
		return err
	}
	if len(ids) > 0 && !slices.Contains(ids, check.IdentityKey) {
		return &api.ServerCheckError{URL: rawURL, Problem: api.ServerOtherWallet,
			Err:     fmt.Errorf("the signer is %s, the wallet holds %s: %w", wallet.ShortKey(check.IdentityKey, 16), strings.Join(ids, ", "), wallet.ErrOtherIdentity),
			Message: fmt.Sprintf("That key signs as identity %s, which is not your wallet's: the server would give out that identity's data, not your wallet's.", wallet.ShortKey(check.IdentityKey, 16)),
			Hint:    "Sign with your wallet's identity key, or the BRC-100 wallet that holds it."}
	}
	dir := a.serverStagingDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the staging folder: %w", err)
	}
	prefix := "server-" + stagingTag(ref.Path) + "-"
	old, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	for _, f := range old {
		os.Remove(f)
	}
	name := prefix + h.ID() + ".sqlite"
	path := filepath.Join(dir, name)
	staging, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: check.Chain, StorageName: "walletsync staging of " + rawURL}, localstore.Options{Logger: a.log})
	if err != nil {
		return fmt.Errorf("create the staging wallet: %w", err)
	}
	keep := false
	defer func() {
		staging.Close()
		if !keep {
			removeStore(path)
		}
	}()
	client, err := toolbox.Dial(rawURL, signer, toolbox.ClientOptions{})
	if err != nil {
		return err
	}
	h.SetDetail("reading what the server holds")
	h.Logf("preview of %s from %s started", wallet.ShortKey(check.IdentityKey, 12), rawURL)
	res, err := a.runChunks(ctx, h, client, staging, check.IdentityKey, 0, nil)
	if err != nil {
		return err
	}
	sum, err := staging.Summary(ctx, check.IdentityKey)
	if err != nil {
		return fmt.Errorf("count the staged rows: %w", err)
	}
	p := api.ServerRestorePreview{ServerCheck: check, Wallet: ref.Path, Counts: sum.Counts, Staging: name}
	for _, n := range sum.Counts {
		p.Total += n
	}
	h.SetDetail("comparing with the wallet")
	plan, err := a.planServerRestore(ctx, ref, staging, check.IdentityKey)
	if err != nil {
		return err
	}
	p.Plan, p.Changes, p.ConflictTotal = plan.Plan, plan.Plan.Total(), plan.ConflictTotal
	h.SetResult(p)
	h.Logf("the server holds %d rows of %s (%d chunks read); nothing is written to the wallet until you confirm", p.Total, wallet.ShortKey(check.IdentityKey, 12), res.Pages)
	keep = true
	return nil
}

// planServerRestore says what merging the staged rows of identity into the wallet would do,
// table by table, writing nothing: the plan a backup file's preview shows.
func (a *Agent) planServerRestore(ctx context.Context, ref api.WalletRef, staging *localstore.Store, identity string) (wallet.MergePreview, error) {
	w, err := a.wallet(ctx, ref.Path)
	if err != nil {
		return wallet.MergePreview{}, err
	}
	from, err := staging.Settings(ctx)
	if err != nil {
		return wallet.MergePreview{}, fmt.Errorf("read the staging settings: %w", err)
	}
	v, err := staging.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true, Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return wallet.MergePreview{}, fmt.Errorf("read the staged rows: %w", err)
	}
	defer v.Close()
	plan, err := w.store.PreviewMerge(ctx, v, identity, from)
	if err != nil {
		return wallet.MergePreview{}, fmt.Errorf("compare the staged rows with %s: %w", ref.Path, err)
	}
	return plan, nil
}

// restoreFromServer starts a KindServerRestore task: the staged rows of a succeeded preview
// merged into its wallet.
func (a *Agent) restoreFromServer(req api.ServerRestoreRequest) (api.Task, error) {
	if !req.Confirm {
		return api.Task{}, api.WithHint(fmt.Errorf("restore from a storage server without confirm: %w", wallet.ErrInvalidArgument), "look at the preview first, then confirm")
	}
	pt, err := a.tasks.Get(req.Preview)
	if err != nil {
		return api.Task{}, err
	}
	var p api.ServerRestorePreview
	if pt.Kind != api.KindServerPreview || pt.State != api.TaskSucceeded || json.Unmarshal(pt.Result, &p) != nil || p.Staging == "" {
		return api.Task{}, api.WithHint(fmt.Errorf("task %s is not a finished storage-server preview: %w", req.Preview, wallet.ErrInvalidArgument), "preview the restore first")
	}
	path := filepath.Join(a.serverStagingDir(), p.Staging)
	if _, err := os.Stat(path); err != nil {
		return api.Task{}, api.WithHint(fmt.Errorf("the preview's staged rows: %w", err), "a newer preview replaced them, or the restore finished: preview again")
	}
	return a.tasks.Start(api.KindServerRestore, serverTarget(p.Wallet), func(ctx context.Context, h *TaskHandle) error {
		return a.serverRestoreJob(ctx, h, p, path)
	})
}

func (a *Agent) serverRestoreJob(ctx context.Context, h *TaskHandle, p api.ServerRestorePreview, path string) error {
	w, err := a.wallet(ctx, p.Wallet)
	if err != nil {
		return err
	}
	staging, err := localstore.Open(ctx, path, localstore.Options{Logger: a.log})
	if err != nil {
		return fmt.Errorf("open the staged rows: %w", err)
	}
	defer staging.Close()
	h.SetDetail("writing into the wallet")
	h.Logf("restore of %s from %s into %s started", wallet.ShortKey(p.IdentityKey, 12), p.URL, p.Wallet)
	// Every merge takes the wallet's background write slot for one short transaction, so
	// the wallet app's own work goes first.
	res, err := a.runChunks(ctx, h, staging, w.store, p.IdentityKey, p.Total, w.queue.NewSession(p.IdentityKey, "server-restore"))
	h.SetResult(api.ServerRestoreResult{SyncResult: api.SyncResult{Sessions: []syncer.Result{res}}, URL: p.URL, Wallet: p.Wallet, IdentityKey: p.IdentityKey})
	if err != nil {
		return err // the staging wallet stays: confirming the same preview again resumes
	}
	h.Logf("restored: %d rows (%d inserted, %d updated) into %s", res.Rows, res.Inserts, res.Updates, p.Wallet)
	staging.Close()
	removeStore(path)
	return nil
}

// runChunks pulls identity's rows from one store into a local wallet with BRC-40 chunks,
// reporting progress on h; grants, when set, is the wallet's access queue session.
func (a *Agent) runChunks(ctx context.Context, h *TaskHandle, from brc40.ChunkStore, to *localstore.Store, identity string, total int64, grants *scheduler.Session) (syncer.Result, error) {
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return syncer.Result{}, err
	}
	if total > 0 {
		h.SetTotal(total)
	}
	// Settle -1: the local wallet's merge dies with this process, no earlier chunk can land.
	return syncer.RunChunks(ctx, from, to, identity, syncer.ChunkOptions{
		Active: wallet.KeepDestinationActive, Budget: budget, Grants: grants, Settle: -1, Total: total,
		Progress: func(p syncer.Progress) error {
			h.SyncProgress(p)
			return nil
		}})
}

// removeStore removes a closed staging wallet: its SQLite file and the files beside it that
// share its name (-wal, -shm, the writer lock).
func removeStore(path string) {
	files, _ := filepath.Glob(path + "*") // staging names are hex: no glob characters
	for _, f := range files {
		os.Remove(f)
	}
}
