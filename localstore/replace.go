package localstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// Replace swaps a whole new wallet file in for an existing one (a bundle restore) so that the
// path holds the old wallet or the new one, whole, whatever moment a crash or a kill lands on:
//
//  1. take the writer lock (any walletsync process holding the wallet refuses the replace);
//  2. stage: the caller writes the new file at the staging path beside the target (same
//     folder, so the final rename is atomic); it is fsynced;
//  3. fold the old wallet's WAL into its main file (journal_mode DELETE): a -wal left beside
//     the path would otherwise be replayed into the new file on its next open;
//  4. write the recovery marker (the staged file's SHA-256), fsync it and the folder;
//  5. keep the old file under a second name (a hard link), rename the staged file over the
//     path, fsync the folder;
//  6. remove the old file, fsync, remove the marker, fsync.
//
// After a crash, the next Open of the path (or RecoverReplace) reads the marker: a staged file
// that is still whole is swapped in (the replace finishes); a staged file that is missing means
// the swap happened, and the path is checked against the marker's digest before the old file
// and the marker go. The hook points name the durable steps, for crash tests.
const (
	// HookBeforeStage: the lock is held; nothing is written yet.
	HookBeforeStage = "before-stage"
	// HookStaged: the new file is staged and durable; no marker yet.
	HookStaged = "staged"
	// HookMarked: the marker is durable; the path still holds the old wallet.
	HookMarked = "marked"
	// HookSwapped: the path holds the new wallet durably; the old file and the marker remain.
	HookSwapped = "swapped"
	// HookOldRemoved: the old file is gone; the marker is not yet cleared.
	HookOldRemoved = "old-removed"
)

// ReplaceOptions tune Replace.
type ReplaceOptions struct {
	// BusyTimeout bounds the wait for other connections while folding the old WAL
	// (DefaultBusyTimeout when 0).
	BusyTimeout time.Duration
	// Hook, when set, is called at each durable step (HookBeforeStage ... HookOldRemoved). It
	// exists for fault injection; production code leaves it nil.
	Hook func(point string)
}

// replaceMarker is the recovery marker's content.
type replaceMarker struct {
	Format int `json:"format"`
	// SHA256 is the staged file's digest, hex: what the path holds once the swap happened.
	SHA256 string `json:"sha256"`
	// HadOld says whether the path held a wallet before the replace.
	HadOld bool `json:"hadOld"`
}

const replaceMarkerFormat = 1

// maxMarkerBytes bounds the marker read at every open; a real one is about 120 bytes.
const maxMarkerBytes = 4 << 10

func markerPath(target string) string { return target + ".walletsync-restore" }
func stagedPath(target string) string { return target + ".walletsync-restore-new" }
func oldPath(target string) string    { return target + ".walletsync-restore-old" }

// Replace replaces (or creates) the wallet file at target with the file that stage writes at
// the path it is given, in the steps described above. stage must create that file (it does
// not exist) and return only once the file is complete and checked; Replace fsyncs it. When
// stage fails, or anything before the swap does, the target is untouched and the staged file
// removed. A walletsync process holding the target refuses the replace with a
// *wallet.LockedError, another program's open connection with wallet.ErrBusy.
func Replace(ctx context.Context, target string, stage func(ctx context.Context, staged string) error, opts ReplaceOptions) (err error) {
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	hook := opts.Hook
	if hook == nil {
		hook = func(string) {}
	}
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		return fmt.Errorf("replace %s: a folder, not a wallet file: %w", target, wallet.ErrInvalidArgument)
	}
	lock, err := acquireWriterLock(target)
	if err != nil {
		return fmt.Errorf("replace wallet: %w", err)
	}
	defer func() { err = lock.releaseJoin(err) }()
	if _, err := recoverLocked(ctx, target, opts.BusyTimeout); err != nil {
		return fmt.Errorf("replace wallet: finish the interrupted restore first: %w", err)
	}

	hook(HookBeforeStage)
	staged := stagedPath(target)
	ok := false
	defer func() {
		if !ok {
			os.Remove(staged)
			os.Remove(staged + "-journal")
		}
	}()
	if err := stage(ctx, staged); err != nil {
		return fmt.Errorf("replace wallet: stage: %w", err)
	}
	sum, err := fileSHA256(staged)
	if err == nil {
		err = syncFile(staged)
	}
	if err == nil {
		err = safefile.SyncDir(filepath.Dir(target))
	}
	if err != nil {
		return fmt.Errorf("replace wallet: stage: %w", classify(err))
	}
	hook(HookStaged)

	_, statErr := os.Stat(target)
	hadOld := statErr == nil
	if hadOld {
		if err := foldWAL(ctx, target, opts.BusyTimeout); err != nil {
			return fmt.Errorf("replace wallet: %w", err)
		}
	}
	m, _ := json.Marshal(replaceMarker{Format: replaceMarkerFormat, SHA256: sum, HadOld: hadOld})
	if err := safefile.WriteAtomic(markerPath(target), m, 0o600); err != nil {
		return fmt.Errorf("replace wallet: write the recovery marker: %w", classify(err))
	}
	ok = true // from here on, recovery owns the staged file
	hook(HookMarked)
	if err := swap(target, hadOld); err != nil {
		return fmt.Errorf("replace wallet: %w", err)
	}
	hook(HookSwapped)
	return finish(target, hook)
}

// swap keeps the old wallet under oldPath (a hard link), renames the staged file over target
// and fsyncs the folder.
func swap(target string, hadOld bool) error {
	dir := filepath.Dir(target)
	if hadOld {
		if err := os.Remove(oldPath(target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return classify(err)
		}
		if err := os.Link(target, oldPath(target)); err != nil {
			return fmt.Errorf("keep the old wallet: %w", classify(err))
		}
	}
	if err := os.Rename(stagedPath(target), target); err != nil {
		return fmt.Errorf("swap in the new wallet: %w", classify(err))
	}
	return classify(safefile.SyncDir(dir))
}

// finish removes the old wallet and then the marker, each removal made durable.
func finish(target string, hook func(string)) error {
	dir := filepath.Dir(target)
	if err := os.Remove(oldPath(target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the old wallet: %w", classify(err))
	}
	if err := safefile.SyncDir(dir); err != nil {
		return classify(err)
	}
	if hook != nil {
		hook(HookOldRemoved)
	}
	if err := os.Remove(markerPath(target)); err != nil {
		return fmt.Errorf("clear the recovery marker: %w", classify(err))
	}
	return classify(safefile.SyncDir(dir))
}

// foldWAL folds an old wallet's WAL into its main file (selfContained), so that nothing of
// the old wallet can pair with a new main file renamed over it.
func foldWAL(ctx context.Context, path string, busy time.Duration) error {
	if err := selfContained(ctx, path, busy, true); err != nil {
		return fmt.Errorf("fold the old wallet's WAL: %w", err)
	}
	return nil
}

// Recovery outcomes of RecoverReplace.
const (
	// RecoveredNothing: no replace was interrupted.
	RecoveredNothing = ""
	// RecoveredFinished: an interrupted replace was carried through; the path holds the new
	// wallet.
	RecoveredFinished = "finished"
	// RecoveredRolledBack: an interrupted replace was undone; the path holds the old wallet.
	RecoveredRolledBack = "rolled back"
)

// RecoverReplace finishes or rolls back a Replace that a crash interrupted at target, and
// says which (RecoveredNothing when there was none). Open calls it first, so every command
// that opens a wallet recovers it. It costs two stats when there is nothing to do. When
// another walletsync process holds the wallet it leaves the files alone (that process
// recovered them when it opened the wallet) and returns the *wallet.LockedError.
func RecoverReplace(ctx context.Context, target string, busy time.Duration) (_ string, err error) {
	if busy == 0 {
		busy = DefaultBusyTimeout
	}
	if !exists(markerPath(target)) && !exists(stagedPath(target)) {
		return RecoveredNothing, nil
	}
	lock, err := acquireWriterLock(target)
	if err != nil {
		return RecoveredNothing, fmt.Errorf("recover an interrupted restore: %w", err)
	}
	defer func() { err = lock.releaseJoin(err) }()
	return recoverLocked(ctx, target, busy)
}

// recoverLocked is RecoverReplace with the writer lock held.
func recoverLocked(ctx context.Context, target string, busy time.Duration) (string, error) {
	dir := filepath.Dir(target)
	m, err := readMarker(markerPath(target))
	if errors.Is(err, fs.ErrNotExist) {
		// A crash while staging leaves a staged file and no marker: the target was never
		// touched, and the staged file is garbage.
		if err := os.Remove(stagedPath(target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return RecoveredNothing, classify(err)
		}
		os.Remove(stagedPath(target) + "-journal")
		return RecoveredNothing, nil
	}
	if err != nil {
		return RecoveredNothing, err
	}
	if exists(stagedPath(target)) {
		// The swap did not happen: the target holds the old wallet (or nothing). The staged
		// file was checked and made durable before the marker, so carry the swap through when
		// it is still the file the marker names; otherwise undo.
		if sum, err := fileSHA256(stagedPath(target)); err == nil && sum == m.SHA256 {
			if m.HadOld {
				if err := foldWAL(ctx, target, busy); err != nil {
					return RecoveredNothing, err
				}
			}
			if err := swap(target, m.HadOld); err != nil {
				return RecoveredNothing, err
			}
			return RecoveredFinished, finish(target, nil)
		}
		for _, p := range []string{stagedPath(target), oldPath(target)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return RecoveredNothing, classify(err)
			}
		}
		if err := safefile.SyncDir(dir); err != nil {
			return RecoveredNothing, classify(err)
		}
		if err := os.Remove(markerPath(target)); err != nil {
			return RecoveredNothing, classify(err)
		}
		return RecoveredRolledBack, classify(safefile.SyncDir(dir))
	}
	// The staged file is gone, so the rename happened: the target must be the new wallet.
	sum, err := fileSHA256(target)
	if err != nil {
		return RecoveredNothing, classify(err)
	}
	if sum != m.SHA256 {
		return RecoveredNothing, fmt.Errorf("interrupted restore of %s: the wallet's digest differs from the marker's and no staged file remains; %s and %s are left as they are: %w",
			target, markerPath(target), oldPath(target), wallet.ErrCorrupt)
	}
	return RecoveredFinished, finish(target, nil)
}

func readMarker(path string) (replaceMarker, error) {
	var m replaceMarker
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMarkerBytes+1))
	if err != nil {
		return m, classify(err)
	}
	if len(b) > maxMarkerBytes || json.Unmarshal(b, &m) != nil || m.Format != replaceMarkerFormat || len(m.SHA256) != 2*sha256.Size {
		return m, fmt.Errorf("restore marker %s is not one this walletsync wrote: %w", path, wallet.ErrCorrupt)
	}
	return m, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// recoverOnOpen runs RecoverReplace for Open and logs what it did. A wallet held by another
// walletsync process is left to it: Open's own lock (or, read-only, the whole file that a
// replace always leaves at the path) covers that case.
func recoverOnOpen(ctx context.Context, path string, busy time.Duration, log *slog.Logger) error {
	done, err := RecoverReplace(ctx, path, busy)
	if errors.Is(err, wallet.ErrWriterLocked) {
		return nil
	}
	if err != nil {
		return err
	}
	if done != RecoveredNothing {
		log.Warn("an interrupted restore was recovered", "path", path, "outcome", done)
	}
	return nil
}
