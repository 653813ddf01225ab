package portable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"walletsync/brc40"
	"walletsync/portable/brc38"
	"walletsync/portable/brc39"
	"walletsync/scheduler"
	"walletsync/syncer"
	"walletsync/wallet"
)

// Import. A backup goes into a wallet in steps, each of which leaves the wallet untouched or
// in a state that a rerun of the same import completes:
//
//  1. The BRC-39 file is decrypted into a nameless private staging file (staging.go) and its
//     whole tag verified; nothing reads the plaintext before.
//  2. The whole document is decoded and validated (brc38.Decode); nothing acts on it before.
//  3. What cannot go in is refused in plain words: a document the wallet's import journal
//     records as imported (*AlreadyImportedError), a wallet that holds part of another
//     unfinished merge (*wallet.ImportInProgressError), another chain (*wallet.ChainError),
//     a restore into a wallet that is not empty (*wallet.NotEmptyError), a merge of another
//     identity than the wallet's unless asked for (*wallet.OtherIdentityError).
//  4. The document is loaded into a staging database, ids kept, in one transaction; the
//     wallet's journal says "staged".
//  5. A merge first runs its preview against the wallet and refuses, writing nothing, a
//     document with rows that would make it fail half-way (*wallet.MergeConflictError).
//     Then it is a sync session: the staging database is the Source and syncer.Run commits
//     its pages into the wallet (journal "merging": a crash resumes from the sync checkpoint;
//     every page is recorded in the undo log, so Abandon can take the merge back; until it
//     ends, no sync, export or other import reads the wallet),
//     then Store.CompleteMerge writes the sync states and "done" in one transaction. A
//     restore copies everything in one transaction (Store.RestoreFrom), or, into a new wallet
//     file, copies the staging database itself into place (Store.SaveAs).
//  6. The staging database is removed.

// Errors of the import.
var (
	// ErrAlreadyImported: the wallet's import journal holds the document as imported; there
	// is nothing to do (see AlreadyImportedError).
	ErrAlreadyImported = errors.New("already imported, nothing to do")
)

// AlreadyImportedError reports a document the wallet already holds.
type AlreadyImportedError struct {
	Path   string // the wallet file
	Record wallet.ImportRecord
}

func (e *AlreadyImportedError) Error() string {
	return fmt.Sprintf("this backup went in on %s (%s): %v", wallet.FormatTime(e.Record.UpdatedAt), e.Record.Mode, ErrAlreadyImported)
}

// Unwrap makes errors.Is(err, ErrAlreadyImported) true.
func (e *AlreadyImportedError) Unwrap() error { return ErrAlreadyImported }

// ImportOptions tune Verify, Preview and Import.
type ImportOptions struct {
	// StagingDir is walletsync's private folder for the plaintext and the staging databases;
	// it is created (0700) when missing. Required.
	StagingDir string
	// Open opens and creates the wallet files: staging databases, and the target when the
	// Target gives no Store. Required by Preview and Import (Opener adapts localstore's).
	Open OpenFunc
	// Mode is merge or restore. Empty chooses restore when the target file does not exist
	// and merge when it does; an unfinished import of the same document resumes in its own
	// mode.
	Mode wallet.ImportMode
	// Plaintext reads the file as a plaintext BRC-38 document instead of a BRC-39 file; the
	// password is not used.
	Plaintext bool
	// AllowOtherIdentity lets a merge bring a user the wallet does not hold into a wallet
	// that holds users of its own, which then holds two identities. Without it Import
	// refuses such a document (*wallet.OtherIdentityError); Preview reports it.
	AllowOtherIdentity bool
	// KDFLimits caps the Argon2id parameters a header may ask for (brc39.DefaultKDFLimits where
	// zero); a file above them is refused before Argon2 runs.
	KDFLimits brc39.KDFLimits
	// KDFGate, when set, admits the key derivation (see KDFGate).
	KDFGate KDFGate
	// Decode bounds the document.
	Decode brc38.DecodeOptions
	// Sync tunes the merge's page session: page limits, and the access queue's Grants and
	// Budget when the target is the agent's live wallet. Import sets Active (the wallet's
	// own activeStorage is kept) and Progress (reported through the import's progress).
	Sync syncer.Options

	keyFor func(brc39.Header) (brc39.Key, error) // test seam: the file key without Argon2
	hook   func(point string)                    // test seam: called at the points below, where crash tests die
}

// The points an import passes that tests crash at.
const (
	hookStagingRow = "staging-row" // a row was put into the staging database (uncommitted)
	hookStaged     = "staged"      // the staging database is complete; the journal says staged
	hookDone       = "done"        // the journal says done; the staging database is not yet removed
)

// Target names the wallet a document goes into.
type Target struct {
	// Path is the wallet file. A restore may name a file that does not exist yet: the wallet
	// is built in staging and moved into place whole.
	Path string
	// Store, when set, is the open wallet (the agent's own handle); Path is then taken from
	// it. It is used as is and not closed. A preview needs only read access.
	Store Store
}

// ImportPhase is what an import is doing. The wire strings are stable.
type ImportPhase string

// The phases, in order. Done and Total of ImportProgress count bytes of the file
// (decrypting), bytes of the plaintext (validating) or rows (the others).
const (
	PhaseDecrypting ImportPhase = "decrypting"
	PhaseValidating ImportPhase = "validating"
	PhaseStaging    ImportPhase = "staging"
	PhasePreviewing ImportPhase = "previewing"
	PhaseMerging    ImportPhase = "merging"
	PhaseRestoring  ImportPhase = "restoring"
	PhaseFinishing  ImportPhase = "finishing"
)

// ImportProgress is one progress report. Reports come from the calling goroutine, between
// steps, never under a lock.
type ImportProgress struct {
	Phase ImportPhase `json:"phase"`
	Done  int64       `json:"done"`
	Total int64       `json:"total"`
	// Sync is the page session's own report while merging.
	Sync *syncer.Progress `json:"sync,omitempty"`
}

// Summary describes a verified document and the envelope it came in.
type Summary struct {
	File      string `json:"file"`
	Encrypted bool   `json:"encrypted"`
	// KDF, SaltBytes and NonceBytes are the BRC-39 header's (absent for a plaintext document).
	KDF        *brc39.KDFParams `json:"kdf,omitempty"`
	SaltBytes  int              `json:"saltBytes,omitempty"`
	NonceBytes int              `json:"nonceBytes,omitempty"`
	// KDFTime is how long the key derivation took.
	KDFTime time.Duration `json:"kdfTime"`
	// Digest is the hex SHA-256 of the plaintext: the document's name in import journals.
	Digest         string       `json:"digest"`
	PlaintextBytes int64        `json:"plaintextBytes"`
	IdentityKey    string       `json:"identityKey"`
	Chain          wallet.Chain `json:"chain"`
	// Source is the exporter's settings row (its storageName and storageIdentityKey).
	Source     wallet.Settings `json:"sourceStorage"`
	ExportedAt time.Time       `json:"exportedAt"`
	// ActiveStorage is the user's activeStorage as written in the document.
	ActiveStorage string `json:"activeStorage"`
	// Counts holds the document's rows per table, the user (1) included.
	Counts map[wallet.TableName]int64 `json:"counts"`
}

// PreviewResult is what Preview found: the document, and what importing it would do.
type PreviewResult struct {
	Summary
	Target string            `json:"target"`
	Mode   wallet.ImportMode `json:"mode"`
	// Resumes is set when an unfinished import of this document into the target exists.
	Resumes bool `json:"resumes"`
	// OtherIdentity is set when the document's user is not among the wallet's users
	// (WalletIdentities) while the wallet holds some: the import is refused unless
	// ImportOptions.AllowOtherIdentity asks for it.
	OtherIdentity    bool     `json:"otherIdentity"`
	WalletIdentities []string `json:"walletIdentities,omitempty"`
	// Conflicts are the rows that would make the merge fail (the first
	// wallet.MaxListedConflicts; ConflictTotal counts all): the import is refused while
	// there are any.
	Conflicts     []wallet.MergeConflict `json:"conflicts,omitempty"`
	ConflictTotal int                    `json:"conflictTotal"`
	// Plan holds, per table, the rows the import would insert and update, and the rows it
	// would leave unchanged or skip as older than the wallet's.
	Plan  wallet.MergePlan   `json:"plan"`
	Total wallet.MergeCounts `json:"total"`
}

// ImportResult is what Import did.
type ImportResult struct {
	Summary
	Target string            `json:"target"`
	Mode   wallet.ImportMode `json:"mode"`
	// Resumed is set when the run finished an import a previous run left unfinished; its
	// counts are then what this run wrote.
	Resumed bool `json:"resumed"`
	// Tables holds the rows inserted and updated per table (as the toolbox counts them: a
	// restore inserts every row, the user's included; but a sync state the merge would
	// rewrite unchanged counts as unchanged, where the toolbox counts an update).
	Tables  wallet.MergePlan `json:"tables"`
	Inserts int64            `json:"inserts"`
	Updates int64            `json:"updates"`
	Elapsed time.Duration    `json:"elapsed"`
}

// Verify decrypts and validates a backup file without touching any wallet: the header, the
// whole tag, then the whole document. It returns what the document holds, or the first
// refusal: *brc39.HeaderError, *brc39.TruncatedError, *brc39.KDFParamError,
// brc39.ErrAuthFailed, *brc38.DocumentError. The Summary is filled as far as the file was
// read. progress may be nil.
func Verify(ctx context.Context, file, password string, opts ImportOptions, progress func(ImportProgress)) (Summary, error) {
	sum, doc, err := openDocument(ctx, file, password, opts, nil, reporter(progress))
	if err != nil {
		return sum, fmt.Errorf("verify %s: %w", file, err)
	}
	doc.Close()
	return sum, nil
}

// Preview verifies a backup file as Verify does and reports what importing it into the
// target would do, writing nothing to the wallet: per table, the rows a merge would insert,
// update, leave unchanged and skip as older (counted by the wallet's own merge rules, see
// Store.PreviewMerge), or the rows a restore would insert. A merge preview loads the document
// into a staging database to read it in sync order; that database is removed afterwards
// unless an unfinished import of the document needs it.
//
// What Import would refuse for the wallet's sake is reported, not refused: another identity
// (OtherIdentity) and conflicts (Conflicts). Refusals come as errors, with the result's
// Summary filled: *AlreadyImportedError when the wallet's journal holds the document as
// imported, *wallet.ImportInProgressError when the wallet holds part of another unfinished
// merge, *wallet.ChainError for another chain, *wallet.NotEmptyError for a restore into a
// wallet that is not empty, and every error of Verify. progress may be nil.
func Preview(ctx context.Context, file, password string, target Target, opts ImportOptions, progress func(ImportProgress)) (PreviewResult, error) {
	opts.AllowOtherIdentity = true // reported below, not refused
	r, err := begin(ctx, file, password, target, opts, progress)
	defer r.close()
	res := PreviewResult{Summary: r.sum, Target: r.path, Mode: r.mode, Resumes: r.resumed,
		OtherIdentity: r.otherIdentity != nil, WalletIdentities: r.walletIdentities()}
	if err == nil {
		var p wallet.MergePreview
		p, err = r.preview(ctx)
		res.Plan, res.Total, res.Conflicts, res.ConflictTotal = p.Plan, p.Plan.Total(), p.Conflicts, p.ConflictTotal
	}
	if err != nil {
		return res, fmt.Errorf("preview %s into %s: %w", file, r.path, err)
	}
	return res, nil
}

// Import verifies a backup file and imports it into the target (see the steps above), after
// the same refusals as Preview and, writing nothing, those Preview reports: another identity
// unless opts.AllowOtherIdentity (*wallet.OtherIdentityError), and conflicts
// (*wallet.MergeConflictError). A run that stops (a crash, a cancelled ctx, a full disk)
// leaves the wallet untouched or resumable: run Import again with the same file and password
// and it continues from the journal and the sync checkpoint, or take it back with Abandon.
// Importing a document the wallet already holds is refused with *AlreadyImportedError and
// changes nothing. progress may be nil.
func Import(ctx context.Context, file, password string, target Target, opts ImportOptions, progress func(ImportProgress)) (ImportResult, error) {
	start := time.Now()
	r, err := begin(ctx, file, password, target, opts, progress)
	defer r.close()
	res := ImportResult{Summary: r.sum, Target: r.path, Mode: r.mode, Resumed: r.resumed}
	if err == nil {
		switch {
		case r.mode == wallet.ImportMerge:
			res.Tables, err = r.merge(ctx)
		case r.target == nil:
			res.Tables, err = r.restoreNew(ctx)
		default:
			res.Tables, err = r.restoreInto(ctx)
		}
	}
	if err != nil {
		return res, fmt.Errorf("import %s into %s: %w", file, r.path, err)
	}
	total := res.Tables.Total()
	res.Inserts, res.Updates, res.Elapsed = total.Inserts, total.Updates, time.Since(start)
	return res, nil
}

// importRun is one Preview or Import.
type importRun struct {
	opts     ImportOptions
	progress func(ImportProgress)
	sum      Summary
	doc      *document
	path     string // the target wallet file
	target   Store  // nil: a restore into a new file
	own      bool   // target was opened here
	mode     wallet.ImportMode
	rec      wallet.ImportRecord // the journal entry: the unfinished one resumed, or a new one
	resumed  bool
	staging  string // the staging database's path
	// otherIdentity is set when the document's user is not the wallet's (a merge only).
	otherIdentity *wallet.OtherIdentityError
}

func (r *importRun) walletIdentities() []string {
	if r.otherIdentity == nil {
		return nil
	}
	return r.otherIdentity.Wallet
}

// begin checks the options, verifies the document, opens the target and applies the
// refusals. The run it returns is never nil; close it.
func begin(ctx context.Context, file, password string, target Target, opts ImportOptions, progress func(ImportProgress)) (*importRun, error) {
	r := &importRun{opts: opts, progress: reporter(progress), path: target.Path, target: target.Store, mode: opts.Mode}
	switch {
	case opts.Open == nil:
		return r, fmt.Errorf("no OpenFunc for the wallet files: %w", wallet.ErrInvalidArgument)
	case r.mode != "" && r.mode != wallet.ImportMerge && r.mode != wallet.ImportRestore:
		return r, fmt.Errorf("import mode %q: %w", r.mode, wallet.ErrInvalidArgument)
	case r.target != nil:
		r.path = r.target.Path()
	case r.path == "":
		return r, fmt.Errorf("no target wallet: %w", wallet.ErrInvalidArgument)
	}
	exists := r.target != nil
	if !exists {
		_, err := os.Stat(r.path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return r, err
		}
		exists = err == nil
	}
	if r.mode == "" {
		r.mode = wallet.ImportMerge
		if !exists {
			r.mode = wallet.ImportRestore
		}
	}
	if r.mode == wallet.ImportMerge && !exists {
		return r, fmt.Errorf("%s does not exist; a merge needs a wallet (a restore creates one): %w", r.path, wallet.ErrNotFound)
	}
	var check brc38.RowFunc
	if r.mode == wallet.ImportMerge {
		check = checkSyncMaps()
	}
	// The document first: a file that is not a valid backup never gets the wallet opened.
	var err error
	if r.sum, r.doc, err = openDocument(ctx, file, password, opts, check, r.progress); err != nil {
		return r, err
	}
	if exists && r.target == nil {
		if r.target, err = opts.Open(ctx, r.path, ""); err != nil {
			return r, err
		}
		r.own = true
	}
	r.staging = stagingPath(opts.StagingDir, r.sum.Digest, r.path)
	now := wallet.Now()
	r.rec = wallet.ImportRecord{Digest: r.sum.Digest, Mode: r.mode, State: wallet.ImportStaged, IdentityKey: r.sum.IdentityKey,
		Source: r.sum.Source.StorageIdentityKey, StartedAt: now, UpdatedAt: now}
	if r.target == nil {
		if _, err := wallet.ParseChain(string(r.sum.Chain)); err != nil {
			return r, fmt.Errorf("the document's chain: %w", err)
		}
		return r, nil
	}
	return r, r.checkTarget(ctx)
}

// checkTarget applies the refusals that depend on the target wallet, in the order a person
// needs them: a repeat first, then another merge the wallet holds part of, then the chain,
// then a restore's empty wallet or a merge's other identity.
func (r *importRun) checkTarget(ctx context.Context) error {
	settings, err := r.target.Settings(ctx)
	if err != nil {
		return err
	}
	r.rec.Target = settings.StorageIdentityKey
	rec, err := r.target.ImportRecord(ctx, r.sum.Digest)
	switch {
	case err == nil && rec.State == wallet.ImportDone:
		// A run that died after "done" may have left its staging database behind.
		if err := removeStaging(r.staging); err != nil {
			return err
		}
		return &AlreadyImportedError{Path: r.path, Record: rec}
	case err == nil:
		if r.opts.Mode != "" && r.opts.Mode != rec.Mode {
			return &wallet.ImportInProgressError{Path: r.path, Record: rec}
		}
		r.mode, r.rec, r.resumed = rec.Mode, rec, true
	case !errors.Is(err, wallet.ErrNotFound):
		return err
	}
	if err := r.target.ImportInProgress(ctx); err != nil {
		var busy *wallet.ImportInProgressError
		if !errors.As(err, &busy) || busy.Record.Digest != r.sum.Digest {
			return err
		}
	}
	if err := wallet.CheckSameChain(r.sum.Chain, settings.Chain); err != nil {
		return err
	}
	if r.mode == wallet.ImportRestore {
		return r.target.CheckEmpty(ctx)
	}
	ids, err := r.target.Identities(ctx)
	if err != nil {
		return err
	}
	if len(ids) > 0 && !slices.Contains(ids, r.sum.IdentityKey) {
		r.otherIdentity = &wallet.OtherIdentityError{Path: r.path, Backup: r.sum.IdentityKey, Wallet: ids}
		if !r.opts.AllowOtherIdentity {
			return r.otherIdentity
		}
	}
	return nil
}

func (r *importRun) close() {
	if r.doc != nil {
		r.doc.Close()
	}
	if r.own {
		r.target.Close()
	}
}

func (r *importRun) hook(point string) {
	if r.opts.hook != nil {
		r.opts.hook(point)
	}
}

// rows is the number of rows in the document, the user's included.
func (r *importRun) rows() int64 {
	var n int64
	for _, c := range r.sum.Counts {
		n += c
	}
	return n
}

// restorePlan is what a restore writes: every row of the document, inserted.
func (r *importRun) restorePlan() wallet.MergePlan {
	plan := wallet.MergePlan{}
	for name, n := range r.sum.Counts {
		plan[name] = wallet.MergeCounts{Inserts: n}
	}
	return plan
}

func (r *importRun) preview(ctx context.Context) (wallet.MergePreview, error) {
	if r.mode == wallet.ImportRestore {
		return wallet.MergePreview{Plan: r.restorePlan()}, nil
	}
	st, err := r.stage(ctx)
	if err != nil {
		return wallet.MergePreview{}, err
	}
	p, err := r.previewFrom(ctx, st)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if !r.resumed {
		if rerr := removeStaging(r.staging); err == nil {
			err = rerr
		}
	}
	return p, err
}

// previewFrom previews the merge of the staging database st into the target.
func (r *importRun) previewFrom(ctx context.Context, st Store) (wallet.MergePreview, error) {
	r.progress(ImportProgress{Phase: PhasePreviewing, Total: r.rows()})
	v, err := st.OpenView(ctx, time.Hour)
	if err != nil {
		return wallet.MergePreview{}, fmt.Errorf("read the staging database: %w", err)
	}
	defer v.Close()
	return r.target.PreviewMerge(ctx, v, r.sum.IdentityKey, r.sum.Source)
}

// stage returns the staging database of the document: the one an earlier run of this import
// completed, or a new one loaded from the document in one transaction. r.rec.Session names
// it afterwards.
func (r *importRun) stage(ctx context.Context) (Store, error) {
	if err := ensureStagingDir(r.opts.StagingDir); err != nil { // a plaintext document made none yet
		return nil, err
	}
	if _, err := os.Stat(r.staging); err == nil {
		st, err := r.opts.Open(ctx, r.staging, "")
		if err != nil {
			return nil, fmt.Errorf("open the staging database: %w", err)
		}
		if _, err := st.ImportRecord(ctx, r.sum.Digest); err == nil {
			return st, r.useSession(ctx, st)
		}
		st.Close() // a load that never committed: start again
		if err := removeStaging(r.staging); err != nil {
			return nil, err
		}
	}
	st, err := r.opts.Open(ctx, r.staging, r.sum.Chain)
	if err != nil {
		return nil, fmt.Errorf("create the staging database: %w", err)
	}
	if err := r.useSession(ctx, st); err != nil {
		st.Close()
		return nil, err
	}
	total := r.rows()
	r.progress(ImportProgress{Phase: PhaseStaging, Total: total})
	staged := r.rec // the staging database holds the document, staged, whatever the wallet's journal says
	staged.State = wallet.ImportStaged
	err = st.LoadDocument(ctx, staged, func(put func(*wallet.Table, wallet.Row) error) error {
		var n int64
		return r.doc.rows(ctx, func(t *wallet.Table, row wallet.Row) error {
			if err := put(t, row); err != nil {
				return err
			}
			if n++; n%256 == 0 {
				r.progress(ImportProgress{Phase: PhaseStaging, Done: n, Total: total})
			}
			r.hook(hookStagingRow)
			return nil
		})
	})
	if err != nil {
		st.Close()
		return nil, errors.Join(fmt.Errorf("stage the document: %w", err), removeStaging(r.staging))
	}
	r.progress(ImportProgress{Phase: PhaseStaging, Done: total, Total: total})
	return st, nil
}

// useSession makes the staging database st the one r.rec names.
func (r *importRun) useSession(ctx context.Context, st Store) error {
	settings, err := st.Settings(ctx)
	if err != nil {
		return fmt.Errorf("read the staging database: %w", err)
	}
	r.rec.Session = settings.StorageIdentityKey
	if r.target == nil {
		r.rec.Target = settings.StorageIdentityKey // the new wallet is the staging database
	}
	return nil
}

// record writes r.rec, in state, into the target's journal.
func (r *importRun) record(ctx context.Context, state wallet.ImportState) error {
	r.rec.State, r.rec.UpdatedAt = state, wallet.Now()
	return r.write(ctx, func() error { return r.target.PutImportRecord(ctx, r.rec) })
}

// write runs fn, a write to the target outside the page session, under a background write
// grant when the import shares the wallet through an access queue (Sync.Grants), as every
// page commit does: foreground work then waits for it at most as long as for one commit.
func (r *importRun) write(ctx context.Context, fn func() error) error {
	q := r.opts.Sync.Grants
	if q == nil {
		return fn()
	}
	g, err := q.Acquire(ctx, scheduler.Background, scheduler.Write)
	if err != nil {
		return fmt.Errorf("wait for the write grant: %w", err)
	}
	defer q.Release(g)
	return fn()
}

// merge stages the document, checks that nothing in it would make the merge fail, and
// merges it into the target through a page session.
func (r *importRun) merge(ctx context.Context) (wallet.MergePlan, error) {
	stale := r.rec.Session
	st, err := r.stage(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	// Before the first write: a document that conflicts with the wallet is refused whole.
	p, err := r.previewFrom(ctx, st)
	if err == nil && p.ConflictTotal > 0 {
		err = &wallet.MergeConflictError{Path: r.path, Conflicts: p.Conflicts, Total: p.ConflictTotal}
	}
	if err != nil {
		if !r.resumed {
			st.Close()
			st = nil
			err = errors.Join(err, removeStaging(r.staging))
		}
		return nil, err
	}
	if r.resumed && stale != r.rec.Session {
		// Staged again (the old staging database is gone): the old session's checkpoint and
		// id maps will never be read; the new session traverses everything.
		if err := r.write(ctx, func() error { return r.target.ForgetSession(ctx, stale) }); err != nil {
			return nil, err
		}
	}
	// A new import is staged now; an unfinished one keeps its state, with the session its
	// staging database now has.
	if err := r.record(ctx, r.rec.State); err != nil {
		return nil, err
	}
	r.hook(hookStaged)
	if err := r.record(ctx, wallet.ImportMerging); err != nil {
		return nil, err
	}
	plan, err := r.syncPages(ctx, st)
	if err != nil {
		return plan, err
	}
	if err := st.Close(); err != nil {
		return plan, err
	}
	st = nil
	r.progress(ImportProgress{Phase: PhaseFinishing})
	total := plan.Total()
	r.rec.State, r.rec.UpdatedAt, r.rec.Inserts, r.rec.Updates = wallet.ImportDone, wallet.Now(), total.Inserts, total.Updates
	var states wallet.MergeCounts
	err = r.write(ctx, func() (err error) {
		states, err = r.target.CompleteMerge(ctx, r.staging, r.rec, r.sum.Source)
		return err
	})
	if err != nil {
		return plan, err
	}
	plan[wallet.TableSyncStates] = states
	r.hook(hookDone)
	return plan, removeStaging(r.staging)
}

// syncPages runs the page session from the staging database into the target and returns what
// its commits wrote, per table.
func (r *importRun) syncPages(ctx context.Context, st Store) (wallet.MergePlan, error) {
	plan := wallet.MergePlan{}
	for _, t := range wallet.SyncOrder {
		plan[t.Name] = wallet.MergeCounts{}
	}
	total := r.rows() - r.sum.Counts[wallet.TableSyncStates]
	var last syncer.Counters
	opts := r.opts.Sync
	opts.Active = wallet.KeepDestinationActive
	opts.Progress = func(p syncer.Progress) error {
		if p.State == syncer.StateCommitted {
			c := plan[p.Table]
			c.Inserts += p.Inserts - last.Inserts
			c.Updates += p.Updates - last.Updates
			plan[p.Table], last = c, p.Counters
		}
		r.progress(ImportProgress{Phase: PhaseMerging, Done: p.Rows, Total: total, Sync: &p})
		return nil
	}
	if _, err := syncer.Run(ctx, st, r.target, r.sum.IdentityKey, opts); err != nil {
		return plan, err
	}
	return plan, nil
}

// restoreInto stages the document and copies it into the empty target, ids kept.
func (r *importRun) restoreInto(ctx context.Context) (wallet.MergePlan, error) {
	st, err := r.stage(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	if err := r.record(ctx, r.rec.State); err != nil {
		return nil, err
	}
	r.hook(hookStaged)
	r.progress(ImportProgress{Phase: PhaseRestoring, Total: r.rows()})
	r.rec.State, r.rec.UpdatedAt, r.rec.Inserts, r.rec.Updates = wallet.ImportDone, wallet.Now(), r.rows(), 0
	if err := r.write(ctx, func() error { return r.target.RestoreFrom(ctx, r.staging, r.rec) }); err != nil {
		return nil, err
	}
	r.hook(hookDone)
	return r.restorePlan(), removeStaging(r.staging)
}

// restoreNew stages the document and moves a copy of the staging database into place as the
// new wallet file, its journal saying done.
func (r *importRun) restoreNew(ctx context.Context) (wallet.MergePlan, error) {
	st, err := r.stage(ctx)
	if err != nil {
		return nil, err
	}
	r.hook(hookStaged)
	r.progress(ImportProgress{Phase: PhaseRestoring, Total: r.rows()})
	r.rec.State, r.rec.UpdatedAt, r.rec.Inserts, r.rec.Updates = wallet.ImportDone, wallet.Now(), r.rows(), 0
	err = st.PutImportRecord(ctx, r.rec)
	if err == nil {
		err = st.SaveAs(ctx, r.path)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	r.hook(hookDone)
	return r.restorePlan(), removeStaging(r.staging)
}

// checkSyncMaps refuses, before anything is staged, a sync state whose sync map a merge could
// not re-key (see brc40.SyncMap); a restore copies sync maps as they are.
func checkSyncMaps() brc38.RowFunc {
	i := 0
	return func(t *wallet.Table, r wallet.Row) error {
		if t != wallet.SyncStates {
			return nil
		}
		defer func() { i++ }()
		if _, err := brc40.SyncStateFromRow(r); err != nil {
			return &brc38.DocumentError{Path: fmt.Sprintf("tables.syncStates[%d].syncMap", i), Offset: -1,
				Reason: "not a sync map a merge can re-key: " + err.Error()}
		}
		return nil
	}
}

// document is a verified plaintext: the nameless staging file, or a plaintext input file.
type document struct {
	f      *os.File
	closer io.Closer
	digest string
	dec    brc38.DecodeOptions
}

// Close releases the plaintext; a staging file's data goes with it.
func (d *document) Close() error { return d.closer.Close() }

// rows decodes the document again and emits its rows, the user's last, once it is known to
// be the document that was verified.
func (d *document) rows(ctx context.Context, emit brc38.RowFunc) error {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read the plaintext: %w", err)
	}
	h := sha256.New()
	doc, err := brc38.Decode(ctx, io.TeeReader(d.f, h), emit, d.dec)
	if err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != d.digest {
		return fmt.Errorf("the plaintext changed after it was verified: %w", brc38.ErrInvalidDocument)
	}
	return emit(wallet.Users, doc.User)
}

// openDocument verifies file: a BRC-39 file is decrypted into a nameless staging file and its
// tag checked, then the document is decoded and validated (check, when set, sees every row).
// The Summary is filled as far as the file was read.
func openDocument(ctx context.Context, file, password string, opts ImportOptions, check brc38.RowFunc, progress func(ImportProgress)) (Summary, *document, error) {
	sum := Summary{File: file, Encrypted: !opts.Plaintext}
	in, err := os.Open(file)
	if err != nil {
		return sum, nil, err
	}
	d := &document{f: in, closer: in, dec: opts.Decode}
	if !opts.Plaintext {
		defer in.Close()
		if d.f, d.closer, err = decryptToStaging(ctx, in, password, opts, &sum, progress); err != nil {
			return sum, nil, err
		}
	}
	size, err := d.f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = d.f.Seek(0, io.SeekStart)
	}
	if err != nil {
		d.Close()
		return sum, nil, fmt.Errorf("read the plaintext: %w", err)
	}
	h := sha256.New()
	r := &progressReader{r: io.TeeReader(d.f, h), phase: PhaseValidating, total: size, report: progress}
	doc, err := brc38.Decode(ctx, r, check, opts.Decode)
	if err != nil {
		d.Close()
		return sum, nil, err
	}
	d.digest = hex.EncodeToString(h.Sum(nil))
	sum.Digest, sum.PlaintextBytes = d.digest, size
	sum.IdentityKey, sum.Chain, sum.Source, sum.ExportedAt = doc.IdentityKey, doc.Source.Chain, doc.Source, doc.ExportedAt
	sum.ActiveStorage, _ = doc.User[wallet.Users.Col("activeStorage")].(string)
	sum.Counts = doc.Rows
	return sum, d, nil
}

// decryptToStaging decrypts the BRC-39 file in into a new nameless staging file and returns
// it once the whole tag verified; on any failure the plaintext is gone.
func decryptToStaging(ctx context.Context, in *os.File, password string, opts ImportOptions, sum *Summary, progress func(ImportProgress)) (*os.File, io.Closer, error) {
	if err := ensureStagingDir(opts.StagingDir); err != nil {
		return nil, nil, err
	}
	var size int64
	if fi, err := in.Stat(); err == nil {
		size = fi.Size()
	}
	pt, err := newPlaintextFile(opts.StagingDir)
	if err != nil {
		return nil, nil, err
	}
	derive := func(h brc39.Header) (brc39.Key, error) {
		return gated(ctx, opts.KDFGate, func() (brc39.Key, error) {
			start := time.Now()
			defer func() { sum.KDFTime = time.Since(start) }()
			if opts.keyFor != nil {
				return opts.keyFor(h)
			}
			return brc39.DeriveKey(ctx, password, h, opts.KDFLimits)
		})
	}
	h, err := brc39.DecryptWith(ctx, &progressReader{r: in, phase: PhaseDecrypting, total: size, report: progress}, pt, derive)
	if h.Salt != nil {
		kdf := h.KDF
		sum.KDF, sum.SaltBytes, sum.NonceBytes = &kdf, len(h.Salt), len(h.Nonce)
	}
	if err != nil {
		pt.Close()
		return nil, nil, err
	}
	return pt.File, pt, nil
}

// progressStep is how many bytes a progressReader reads between reports: a report per MiB
// keeps a multi-gigabyte file to a few thousand reports.
const progressStep = 1 << 20

// progressReader reports the bytes read through it.
type progressReader struct {
	r        io.Reader
	phase    ImportPhase
	n, total int64
	next     int64
	report   func(ImportProgress)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.n >= p.next || err == io.EOF {
		p.report(ImportProgress{Phase: p.phase, Done: p.n, Total: p.total})
		p.next = p.n + progressStep
	}
	return n, err
}

// reporter returns progress, or a callback that drops reports when it is nil.
func reporter(progress func(ImportProgress)) func(ImportProgress) {
	if progress == nil {
		return func(ImportProgress) {}
	}
	return progress
}
