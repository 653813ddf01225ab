package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// stagingDir is the agent's one private folder for import staging (plaintext and staging
// databases): one fixed place, so that what a killed agent left there is found and cleared
// by the import that resumes it, never forgotten in a folder with a random name.
func (a *Agent) stagingDir() string { return filepath.Join(string(a.opts.Dir), "staging") }

// uploadsDir holds backup files uploaded from the browser (which cannot name a path) until
// they are imported; the folder is private (0700) and its files 0600.
func (a *Agent) uploadsDir() string { return filepath.Join(string(a.opts.Dir), "uploads") }

var uploadID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// receiveUpload streams an uploaded backup file into the private uploads folder.
func (a *Agent) receiveUpload(r *http.Request) (api.Upload, error) {
	if err := os.MkdirAll(a.uploadsDir(), 0o700); err != nil {
		return api.Upload{}, err
	}
	b := make([]byte, 16)
	rand.Read(b)
	up := api.Upload{Upload: hex.EncodeToString(b)}
	f, err := os.OpenFile(filepath.Join(a.uploadsDir(), up.Upload), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return up, err
	}
	up.Bytes, err = io.Copy(f, r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return up, fmt.Errorf("receive upload: %w", err)
	}
	return up, nil
}

// importFile resolves the file of an import request ("" for a Destination: its document
// is written by the task).
func (a *Agent) importFile(req api.ImportRequest) (string, error) {
	named := 0
	for _, s := range []string{req.Upload, req.Path, req.Destination} {
		if s != "" {
			named++
		}
	}
	switch {
	case named != 1:
		return "", fmt.Errorf("name one of an upload, a path or a destination: %w", wallet.ErrInvalidArgument)
	case req.Destination != "":
		d, err := findDestination(a.config(), req.Destination)
		if err != nil {
			return "", err
		}
		if d.Kind != api.DestinationSQLite {
			return "", api.WithHint(fmt.Errorf("destination %s is a %s, not a backup wallet file: %w", d.ID, d.Kind, wallet.ErrInvalidArgument),
				"restore a backup folder's file by its path")
		}
		return "", nil
	case req.Path != "":
		return req.Path, nil
	case !uploadID.MatchString(req.Upload):
		return "", fmt.Errorf("upload %q: %w", req.Upload, wallet.ErrInvalidArgument)
	}
	return filepath.Join(a.uploadsDir(), req.Upload), nil
}

// startImport starts a preview or an import task. Into a configured wallet it goes through
// the wallet's own open store and, for a merge, takes a background write grant for each page
// commit, so the import never makes the wallet feel slow; a restore may instead build a new
// wallet file.
func (a *Agent) startImport(kind api.TaskKind, req api.ImportRequest) (api.Task, error) {
	file, err := a.importFile(req)
	if err != nil {
		return api.Task{}, err
	}
	if req.Password.IsZero() && req.Destination == "" {
		return api.Task{}, fmt.Errorf("import needs the backup's password: %w", wallet.ErrInvalidArgument)
	}
	cfg := a.config()
	ref, refErr := findWalletRef(cfg, req.Wallet)
	if refErr != nil && (req.Mode != wallet.ImportRestore || req.Wallet == "") {
		return api.Task{}, refErr
	}
	target := "import:" + file
	if req.Destination != "" {
		target = "import:" + req.Destination
	}
	return a.tasks.Start(kind, target, func(ctx context.Context, h *TaskHandle) error {
		opts := a.importOptions(a.stagingDir(), req.Mode)
		opts.AllowOtherIdentity = req.AllowOtherIdentity
		if req.Destination != "" {
			doc, err := a.sourceDocument(ctx, h, req.Destination)
			if err != nil {
				return err
			}
			defer os.Remove(doc)
			file, opts.Plaintext = doc, true
		}
		t := portable.Target{Path: req.Wallet}
		if refErr == nil {
			w, err := a.wallet(ctx, ref.Path)
			if err != nil {
				return err
			}
			t = portable.Target{Store: w.store}
			opts.Sync.Grants = w.queue.NewSession("import", ref.Path)
			if opts.Sync.Budget, err = scheduler.NewBudget(scheduler.BudgetOptions{}); err != nil {
				return err
			}
		}
		progress := func(p portable.ImportProgress) {
			h.SetDetail(string(p.Phase))
			if p.Sync != nil {
				h.SyncProgress(*p.Sync)
			}
		}
		if kind == api.KindImportPreview {
			res, err := portable.Preview(ctx, file, req.Password.Reveal(), t, opts, progress)
			h.SetResult(res)
			return importError(err, req)
		}
		if _, err := os.Stat(t.Path); t.Store != nil || err == nil { // an existing wallet
			h.Logf("%s", localstore.WriteIntoWalletNotice)
		}
		res, err := portable.Import(ctx, file, req.Password.Reveal(), t, opts, progress)
		h.SetResult(res)
		err = importError(err, req)
		if err == nil {
			h.Logf("imported %s (%s): %d inserted, %d updated", filepath.Base(file), res.Mode, res.Inserts, res.Updates)
			if req.Upload != "" {
				os.Remove(file)
			}
		}
		return err
	})
}

// sourceDocument writes the wallet a backup wallet file destination holds as a plaintext
// BRC-38 document in a private folder of the agent's (0700, the file 0600), so that its
// preview and its import are those of a backup file. It holds the first identity of the
// backup wallet that the configured wallet also has, else its first. The caller removes it.
func (a *Agent) sourceDocument(ctx context.Context, h *TaskHandle, id string) (string, error) {
	d, err := findDestination(a.config(), id)
	if err != nil {
		return "", err
	}
	h.SetDetail("reading the backup wallet")
	src, err := localstore.Open(ctx, d.Path, localstore.Options{ReadOnly: true, Logger: a.log})
	if err != nil {
		return "", api.AtPath(d.Path, fmt.Errorf("open backup wallet %s: %w", d.Path, err))
	}
	defer src.Close()
	ids, err := src.Identities(ctx)
	if err != nil {
		return "", api.AtPath(d.Path, err)
	}
	if len(ids) == 0 {
		return "", api.WithHint(api.AtPath(d.Path, fmt.Errorf("backup wallet %s holds no identity: %w", d.Path, wallet.ErrNotFound)),
			"run this destination once, so that it holds a copy of the wallet")
	}
	identity := ids[0]
	if ref, err := walletOf(a.config(), d); err == nil {
		if w, err := a.wallet(ctx, ref.Path); err == nil {
			if mine, err := w.identities(ctx, ref); err == nil {
				if i := slices.IndexFunc(ids, func(k string) bool { return slices.Contains(mine, k) }); i >= 0 {
					identity = ids[i]
				}
			}
		}
	}
	settings, err := src.Settings(ctx)
	if err != nil {
		return "", err
	}
	v, err := src.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true, Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return "", err
	}
	defer v.Close()
	dir := filepath.Join(string(a.opts.Dir), "sources")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	doc := filepath.Join(dir, id+".json")
	os.Remove(doc) // what an interrupted task left
	if _, err := portable.ExportBRC38(ctx, v, settings, identity, doc, portable.ExportOptions{}); err != nil {
		return "", fmt.Errorf("read backup wallet %s: %w", d.Path, err)
	}
	return doc, nil
}

// importError marks what an import's failure concerns: the wallet it goes into (not
// empty, not a wallet, read-only, a full disk), else the backup file when the person named
// it by its path (an upload's path is the agent's own and is never shown).
func importError(err error, req api.ImportRequest) error {
	for _, target := range []error{wallet.ErrNotEmpty, wallet.ErrUnknownSchema, wallet.ErrSchemaTooNew, wallet.ErrReadOnly, wallet.ErrDiskFull} {
		if errors.Is(err, target) && req.Wallet != "" {
			return api.AtPath(req.Wallet, err)
		}
	}
	if req.Path != "" {
		return api.AtPath(req.Path, err)
	}
	return err
}

// AbandonImport starts a task that takes back the unfinished import of a configured wallet
// (the only one when walletPath is empty): the wallet becomes exactly what it was before the
// import started (see portable.Abandon). Its result is the abandoned imports.
func (a *Agent) AbandonImport(walletPath string) (api.Task, error) {
	ref, err := findWalletRef(a.config(), walletPath)
	if err != nil {
		return api.Task{}, err
	}
	// An import that runs would go on writing pages after its merge was taken back.
	for _, t := range a.tasks.List() {
		if t.Kind == api.KindImport && !t.State.Terminal() {
			return api.Task{}, api.WithHint(fmt.Errorf("an import is running (task %s): %w", t.ID, wallet.ErrImportInProgress), "cancel it first, then abandon")
		}
	}
	return a.tasks.Start(api.KindImportAbandon, ref.Path, func(ctx context.Context, h *TaskHandle) error {
		w, err := a.wallet(ctx, ref.Path)
		if err != nil {
			return err
		}
		opts := a.importOptions(a.stagingDir(), "")
		opts.Sync.Grants = w.queue.NewSession("import-abandon", ref.Path)
		recs, err := portable.Abandon(ctx, portable.Target{Store: w.store}, opts)
		h.SetResult(recs)
		if err == nil {
			h.Logf("abandoned %d unfinished import(s) into %s", len(recs), ref.Path)
		}
		return err
	})
}

// VerifyBackup starts a task that decrypts and validates one backup file of a folder
// destination with the unattended password, and records the outcome.
func (a *Agent) VerifyBackup(destination, name string) (api.Task, error) {
	d, err := findDestination(a.config(), destination)
	if err != nil {
		return api.Task{}, err
	}
	if _, _, ok := parseBackup(backupFile{Name: name, Bundle: d.Kind == api.DestinationBundles}); !ok {
		return api.Task{}, fmt.Errorf("%q is not a backup file name: %w", name, wallet.ErrInvalidArgument)
	}
	path := filepath.Join(d.Path, name)
	if d.Kind == api.DestinationBundles {
		// A bundle needs no password: its digests, SQLite's checks and its counts say it all.
		return a.tasks.Start(api.KindVerify, path, func(ctx context.Context, h *TaskHandle) error {
			m, err := bundle.Verify(ctx, path)
			h.SetResult(m)
			return a.markVerified(ctx, path, err)
		})
	}
	return a.tasks.Start(api.KindVerify, path, func(ctx context.Context, h *TaskHandle) error {
		pw, err := a.secrets.Get(BackupPasswordKey)
		if err != nil {
			return api.WithHint(fmt.Errorf("verify: no unattended backup password: %w", err), "set the backup password in Settings")
		}
		sum, err := portable.Verify(ctx, path, pw.Reveal(), a.importOptions(a.stagingDir(), ""), nil)
		h.SetResult(sum)
		return a.markVerified(ctx, path, err)
	})
}

// markVerified records the outcome err of verifying the backup at path, unless the verify
// was cancelled (which says nothing about the file), and returns err or, failing that, the
// recording's error.
func (a *Agent) markVerified(ctx context.Context, path string, err error) error {
	if ctx.Err() == nil {
		if merr := a.state.MarkVerified(ctx, path, a.now(), err); merr != nil && err == nil {
			err = merr
		}
	}
	return err
}

// cleanAbandoned removes the uploads and the server previews' staging wallets that are older
// than a day: an abandoned wizard must not leave copies of the wallet lying in the data
// folder. At start nothing is reading them; a preview older than a day is not worth
// confirming, since the server has moved on since.
func (a *Agent) cleanAbandoned() {
	for _, dir := range []string{a.uploadsDir(), a.serverStagingDir()} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}
