package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"walletsync/agent/api"

	"walletsync/internal/safefile"
	"walletsync/remote/auth"
	"walletsync/wallet"
)

// backupKinds are the task kinds that bring a destination up to date: a success of one of
// them is a good backup, whatever the destination's kind.
var backupKinds = []api.TaskKind{api.KindSync, api.KindBackup, api.KindBundle}

// placeOf is the fingerprint of the place where d keeps the wallet: its kind, where it is
// (the cleaned path, or the server's URL) and, for a storage server, who signs for it (the
// BRC-100 wallet's URL, or the public key of the key in the secrets). A destination's
// history belongs to its place: an edit that changes any of these makes a new place, which
// holds no backup until a run there succeeds. The path is not resolved through links, so
// that a disk mounted again at the same path is the same place.
func (a *Agent) placeOf(d api.Destination) string {
	where := filepath.Clean(d.Path)
	signer := ""
	if d.Kind == api.DestinationStorageServer {
		where = strings.TrimRight(strings.TrimSpace(d.Path), "/")
		signer = d.WalletURL
		if signer == "" {
			signer = a.storageKeyPub(d)
		}
	}
	sum := sha256.Sum256([]byte(string(d.Kind) + "\x00" + where + "\x00" + signer))
	return hex.EncodeToString(sum[:16])
}

// storageKeyPub is the public key of the key that signs for the storage server d, "" when
// there is none yet (the place then changes once one is set, which is a new signer).
func (a *Agent) storageKeyPub(d api.Destination) string {
	sec, err := a.secrets.Get(storageKeySecret(d.ID))
	if err != nil {
		return ""
	}
	key, err := auth.ParseKeyFile([]byte(strings.TrimSpace(sec.Reveal()) + "\n"))
	if err != nil {
		return ""
	}
	return hex.EncodeToString(key.PubKey().SerializeCompressed())
}

// placedJob returns run as a job that first records d's place on its task, so that the
// task counts for that place only.
func (a *Agent) placedJob(d api.Destination, run RunFunc) RunFunc {
	place := a.placeOf(d)
	return func(ctx context.Context, h *TaskHandle) error {
		h.SetPlace(place)
		if err := a.checkPresent(ctx, d, place); err != nil {
			return err
		}
		if err := a.checkAtRun(d); err != nil {
			return err
		}
		if err := a.claimPlace(ctx, d, place); err != nil {
			return err
		}
		err := run(ctx, h)
		if _, serr := os.Lstat(d.Path); d.Kind == api.DestinationSQLite && serr == nil {
			// The run made (or opened) the backup wallet file: from now on it is the
			// place written before.
			err = errors.Join(err, a.state.RecordPlace(ctx, d.ID, place, d.Path, a.now()))
		}
		return err
	}
}

// PlaceMarkerPrefix begins the name of the marker a folder destination keeps in its folder
// (".walletsync-destination-<id>", one per destination, so that two destinations sharing
// a parent each keep their own): it says "this is the folder I wrote to", so that an
// empty mount point left by an unplugged disk is told apart from the folder on the disk.
const PlaceMarkerPrefix = ".walletsync-destination-"

// placeMarker is the content of a folder's marker, JSON: who keeps the folder, for a
// person who finds the file.
type placeMarker struct {
	Destination string              `json:"destination"`
	Name        string              `json:"name"`
	Kind        api.DestinationKind `json:"kind"`
	Since       time.Time           `json:"since"`
	Note        string              `json:"note"`
}

// markerPath is the path of folder destination d's marker.
func markerPath(d api.Destination) string {
	return filepath.Join(d.Path, PlaceMarkerPrefix+d.ID)
}

// placeWritten returns when a run of d first wrote at place, the zero time when none has:
// the state's record of it, or, for a folder that an older walletsync wrote backups into
// before places were recorded, the time of its oldest recorded backup there.
func (a *Agent) placeWritten(ctx context.Context, d api.Destination, place string) (time.Time, []api.BackupRecord, error) {
	since, err := a.state.PlaceWritten(ctx, d.ID, place)
	if err != nil || d.Kind == api.DestinationSQLite || d.Kind == api.DestinationStorageServer {
		return since, nil, err
	}
	recs, err := a.backupsHere(ctx, d)
	if err != nil {
		return since, nil, err
	}
	if since.IsZero() && len(recs) > 0 {
		since = recs[len(recs)-1].CreatedAt // newest first
	}
	return since, recs, nil
}

// checkPresent refuses d's run with a MissingPlaceError when a run of d wrote at its place
// before and the place is not there now: the folder is gone, or it holds neither d's
// marker nor any backup d recorded there (an empty mount point: the disk is not
// connected); for a backup wallet file, its folder or the file is gone. It only looks: the
// next run proceeds once the disk is back. A place never written to passes (the first run
// creates it).
func (a *Agent) checkPresent(ctx context.Context, d api.Destination, place string) error {
	if d.Kind == api.DestinationStorageServer {
		return nil
	}
	since, recs, err := a.placeWritten(ctx, d, place)
	if err != nil || since.IsZero() {
		return err
	}
	missing := func(what, path string) error {
		return api.WithHint(api.AtPath(path, &MissingPlaceError{Destination: d.Name, What: what, Path: path, Since: since}),
			"Connect the disk (or put the folder back where it was): the next run then goes ahead. If it is gone for good, give the destination a new place.")
	}
	if d.Kind == api.DestinationSQLite {
		if dir := filepath.Dir(d.Path); !exists(dir) {
			return missing("folder", dir)
		}
		if !exists(d.Path) {
			return missing("backup wallet file", d.Path)
		}
		return nil
	}
	if !exists(d.Path) {
		return missing("folder", d.Path)
	}
	if exists(markerPath(d)) {
		return nil
	}
	for _, r := range recs {
		if exists(r.Path) {
			return nil // a folder an older walletsync wrote, before it kept markers
		}
	}
	return missing("folder", d.Path)
}

// exists reports whether path is there (a link counts as there).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// claimPlace makes folder destination d's folder on its first run (never again: see
// checkPresent), writes d's marker into it when it has none, and records that d writes
// at place. A backup wallet file is recorded once a run has made it (placedJob).
func (a *Agent) claimPlace(ctx context.Context, d api.Destination, place string) error {
	if d.Kind != api.DestinationFolder && d.Kind != api.DestinationBundles {
		return nil
	}
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return api.WithHint(api.AtPath(d.Path, fmt.Errorf("make the folder of %s: %w", d.Name, err)), "Check that the disk is connected and writable.")
	}
	if !exists(markerPath(d)) {
		b, err := json.MarshalIndent(placeMarker{Destination: d.ID, Name: d.Name, Kind: d.Kind, Since: a.now().UTC(),
			Note: "walletsync writes this folder's backups for the destination named here; keep this file: without it an empty folder reads as a disk that is not connected"}, "", "  ")
		if err != nil {
			return err
		}
		if err := safefile.WriteAtomic(markerPath(d), append(b, '\n'), 0o600); err != nil {
			return api.AtPath(d.Path, fmt.Errorf("write the marker of %s: %w", d.Name, err))
		}
	}
	return a.state.RecordPlace(ctx, d.ID, place, d.Path, a.now())
}

// checkAtRun checks again, before a run opens anything for writing, the rules CheckPath
// checked when d was added (not a configured wallet, nor its -wal or -shm, under any
// spelling or link; not inside the agent's data folder; the right kind of thing), on d's
// path as it resolves now: a path that did not exist when it was added may be a link to
// the wallet by now. A storage server has no path, and passes.
func (a *Agent) checkAtRun(d api.Destination) error {
	purpose := api.PathBackupFolder
	switch d.Kind {
	case api.DestinationStorageServer:
		return nil
	case api.DestinationSQLite:
		purpose = api.PathBackupWallet
	}
	p := resolvePath(d.Path)
	refuse := func(reason, hint string) error {
		return api.WithHint(api.AtPath(p, &PlaceError{Destination: d.Name, Path: p, Reason: reason}), hint)
	}
	for _, w := range a.config().Wallets {
		for _, f := range []string{w.Path, w.Path + "-wal", w.Path + "-shm"} {
			if p == resolvePath(f) || safefile.SameFile(p, f) {
				return refuse(fmt.Sprintf("%s is the wallet %s itself (or its journal)", d.Path, w.Path),
					"A backup must be somewhere else: point the destination at another file or folder.")
			}
		}
	}
	c, err := a.checkPath(api.PathCheckRequest{Path: p, Purpose: purpose})
	if err != nil {
		return err
	}
	if !c.OK {
		return refuse(strings.TrimSuffix(c.Message, "."), c.Hint)
	}
	return nil
}

// resolvePath is p, cleaned, with every link resolved, a dangling one too (a run would
// create its target): p's own if it exists, else its folder's, else p cleaned.
func resolvePath(p string) string {
	p = filepath.Clean(p)
	for range 40 { // as many links as Linux follows
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return p
}

// adoptPlaces gives the tasks that were recorded before tasks named their place (an older
// walletsync) the place each destination has now: the history they tell was taken there,
// as far as anyone knows, and later edits then start new places as they should.
func (a *Agent) adoptPlaces(ctx context.Context, cfg api.Config) error {
	places := map[string]string{}
	for _, d := range cfg.Destinations {
		places[d.ID] = a.placeOf(d)
	}
	return a.tasks.AdoptPlaces(ctx, func(t api.Task) string {
		if !slices.Contains(backupKinds, t.Kind) {
			return ""
		}
		return places[t.Target]
	})
}

// movedDestinations returns the ids of the destinations of next whose place differs from
// the one they had in prev: those hold no backup yet and are run at once.
func (a *Agent) movedDestinations(prev, next api.Config) []string {
	var moved []string
	for _, d := range next.Destinations {
		i := slices.IndexFunc(prev.Destinations, func(o api.Destination) bool { return o.ID == d.ID })
		if i >= 0 && a.placeOf(prev.Destinations[i]) != a.placeOf(d) {
			moved = append(moved, d.ID)
		}
	}
	return moved
}

// backupsHere returns d's backup records (newest first) that lie in the folder d names now:
// the records of a folder it used before are not backups of this place.
func (a *Agent) backupsHere(ctx context.Context, d api.Destination) ([]api.BackupRecord, error) {
	recs, err := a.state.Backups(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	dir := filepath.Clean(d.Path)
	return slices.DeleteFunc(recs, func(r api.BackupRecord) bool { return filepath.Dir(r.Path) != dir }), nil
}

// placeFree refuses d (wallet.ErrInvalidArgument, in words) when another destination of c
// already uses its place, of any kind and under any spelling (cleaned, absolute, links
// resolved): the same path, or a folder inside the other's folder, or the other inside
// d's. Two destinations in one place count one file twice and delete each other's files.
func placeFree(c api.Config, d api.Destination) error {
	if d.Kind == api.DestinationStorageServer {
		return nil // a server keeps each identity's data apart
	}
	p := resolvePath(d.Path)
	for _, o := range c.Destinations {
		if o.ID == d.ID || o.Kind == api.DestinationStorageServer {
			continue
		}
		q := resolvePath(o.Path)
		if p == q || within(p, q) || within(q, p) || safefile.SameFile(d.Path, o.Path) {
			return fmt.Errorf("%s is already used by the destination %s (%s): give each destination a place of its own: %w",
				d.Path, o.Name, o.Path, wallet.ErrInvalidArgument)
		}
	}
	return nil
}
