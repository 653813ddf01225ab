package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// isURL reports whether a --from or --to names a storage server rather than a wallet file.
func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// remoteSync is `walletsync sync` with a storage server on one side: a push (--to URL) or a
// pull into a new or existing wallet (--from URL).
type remoteSync struct {
	from, to           string
	identity           string
	keyFile, walletURL string
	maxItems, maxBytes int64 // 0: the chunk defaults
	asJSON             bool
	wire               remote.Wire
	allowEmpty         bool          // keep a pull into a new file that brought no transactions or outputs
	giveUp             time.Duration // how long a server that does not answer is tried
}

// remoteStats is what the result adds about the wire.
type remoteStats struct {
	syncer.Result
	// Wire is the wire the sync spoke: "toolbox" (JSON-RPC) or "walletsync" (paged).
	Wire   remote.Wire   `json:"wire"`
	Server toolbox.Stats `json:"server"`
}

// signer returns who signs for the server: the key file, or the person's BRC-100 wallet.
func (r remoteSync) signer() (auth.Signer, error) {
	switch {
	case r.keyFile != "" && r.walletURL != "":
		return nil, fmt.Errorf("%w: give --key-file or --wallet-url, not both", command.ErrUsage)
	case r.keyFile != "":
		key, err := auth.LoadKeyFile(r.keyFile)
		if err != nil {
			return nil, err
		}
		return auth.NewProtoWallet(key), nil
	case r.walletURL != "":
		return auth.NewHTTPWallet(r.walletURL, auth.HTTPWalletOptions{})
	}
	return nil, fmt.Errorf("%w: a storage server needs a signer: --key-file F (the wallet's identity key) or --wallet-url URL (its BRC-100 wallet)", command.ErrUsage)
}

func (r remoteSync) run(ctx context.Context, out io.Writer) error {
	if isURL(r.from) && isURL(r.to) {
		return fmt.Errorf("%w: one side of a sync must be a wallet file", command.ErrUsage)
	}
	budget, err := scheduler.NewBudget(scheduler.BudgetOptions{Target: syncer.DefaultChunkTarget})
	if err != nil {
		return err
	}
	serverURL := r.to
	if isURL(r.from) {
		serverURL = r.from
	}
	bar := command.NewProgressLine(out)
	opts := syncer.ChunkOptions{MaxItems: r.maxItems, MaxRoughSize: r.maxBytes, Active: wallet.KeepSourceActive, Budget: budget,
		GiveUp: cmp.Or(r.giveUp, remote.GiveUp),
		OnRetry: func(rt syncer.Retry) {
			if !r.asJSON {
				bar.Note(remote.Waiting(serverURL, rt.Attempt, rt.Wait))
			}
		}}
	if isURL(r.from) {
		opts.Active = wallet.KeepDestinationActive
	}
	// Limits out of range are refused before any file or server is touched.
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	signer, err := r.signer()
	if err != nil {
		return err
	}
	me, err := signer.IdentityKey(ctx)
	if err != nil {
		return fmt.Errorf("ask the signer for its identity: %w", err)
	}
	signerKey := string(auth.CounterpartyKey(me))
	// The session's loop alone retries a server that does not answer (opts.GiveUp), saying so
	// on the progress line; the client's own retries would nest inside it, silently.
	server, err := remote.Dial(ctx, serverURL, signer, r.wire, remote.Options{ToolboxRetries: -1})
	if errors.Is(err, wallet.ErrInvalidArgument) {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	if server.Fallback != nil {
		fmt.Fprintf(os.Stderr, "%s offers walletsync's wire but its probe failed (%v): using the toolbox wire\n", serverURL, server.Fallback)
	}
	if server.Wire == remote.Walletsync {
		fb, err := r.paged(ctx, out, server, signerKey, opts.Active)
		if fb == nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: walletsync's wire stayed busy beyond its patience (%v): using the toolbox wire\n", serverURL, fb.Fallback)
		server = *fb
	}
	client := server.Chunks
	var res syncer.Result
	if opts.Active == wallet.KeepSourceActive {
		res, err = r.push(ctx, out, bar, client, signerKey, opts)
	} else {
		res, err = r.pull(ctx, out, bar, client, signerKey, opts)
	}
	if errors.Is(err, wallet.ErrUnauthorized) {
		err = fmt.Errorf("%w\nthe server accepts only the wallet's own identity: sign with the wallet's identity key (--key-file) or its BRC-100 wallet (--wallet-url)", err)
	}
	if ue, ok := errors.AsType[*syncer.UnreachableError](err); ok {
		return api.WithHint(said(wallet.ErrUnavailable, "%s", remote.CannotReach(serverURL, ue.Err, ue.After)),
			"check the URL, that the server is running, and that this computer is online; a rerun continues where the last acknowledged chunk left off")
	}
	if _, ok := errors.AsType[*saidError](err); ok {
		return err // said in full before the session began: there is nothing to summarize
	}
	return r.report(out, remoteStats{Result: res, Wire: remote.Toolbox, Server: client.Stats()}, err)
}

// push sends the wallet --from to the server.
func (r remoteSync) push(ctx context.Context, out io.Writer, bar *command.ProgressLine, client *toolbox.Client, signerKey string, opts syncer.ChunkOptions) (syncer.Result, error) {
	src, err := openSource(ctx, r.from)
	if err != nil {
		return syncer.Result{}, err
	}
	defer src.Close()
	identity := r.identity
	if identity == "" {
		if identity, err = onlyIdentity(ctx, src); err != nil {
			return syncer.Result{}, err
		}
	}
	sum, err := src.Summary(ctx, identity)
	if errors.Is(err, wallet.ErrNotFound) {
		return syncer.Result{}, fmt.Errorf("%w: %s holds no user %s", command.ErrUsage, r.from, identity)
	}
	if err != nil {
		return syncer.Result{}, err
	}
	if identity != signerKey {
		// The server would refuse it too (WERR_UNAUTHORIZED), after making a user for the
		// signer's identity; refusing here leaves nothing behind anywhere.
		return syncer.Result{State: syncer.StateFailed}, fmt.Errorf("push %s: the signer is %s, not the wallet's identity %s: %w",
			r.from, wallet.ShortKey(signerKey, 16), wallet.ShortKey(identity, 16), wallet.ErrUnauthorized)
	}
	for _, t := range wallet.Entities {
		opts.Total += sum.Counts[t.Name]
	}
	opts.Progress = progressPrinter(bar, json.NewEncoder(out), r.asJSON, "chunks", opts.Total)
	return syncer.RunChunks(ctx, src, client, identity, opts)
}

// pull brings the server's rows of the signer's identity into the wallet --to, creating it
// when missing; nothing is created before the server has accepted the identity. A pull
// into a new file says which identity it restored and how many rows, and one that brought
// no transactions and no outputs is refused and its file removed (checkNewPull).
func (r remoteSync) pull(ctx context.Context, out io.Writer, bar *command.ProgressLine, client *toolbox.Client, signerKey string, opts syncer.ChunkOptions) (res syncer.Result, err error) {
	identity := r.identity
	if identity == "" {
		identity = signerKey
	}
	settings, err := client.MakeAvailable(ctx)
	if err != nil {
		return syncer.Result{State: syncer.StateFailed}, r.pullErr(err)
	}
	if _, err := client.FindOrInsertUser(ctx, identity); err != nil {
		return syncer.Result{State: syncer.StateFailed}, r.pullErr(err)
	}
	_, statErr := os.Stat(r.to)
	dst, err := localstore.OpenOrCreate(ctx, r.to, localstore.CreateOptions{Chain: settings.Chain}, localstore.Options{})
	if err != nil {
		return syncer.Result{}, err
	}
	defer func() {
		err = errors.Join(err, dst.Close())
		if errors.Is(err, ErrEmptyRestore) {
			err = errors.Join(err, removeNewWallet(r.to))
		}
	}()
	if statErr != nil {
		fmt.Fprintf(os.Stderr, "created %s on %s\n", r.to, settings.Chain)
	}
	// The local wallet's merge dies with this process: no earlier chunk can still land.
	opts.Settle = -1
	opts.Progress = progressPrinter(bar, json.NewEncoder(out), r.asJSON, "chunks", 0)
	res, err = syncer.RunChunks(ctx, client, dst, identity, opts)
	if err == nil && statErr != nil {
		err = r.checkNewPull(ctx, out, dst, identity, signerKey)
	}
	return res, err
}

// ErrEmptyRestore is what a pull into a new file returns when the server held no
// transactions and no outputs of the identity, and it was not asked to keep an empty
// wallet (--allow-empty): the new file is removed.
var ErrEmptyRestore = errors.New("nothing to restore")

// checkNewPull ends a pull into the file --to that did not exist before it: it says (in
// text mode) which identity it restored (and whether that is the signer's) and how
// many rows; a pull that brought no transactions and no outputs is refused with
// ErrEmptyRestore, unless r.allowEmpty: the caller then closes dst and removes the file
// (removeNewWallet).
func (r remoteSync) checkNewPull(ctx context.Context, out io.Writer, dst *localstore.Store, identity, signerKey string) error {
	sum, err := dst.Summary(ctx, identity)
	if err != nil && !errors.Is(err, wallet.ErrNotFound) {
		return err
	}
	var rows int64
	for _, n := range sum.Counts {
		rows += n
	}
	txs, outs := sum.Counts[wallet.TableTransactions], sum.Counts[wallet.TableOutputs]
	whose := "the signer's identity"
	if identity != signerKey {
		whose = "signed by " + wallet.ShortKey(signerKey, 16)
	}
	if txs+outs == 0 && !r.allowEmpty {
		return errors.Join(err, fmt.Errorf("pull from %s: the server holds no transactions and no outputs of identity %s (%s); %s was not kept. "+
			"Is the key the wallet's own identity key? To keep an empty wallet of that identity, ask with --allow-empty: %w",
			r.from, identity, whose, r.to, ErrEmptyRestore))
	}
	if !r.asJSON { // the JSON result carries the rows
		fmt.Fprintf(out, "restored identity %s (%s) into %s: %d rows, %d transactions, %d outputs\n", identity, whose, r.to, rows, txs, outs)
	}
	return nil
}

// removeNewWallet removes the wallet file path that a refused pull created, with its
// journal files; the store must be closed.
func removeNewWallet(path string) error {
	var err error
	for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal", safefile.WriterLockPath(path)} {
		if rerr := os.Remove(f); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// pullErr is a failure of the requests a pull makes before its session: a server that does
// not answer is said in words (nothing was created yet, so there is nothing to wait for).
func (r remoteSync) pullErr(err error) error {
	if errors.Is(err, wallet.ErrUnavailable) {
		return api.WithHint(said(wallet.ErrUnavailable, "%s; nothing was written", remote.CannotReach(r.from, err, 0)),
			"check the URL, that the server is running, and that this computer is online")
	}
	return fmt.Errorf("pull from %s: %w", r.from, err)
}

// paged pushes or pulls through walletsync's paged wire: the page session of a file sync,
// with the server as the other store (its checkpoint and views kept on the server). A pull
// that the server refused as busy beyond the wire's patience before any page, on a wire
// Auto chose, is not reported: paged returns the toolbox wire's Provider to run it on
// instead (remote.Provider.FallBack).
func (r remoteSync) paged(ctx context.Context, out io.Writer, server remote.Provider, signerKey string, active wallet.ActivePolicy) (*remote.Provider, error) {
	p := server.Paged
	// A push keeps an exact copy on the server (syncer.Options.Mirror); a pull merges into a
	// live wallet by BRC-40's rules.
	opts := syncer.Options{Active: active, Mirror: active == wallet.KeepSourceActive, MaxRows: int(r.maxItems), MaxBytes: r.maxBytes}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	opts.Progress = progressPrinter(command.NewProgressLine(out), json.NewEncoder(out), r.asJSON, "pages", 0)
	identity := r.identity
	var res syncer.Result
	var err error
	if active == wallet.KeepSourceActive {
		src, oerr := openSource(ctx, r.from)
		if oerr != nil {
			return nil, oerr
		}
		defer src.Close()
		if identity == "" {
			if identity, err = onlyIdentity(ctx, src); err != nil {
				return nil, err
			}
		}
		if identity != signerKey {
			return nil, fmt.Errorf("push %s: the signer is %s, not the wallet's identity %s: %w",
				r.from, wallet.ShortKey(signerKey, 16), wallet.ShortKey(identity, 16), wallet.ErrUnauthorized)
		}
		res, err = syncer.Run(ctx, src, p, identity, opts)
	} else {
		if identity == "" {
			identity = signerKey
		}
		settings, _, derr := p.Describe(ctx)
		if derr != nil {
			return nil, fmt.Errorf("pull from %s: %w", r.from, derr)
		}
		_, statErr := os.Stat(r.to)
		dst, oerr := localstore.OpenOrCreate(ctx, r.to, localstore.CreateOptions{Chain: settings.Chain}, localstore.Options{})
		if oerr != nil {
			return nil, oerr
		}
		res, err = syncer.Run(ctx, p, dst, identity, opts)
		switch {
		case statErr == nil:
		case err == nil:
			err = r.checkNewPull(ctx, out, dst, identity, signerKey)
		case errors.Is(err, wallet.ErrNotFound):
			// The paged wire never makes a user: the server has none of that identity.
			err = fmt.Errorf("pull from %s: the server holds no wallet of identity %s (the identity of the key that signed); %s was not kept. Is the key the wallet's own identity key? %w",
				r.from, identity, r.to, errors.Join(ErrEmptyRestore, err))
		}
		err = errors.Join(err, dst.Close())
		if errors.Is(err, ErrEmptyRestore) {
			err = errors.Join(err, removeNewWallet(r.to))
		}
	}
	if fb, ok := server.FallBack(err); ok && active == wallet.KeepDestinationActive && res.Pages == 0 {
		return &fb, nil
	}
	return nil, r.report(out, remoteStats{Result: res, Wire: remote.Walletsync}, err)
}

// report prints the result: the JSON object, or a summary line.
func (r remoteSync) report(out io.Writer, res remoteStats, err error) error {
	if r.asJSON {
		if res.State != "" {
			if encErr := json.NewEncoder(out).Encode(res); encErr != nil {
				return encErr
			}
		}
	} else if res.State != "" {
		kind := "sync"
		if res.Kind != "" {
			kind = string(res.Kind) + " sync"
		}
		if command.NewProgressLine(out).Terminal() {
			fmt.Fprintln(out) // ends the progress line
		}
		if res.Wire == remote.Walletsync {
			fmt.Fprintf(out, "%s: %s over walletsync's paged wire, %d pages, %d rows (%d inserted, %d updated), %s in %s\n",
				res.State, kind, res.Pages, res.Rows, res.Inserts, res.Updates, command.HumanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond))
		} else {
			fmt.Fprintf(out, "%s: %s, %d chunks, %d rows (%d inserted, %d updated), %s in %s; %d requests, %s sent, %s received, %d retries\n",
				res.State, kind, res.Pages, res.Rows, res.Inserts, res.Updates, command.HumanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond),
				res.Server.Requests, command.HumanBytes(res.Server.BytesSent), command.HumanBytes(res.Server.BytesReceived), res.Server.Retries)
		}
		if res.State == syncer.StateCompleted {
			fmt.Fprintln(out, "the server confirmed every commit; its durable state says where the next run starts")
		} else {
			fmt.Fprintln(out, "the server keeps its durable state: the next run continues from there")
		}
	}
	if res.State == syncer.StateCancelled {
		return command.ErrCancelled
	}
	return err
}
