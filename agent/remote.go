package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"walletsync/agent/api"

	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
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

// storageServerJob pushes the wallet's identity to the storage server d with BRC-40 chunks
// (syncer.RunChunks), as the toolbox's WalletStorageManager backs up to a StorageClient.
// The server gives out only the signer's data, so only the signer's identity is pushed.
// Every access to the wallet takes a background grant of its queue (grantedChunkStore): a
// read grant per chunk read, a write grant for what writes to it (a new backup's first
// push merges the backup's default rows into the wallet and makes the wallet's user row the
// newer one, as the toolbox's setActive does), so foreground work goes between chunks.
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
	client, err := toolbox.Dial(d.Path, signer, toolbox.ClientOptions{})
	if err != nil {
		return err
	}
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return err
	}
	h.Logf("push to storage server %s started (%s)", d.Name, reason)
	res, err := syncer.RunChunks(ctx, store, client, identity, syncer.ChunkOptions{
		Active: wallet.KeepSourceActive, Budget: budget,
		Progress: func(p syncer.Progress) error {
			h.SyncProgress(p)
			return nil
		}})
	result := api.ServerPushResult{SyncResult: api.SyncResult{Sessions: []syncer.Result{res}}}
	if err == nil {
		result.ConfirmedAt = a.now().UTC() // RunChunks returns nil once the final chunk is acknowledged
	}
	h.SetResult(result)
	if err != nil {
		return err
	}
	h.Logf("%s: %s push, %d chunks, %d rows (%d inserted, %d updated), confirmed by the server",
		wallet.ShortKey(identity, 12), res.Kind, res.Pages, res.Rows, res.Inserts, res.Updates)
	return nil
}
