package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"walletsync/agent/api"

	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// storageKeySecret names, in the secrets file, the private key that signs for the storage
// server destination id (64 hex digits): the identity's root key, since a toolbox server
// gives out only the data of the identity that authenticates to it.
func storageKeySecret(id string) string { return "storage-key-" + id }

// storageSigner returns who signs for d: its BRC-100 wallet, or the key in the secrets file.
func (a *Agent) storageSigner(d api.Destination) (auth.Signer, error) {
	if d.WalletURL != "" {
		return auth.NewHTTPWallet(d.WalletURL, auth.HTTPWalletOptions{})
	}
	sec, err := a.secrets.Get(storageKeySecret(d.ID))
	if err != nil {
		return nil, api.WithHint(fmt.Errorf("storage server %s: no signing key: %w", d.Name, err),
			fmt.Sprintf("put the identity's key in the secrets (%s), or name the BRC-100 wallet that signs (walletURL)", storageKeySecret(d.ID)))
	}
	key, err := auth.ParseKeyFile([]byte(strings.TrimSpace(sec.Reveal()) + "\n"))
	if err != nil {
		return nil, fmt.Errorf("storage server %s: the key in the secrets: %w", d.Name, err)
	}
	return auth.NewProtoWallet(key), nil
}

// storageServerJob pushes the wallet's identity to the storage server d on the wire
// remote.Dial chooses: walletsync's paged wire where the server offers it (a page session,
// pushPages, as a backup file gets: the wallet read through snapshot views, the checkpoint
// kept on the server, an unchanged wallet in one request), else the toolbox's BRC-40
// chunks (syncer.RunChunks), as the toolbox's WalletStorageManager backs up to a
// StorageClient. The server gives out only the signer's data, so only the signer's
// identity is pushed. On the toolbox wire every access to the wallet takes a background
// grant of its queue (grantedChunkStore): a read grant per chunk read, a write grant for
// what writes to it (a new backup's first push merges the backup's default rows into the
// wallet and makes the wallet's user row the newer one, as the toolbox's setActive does),
// so foreground work goes between chunks.
func (a *Agent) storageServerJob(ctx context.Context, h *TaskHandle, d api.Destination, ref api.WalletRef, reason string) error {
	w, err := a.wallet(ctx, ref.Path)
	if err != nil {
		return err
	}
	signer, err := a.storageSigner(d)
	if err != nil {
		return err
	}
	me, err := signer.IdentityKey(ctx)
	if err != nil {
		return fmt.Errorf("storage server %s: ask the signer for its identity: %w", d.Name, err)
	}
	identity := string(auth.CounterpartyKey(me))
	store := w.chunkStore(ctx, identity, "storage server "+d.ID)
	ids, err := underGrant(ctx, store, scheduler.Read, func(ctx context.Context) ([]string, error) { return w.identities(ctx, ref) })
	if err != nil {
		return err
	}
	if !slices.Contains(ids, identity) {
		return api.WithHint(fmt.Errorf("storage server %s: the signer is %s, which the wallet does not hold: %w", d.Name, wallet.ShortKey(identity, 16), wallet.ErrUnauthorized),
			"sign with the wallet's identity key")
	}
	// One loop decides how long a server that does not answer is tried: the session's
	// (GiveUp), which says so on the task while it waits; the toolbox client's own retries
	// would nest inside it (8 tries of each of its 10) and keep the task silent for minutes.
	server, err := remote.Dial(ctx, d.Path, signer, remote.Auto, remote.Options{ToolboxRetries: -1})
	if err != nil {
		return err
	}
	if server.Fallback != nil {
		h.Logf("storage server %s offers walletsync's wire, but its probe failed: %v", d.Name, server.Fallback)
	}
	h.Logf("push to storage server %s started over the %s wire (%s)", d.Name, server.Wire, reason)
	var res syncer.Result
	unit := "pages"
	if server.Wire == remote.Walletsync {
		res, err = a.pushPages(ctx, h, w, server.Paged, identity, syncer.Counters{})
	} else {
		unit = "chunks"
		budget, berr := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
		if berr != nil {
			return berr
		}
		res, err = syncer.RunChunks(ctx, store, server.Chunks, identity, syncer.ChunkOptions{
			Active: wallet.KeepSourceActive, Budget: budget, GiveUp: cmp.Or(a.opts.ServerGiveUp, remote.GiveUp),
			OnRetry: func(r syncer.Retry) {
				if r.Attempt == 1 {
					h.Logf("%s; trying again for up to %s", remote.CannotReach(d.Path, r.Err, 0), cmp.Or(a.opts.ServerGiveUp, remote.GiveUp))
				}
				h.SetDetail(remote.Waiting(d.Path, r.Attempt, r.Wait))
			},
			Progress: func(p syncer.Progress) error {
				h.SyncProgress(p)
				return nil
			}})
	}
	if ue, ok := errors.AsType[*syncer.UnreachableError](err); ok {
		err = &api.ServerCheckError{URL: d.Path, Problem: api.ServerUnreachable, Err: err,
			Message: capitalizeFirst(remote.CannotReach(d.Path, ue.Err, ue.After)) + ".",
			Hint:    "Check that the storage server is running and that this computer is online; the next scheduled run tries again."}
	}
	result := api.ServerPushResult{SyncResult: api.SyncResult{Sessions: []syncer.Result{res}}, Wire: server.Wire}
	if err == nil {
		// Both sessions return nil only once the server acknowledged the last commit (the
		// page session's, or the final processSyncChunk).
		result.ConfirmedAt = a.now().UTC()
	}
	h.SetResult(result)
	if err != nil {
		return err
	}
	h.Logf("%s: %s push over the %s wire, %d %s, %d rows (%d inserted, %d updated), confirmed by the server",
		wallet.ShortKey(identity, 12), res.Kind, server.Wire, res.Pages, unit, res.Rows, res.Inserts, res.Updates)
	return nil
}

// capitalizeFirst makes a sentence's first letter upper case.
func capitalizeFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
