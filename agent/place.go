package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"walletsync/agent/api"

	"walletsync/remote/auth"
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
		return run(ctx, h)
	}
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
