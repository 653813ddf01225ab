package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"walletsync/agent/api"

	"walletsync/bundle"
	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// The backup file name: walletsync-<identity prefix>-<UTC time>.brc39.
const (
	backupNamePrefix  = "walletsync-"
	backupNameExt     = ".brc39"
	backupTimeLayout  = "20060102T150405Z" // ISO 8601 basic format: sorts as it reads, no ':' (Windows)
	identityPrefixLen = 8
)

// backupFileName returns the name of the backup file of identityKey (66 hex digits) taken
// at t: "walletsync-", the key's first 8 hex digits in lower case, "-", t in UTC to the
// second in ISO 8601 basic format, ".brc39"; for example
// walletsync-03ab12cd-20261129T201500Z.brc39. Names of one identity sort by time.
//
// Two backups of one identity within one second share a name: the writer must not
// replace an existing file. A key that is not hex gives a name parseBackupFileName
// refuses, so retention never counts or deletes such a file.
func backupFileName(identityKey string, t time.Time) string {
	prefix := strings.ToLower(identityKey[:min(len(identityKey), identityPrefixLen)])
	return backupNamePrefix + prefix + "-" + t.UTC().Format(backupTimeLayout) + backupNameExt
}

// parseBackupFileName returns the identity prefix and the UTC time in a name written by
// backupFileName. ok is false for any other name (another program's file, a temp file,
// a name in upper case or with anything added), which retention then leaves alone.
func parseBackupFileName(name string) (prefix string, t time.Time, ok bool) {
	rest, ok1 := strings.CutPrefix(name, backupNamePrefix)
	rest, ok2 := strings.CutSuffix(rest, backupNameExt)
	prefix, stamp, ok3 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || !ok3 || len(prefix) != identityPrefixLen || strings.Trim(prefix, "0123456789abcdef") != "" {
		return "", time.Time{}, false
	}
	t, err := time.Parse(backupTimeLayout, stamp)
	if err != nil || t.Format(backupTimeLayout) != stamp {
		return "", time.Time{}, false
	}
	return prefix, t, true
}

// The name of a whole-store bundle (a folder, see package bundle) in a bundle folder:
// walletsync-bundle-<UTC time>. Retention treats "bundle" as one more identity prefix.
const bundlePrefix = "bundle"

// BundleName returns the name of the bundle taken at t, for example
// walletsync-bundle-20261129T201500Z. Names sort by time; two bundles within one second
// share a name, and bundle.Create refuses a name that exists (so the bundle job waits for
// the next second when its name is taken).
func BundleName(t time.Time) string {
	return backupNamePrefix + bundlePrefix + "-" + t.UTC().Format(backupTimeLayout)
}

// parseBundleName returns the UTC time in a name written by BundleName.
func parseBundleName(name string) (time.Time, bool) {
	stamp, ok := strings.CutPrefix(name, backupNamePrefix+bundlePrefix+"-")
	t, err := time.Parse(backupTimeLayout, stamp)
	if !ok || err != nil || t.Format(backupTimeLayout) != stamp {
		return time.Time{}, false
	}
	return t, true
}

// backupFile is an entry of a backup folder, a backup or not: planRetention tells them
// apart.
type backupFile struct {
	Name string `json:"name"` // the file or bundle name, without the folder
	// Bundle is true for a folder: a whole-store bundle when its name is a bundle's.
	Bundle bool `json:"bundle,omitempty"`
}

// parseBackup returns the retention group (an identity prefix, or "bundle") and the time of
// a backup file or bundle; ok is false for anything else.
func parseBackup(f backupFile) (prefix string, t time.Time, ok bool) {
	if f.Bundle {
		t, ok = parseBundleName(f.Name)
		return bundlePrefix, t, ok
	}
	return parseBackupFileName(f.Name)
}

// readBackupDir returns the regular files and the folders in dir, in name order. Links and
// other special files are left out: retention never touches them.
func readBackupDir(dir string) ([]backupFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read backup folder: %w", err)
	}
	var files []backupFile
	for _, e := range entries {
		if e.Type().IsRegular() || e.IsDir() {
			files = append(files, backupFile{Name: e.Name(), Bundle: e.IsDir()})
		}
	}
	return files, nil
}

// retentionDecision is what retention does with one backup file, and why.
type retentionDecision struct {
	File backupFile `json:"file"`
	Keep bool       `json:"keep"`
	// Reasons say which rules keep the file ("one of the last 10", "newest of
	// 2026-11-28", "newest of week 2026-W48", "newest verified"); none when it goes.
	Reasons []string `json:"reasons,omitempty"`
}

// planRetention decides which backup files in a folder to keep under policy, as of now.
// It is a pure function: applyRetention carries the decisions out.
//
// Retention applies to each identity prefix on its own, as if each had its own folder.
// Of each identity it keeps:
//   - the newest policy.Last files (at least 1, whatever the policy says: an identity's
//     newest backup is never deleted);
//   - the newest file of each of the last policy.Daily days: today and the days before,
//     as UTC calendar dates;
//   - the newest file of each of the last policy.Weekly weeks: this ISO 8601 week
//     (Monday to Sunday, UTC) and the weeks before.
//
// Days and weeks are UTC so that a plan does not change with the machine's time zone
// or its daylight-saving changes, and the names, which carry UTC times, show the days
// that count. The day and week windows are calendar windows counted back from now:
// days without a backup use up their place, so "7 days" means the last week of the
// calendar, as a person reads it. A file dated after now (a clock set back) falls in no
// earlier day, so it is kept by the day and week it is dated in.
//
// The file named newestVerified (the newest backup a restore drill passed) is kept
// whatever the rules say. Files whose names parseBackupFileName refuses are neither
// counted nor touched: planRetention returns no decision for them. It returns one
// decision per distinct backup file name, in the order of files.
func planRetention(files []backupFile, policy api.Retention, newestVerified string, now time.Time) []retentionDecision {
	type backup struct {
		at   int // index in out
		time time.Time
	}
	var out []retentionDecision
	seen := map[string]bool{}
	byPrefix := map[string][]backup{}
	for _, f := range files {
		prefix, t, ok := parseBackup(f)
		if !ok || seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		byPrefix[prefix] = append(byPrefix[prefix], backup{at: len(out), time: t})
		out = append(out, retentionDecision{File: f})
	}

	now = now.UTC()
	last := max(policy.Last, 1)
	daily, weekly := max(policy.Daily, 0), max(policy.Weekly, 0)
	y, m, d := now.Date()
	firstDay := time.Date(y, m, d-(daily-1), 0, 0, 0, 0, time.UTC)
	sinceMonday := (int(now.Weekday()) + 6) % 7
	firstWeek := time.Date(y, m, d-sinceMonday-7*(weekly-1), 0, 0, 0, 0, time.UTC)
	lastReason := fmt.Sprintf("one of the last %d", last)

	for _, group := range byPrefix {
		slices.SortFunc(group, func(a, b backup) int { // newest first
			return cmp.Or(b.time.Compare(a.time), strings.Compare(out[b.at].File.Name, out[a.at].File.Name))
		})
		days, weeks := map[string]bool{}, map[string]bool{}
		for rank, b := range group {
			dec := &out[b.at]
			if rank < last {
				dec.Reasons = append(dec.Reasons, lastReason)
			}
			// Newest first, so the first file met of a day or week is its newest.
			if day := b.time.Format(time.DateOnly); daily > 0 && !b.time.Before(firstDay) && !days[day] {
				days[day] = true
				dec.Reasons = append(dec.Reasons, "newest of "+day)
			}
			wy, wn := b.time.ISOWeek()
			if week := fmt.Sprintf("%04d-W%02d", wy, wn); weekly > 0 && !b.time.Before(firstWeek) && !weeks[week] {
				weeks[week] = true
				dec.Reasons = append(dec.Reasons, "newest of week "+week)
			}
			if newestVerified != "" && dec.File.Name == newestVerified {
				dec.Reasons = append(dec.Reasons, "newest verified")
			}
			dec.Keep = len(dec.Reasons) > 0
		}
	}
	return out
}

// applyRetention deletes from dir the files and bundles that decisions do not keep, and
// nothing else, then fsyncs dir so that the deletions survive a power cut. It checks every
// name first and refuses the whole list, deleting nothing, if an entry to delete is not a
// backup file or a bundle folder with its manifest (wallet.ErrInvalidArgument): decisions
// that did not come from planRetention must not reach another program's files. An entry
// already gone counts as deleted. It stops at the first failed deletion, and between
// deletions when ctx ends.
func applyRetention(ctx context.Context, dir string, decisions []retentionDecision) error {
	for _, d := range decisions {
		if _, _, ok := parseBackup(d.File); !d.Keep && !ok {
			return fmt.Errorf("apply retention in %s: delete %q: not a backup file: %w", dir, d.File.Name, wallet.ErrInvalidArgument)
		}
		if !d.Keep && d.File.Bundle && !bundleOrGone(filepath.Join(dir, d.File.Name)) {
			return fmt.Errorf("apply retention in %s: delete %q: a folder without a bundle manifest: %w", dir, d.File.Name, wallet.ErrInvalidArgument)
		}
	}
	deleted := false
	var err error
	for _, d := range decisions {
		if d.Keep {
			continue
		}
		if err = ctx.Err(); err != nil {
			break
		}
		remove := os.Remove
		if d.File.Bundle {
			remove = removeBundle
		}
		if rerr := remove(filepath.Join(dir, d.File.Name)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("delete %s: %w", d.File.Name, rerr)
			break
		}
		deleted = true
	}
	if deleted {
		if serr := safefile.SyncDir(dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("sync folder: %w", serr))
		}
	}
	if err != nil {
		return fmt.Errorf("apply retention in %s: %w", dir, err)
	}
	return nil
}

// bundleOrGone reports whether path is a bundle folder (it holds a manifest) or is gone.
func bundleOrGone(path string) bool {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return true
	}
	fi, err := os.Lstat(filepath.Join(path, bundle.ManifestName))
	return err == nil && fi.Mode().IsRegular()
}

// removeBundle deletes a bundle folder with its manifest last, so that a deletion a crash
// interrupted leaves a folder that still reads as a bundle, which the next retention run
// finishes deleting (one without its manifest would be left alone for good).
func removeBundle(path string) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != bundle.ManifestName {
			if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(filepath.Join(path, bundle.ManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Remove(path)
}
