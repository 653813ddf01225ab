package agent

import (
	"context"
	"path/filepath"
	"walletsync/agent/api"
)

// backupListing lists the backup files of folder destination id.
func (a *Agent) backupListing(ctx context.Context, id string) (api.BackupListing, error) {
	d, err := findDestination(a.config(), id)
	if err != nil {
		return api.BackupListing{}, err
	}
	out := api.BackupListing{Destination: d.ID, Retention: a.config().Retention, Files: []api.BackupListed{}}
	decisions, err := a.retentionPlan(ctx, d)
	if err != nil {
		return out, err
	}
	recs, err := a.backupsHere(ctx, d)
	if err != nil {
		return out, err
	}
	byName := map[string]*api.BackupRecord{}
	for i := range recs {
		byName[filepath.Base(recs[i].Path)] = &recs[i]
	}
	for i := len(decisions) - 1; i >= 0; i-- { // names sort oldest first; list newest first
		dec := decisions[i]
		out.Files = append(out.Files, api.BackupListed{Name: dec.File.Name, Record: byName[dec.File.Name], Keep: dec.Keep, Reasons: dec.Reasons})
	}
	return out, nil
}
