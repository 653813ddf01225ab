package agent

import (
	"context"
	"path/filepath"
)

// BackupListing is the body of GET /api/v1/destinations/{id}/backups: the folder's backup
// files, newest first, each with what the agent recorded about it and what retention does
// with it.
type BackupListing struct {
	Destination string         `json:"destination"`
	Files       []BackupListed `json:"files"`
	Retention   Retention      `json:"retention"`
}

// BackupListed is one backup file of a folder.
type BackupListed struct {
	Name string `json:"name"`
	// Record is what the agent knows of a file it wrote (nil for a file it did not write).
	Record *BackupRecord `json:"record,omitempty"`
	// Keep and Reasons are retention's decision as of now.
	Keep    bool     `json:"keep"`
	Reasons []string `json:"reasons,omitempty"`
}

// backupListing lists the backup files of folder destination id.
func (a *Agent) backupListing(ctx context.Context, id string) (BackupListing, error) {
	d, err := findDestination(a.config(), id)
	if err != nil {
		return BackupListing{}, err
	}
	out := BackupListing{Destination: d.ID, Retention: a.config().Retention, Files: []BackupListed{}}
	decisions, err := a.retentionPlan(ctx, d)
	if err != nil {
		return out, err
	}
	recs, err := a.state.Backups(ctx, d.ID)
	if err != nil {
		return out, err
	}
	byName := map[string]*BackupRecord{}
	for i := range recs {
		byName[filepath.Base(recs[i].Path)] = &recs[i]
	}
	for i := len(decisions) - 1; i >= 0; i-- { // names sort oldest first; list newest first
		dec := decisions[i]
		out.Files = append(out.Files, BackupListed{Name: dec.File.Name, Record: byName[dec.File.Name], Keep: dec.Keep, Reasons: dec.Reasons})
	}
	return out, nil
}
