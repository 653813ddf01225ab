package agent

import (
	"net/http"
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

// ServiceInfo is the body of GET /api/v1/service.
type ServiceInfo struct {
	Platform string        `json:"platform"`
	Status   ServiceStatus `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Hint     string        `json:"hint,omitempty"`
}

// moreRoutes adds the backup folder and service routes.
func (a *Agent) moreRoutes() {
	a.srv.Handle("GET", "/api/v1/destinations/{id}/backups", func(r *http.Request) (any, error) {
		d, err := a.config().destination(r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return a.backupListing(r, d)
	})
	a.srv.Handle("GET", "/api/v1/service", func(r *http.Request) (any, error) { return serviceInfo(), nil })
	a.srv.Handle("POST", "/api/v1/service/install", func(r *http.Request) (any, error) {
		return serviceAction(func(s *Service) error { return s.Install() })
	})
	a.srv.Handle("POST", "/api/v1/service/uninstall", func(r *http.Request) (any, error) {
		return serviceAction(func(s *Service) error { return s.Uninstall() })
	})
}

func (a *Agent) backupListing(r *http.Request, d Destination) (BackupListing, error) {
	out := BackupListing{Destination: d.ID, Retention: a.config().Retention, Files: []BackupListed{}}
	decisions, err := a.retentionPlan(r.Context(), d)
	if err != nil {
		return out, err
	}
	recs, err := a.state.Backups(r.Context(), d.ID)
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

// serviceInfo reports the platform service; an environment without a service manager is
// reported, not failed.
func serviceInfo() ServiceInfo {
	svc, err := NewService(ServiceOptions{})
	if err != nil {
		return ServiceInfo{Error: err.Error(), Hint: hintFor(err)}
	}
	info := ServiceInfo{Platform: svc.Platform()}
	if info.Status, err = svc.Status(); err != nil {
		info.Error, info.Hint = err.Error(), hintFor(err)
	}
	return info
}

func serviceAction(do func(*Service) error) (ServiceInfo, error) {
	svc, err := NewService(ServiceOptions{})
	if err != nil {
		return ServiceInfo{}, err
	}
	if err := do(svc); err != nil {
		return ServiceInfo{}, err
	}
	return serviceInfo(), nil
}

// hintFor is the hint a person sees for err.
func hintFor(err error) string {
	_, hint := classify(err)
	return hint
}
