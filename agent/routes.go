package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"walletsync/scheduler"
	"walletsync/wallet"
)

// Route is one route of the agent's API, written as its http.ServeMux pattern:
// "METHOD /api/v1/path", where a {name} wildcard is one path segment. The constants below
// are the API's one definition: the server serves exactly them (Server.routes and
// Agent.routes, in this file), the Client builds its requests from them, and the
// dashboard's web/api.js names the same paths.
type Route string

// The agent's API. Bodies are JSON; each comment says what the request carries (if
// anything) and what the answer is.
const (
	// Built into every Server.
	RouteStatus       Route = "GET /api/v1/status"             // Status
	RouteLoginURL     Route = "POST /api/v1/login-url"         // {"url": a one-time login URL}
	RouteEvents       Route = "GET /api/v1/events"             // Server-Sent Events; Last-Event-ID or ?since= resumes
	RouteTasks        Route = "GET /api/v1/tasks"              // []Task, newest first
	RouteTask         Route = "GET /api/v1/tasks/{id}"         // Task
	RouteTaskLog      Route = "GET /api/v1/tasks/{id}/log"     // []LogLine
	RouteTaskCancel   Route = "POST /api/v1/tasks/{id}/cancel" // Task, cancelling
	RouteSecrets      Route = "GET /api/v1/secrets"            // {"keys": [...]}; values are never read back
	RouteSecretSet    Route = "PUT /api/v1/secrets/{key}"      // {"value"} -> {"key", "warning"}
	RouteSecretDelete Route = "DELETE /api/v1/secrets/{key}"   // 204

	// The agent's own.
	RouteOverview          Route = "GET /api/v1/overview"                          // Overview
	RouteConfig            Route = "GET /api/v1/config"                            // Config
	RouteSettings          Route = "PUT /api/v1/settings"                          // SettingsRequest -> Config
	RouteWalletAdd         Route = "POST /api/v1/wallets"                          // WalletRef -> Config
	RouteDestinationAdd    Route = "POST /api/v1/destinations"                     // Destination -> Config
	RouteDestinationPut    Route = "PUT /api/v1/destinations/{id}"                 // Destination -> Config
	RouteDestinationDelete Route = "DELETE /api/v1/destinations/{id}"              // Config
	RouteRun               Route = "POST /api/v1/destinations/{id}/run"            // Task
	RoutePause             Route = "POST /api/v1/destinations/{id}/pause"          // PauseRequest or nothing -> Config
	RouteResume            Route = "POST /api/v1/destinations/{id}/resume"         // Config
	RoutePauseAll          Route = "POST /api/v1/pause"                            // PauseRequest or nothing -> Config
	RouteResumeAll         Route = "POST /api/v1/resume"                           // Config
	RouteBackups           Route = "GET /api/v1/destinations/{id}/backups"         // BackupListing
	RouteBackupVerify      Route = "POST /api/v1/destinations/{id}/backups/verify" // VerifyRequest -> Task
	RouteDrill             Route = "POST /api/v1/drill"                            // Task
	RouteExport            Route = "POST /api/v1/export"                           // ExportRequest -> Task
	RouteImportUpload      Route = "POST /api/v1/import/upload"                    // the file's bytes -> Upload
	RouteImportPreview     Route = "POST /api/v1/import/preview"                   // ImportRequest -> Task
	RouteImport            Route = "POST /api/v1/import"                           // ImportRequest, confirmed -> Task
	RouteImportAbandon     Route = "POST /api/v1/import/abandon"                   // AbandonRequest -> Task
	RouteService           Route = "GET /api/v1/service"                           // ServiceInfo
	RouteServiceInstall    Route = "POST /api/v1/service/install"                  // ServiceInfo
	RouteServiceUninstall  Route = "POST /api/v1/service/uninstall"                // ServiceInfo
	RoutePathCheck         Route = "POST /api/v1/paths/check"                      // PathCheckRequest -> PathCheck
	RouteWalletReplace     Route = "POST /api/v1/wallets/replace"                  // WalletReplaceRequest -> Config
	RouteBundlePreview     Route = "POST /api/v1/bundles/preview"                  // BundleRequest -> Task (a verify; its result a bundle.Manifest)
	RouteBundleRestore     Route = "POST /api/v1/bundles/restore"                  // BundleRequest, confirmed -> Task (its result BundleRestored)

	// Storage servers (storageserver.go, serverrestore.go).
	RouteServerDestinationAdd Route = "POST /api/v1/storage-servers"                 // ServerDestinationRequest, checked -> Config
	RouteServerDestinationPut Route = "PUT /api/v1/storage-servers/{id}"             // Destination, checked when its server changes -> Config
	RouteServerRestorePreview Route = "POST /api/v1/storage-servers/restore/preview" // ServerRestoreRequest -> Task
	RouteServerRestore        Route = "POST /api/v1/storage-servers/restore"         // ServerRestoreRequest, confirmed -> Task
)

// Method returns r's HTTP method.
func (r Route) Method() string {
	m, _, _ := strings.Cut(string(r), " ")
	return m
}

// Pattern returns r's path pattern, wildcards included.
func (r Route) Pattern() string {
	_, p, _ := strings.Cut(string(r), " ")
	return p
}

// Path returns r's path with args filling its wildcards in order, each escaped as one
// path segment (url.PathEscape), so that an id such as "a/b" stays one segment. It panics
// when the number of args differs from the number of wildcards: that is a bug in the
// caller, not bad input.
func (r Route) Path(args ...string) string {
	parts := strings.Split(r.Pattern(), "/")
	n := 0
	for i, p := range parts {
		if strings.HasPrefix(p, "{") {
			if n == len(args) {
				panic(fmt.Sprintf("route %s: %d arguments for more wildcards", r, len(args)))
			}
			parts[i] = url.PathEscape(args[n])
			n++
		}
	}
	if n != len(args) {
		panic(fmt.Sprintf("route %s: %d arguments for %d wildcards", r, len(args), n))
	}
	return strings.Join(parts, "/")
}

// withBody adapts a handler of a JSON request body of type T: the body is decoded (see
// DecodeJSON) before h runs.
func withBody[T any](h func(r *http.Request, body T) (any, error)) HandlerFunc {
	return func(r *http.Request) (any, error) {
		var body T
		if err := DecodeJSON(r, &body); err != nil {
			return nil, err
		}
		return h(r, body)
	}
}

// routes serves the routes built into every Server.
func (s *Server) routes() {
	s.mux.HandleFunc(string(RouteEvents), s.events)
	for route, h := range map[Route]HandlerFunc{
		RouteStatus: func(*http.Request) (any, error) {
			return Status{Version: s.opts.Version, PID: os.Getpid(), StartedAt: s.started,
				UptimeSeconds: int64(time.Since(s.started).Seconds()), Events: s.cursor(s.opts.Bus.Last())}, nil
		},
		RouteLoginURL:   func(*http.Request) (any, error) { return map[string]string{"url": s.LoginURL()}, nil },
		RouteTasks:      func(*http.Request) (any, error) { return s.opts.Tasks.List(), nil },
		RouteTask:       func(r *http.Request) (any, error) { return s.opts.Tasks.Get(r.PathValue("id")) },
		RouteTaskLog:    func(r *http.Request) (any, error) { return s.opts.Tasks.Log(r.PathValue("id")) },
		RouteTaskCancel: func(r *http.Request) (any, error) { return s.opts.Tasks.Cancel(r.PathValue("id")) },
	} {
		s.Handle(route, h)
	}
	if sec := s.opts.Secrets; sec != nil {
		// The secrets' keys can be listed and their values set or deleted, never read back.
		s.Handle(RouteSecrets, func(*http.Request) (any, error) {
			keys, err := sec.Keys()
			return map[string][]string{"keys": keys}, err
		})
		s.Handle(RouteSecretSet, withBody(func(r *http.Request, body struct {
			Value Secret `json:"value"`
		}) (any, error) {
			if err := sec.Set(r.PathValue("key"), body.Value); err != nil {
				return nil, err
			}
			return map[string]string{"key": r.PathValue("key"), "warning": LostPasswordWarning}, nil
		}))
		s.Handle(RouteSecretDelete, func(r *http.Request) (any, error) {
			return Reply{Status: http.StatusNoContent}, sec.Delete(r.PathValue("key"))
		})
	}
}

// routes serves the agent's own routes on top of the server's built-in ones, and the
// dashboard's files (Options.Dashboard) at "/".
func (a *Agent) routes() {
	if a.opts.Dashboard != nil {
		a.srv.HandleHTTP("GET /", a.opts.Dashboard)
	}
	a.srv.HandleUpload(RouteImportUpload, func(r *http.Request) (any, error) { return a.receiveUpload(r) })
	id := func(r *http.Request) string { return r.PathValue("id") }
	for route, h := range map[Route]HandlerFunc{
		RouteOverview:       func(r *http.Request) (any, error) { return a.Overview(r.Context()) },
		RouteConfig:         func(*http.Request) (any, error) { return a.config(), nil },
		RouteSettings:       withBody(func(_ *http.Request, s SettingsRequest) (any, error) { return a.saveSettings(s) }),
		RouteWalletAdd:      withBody(func(r *http.Request, ref WalletRef) (any, error) { return a.addWallet(r.Context(), ref) }),
		RouteDestinationAdd: withBody(func(_ *http.Request, d Destination) (any, error) { return a.addDestination(d) }),
		RouteDestinationPut: withBody(func(r *http.Request, d Destination) (any, error) {
			d.ID = id(r)
			return a.updateDestination(d.ID, func(old *Destination) { *old = d })
		}),
		RouteDestinationDelete: func(r *http.Request) (any, error) { return a.removeDestination(id(r)) },
		RouteRun:               func(r *http.Request) (any, error) { return a.runByHand(id(r)) },
		RoutePause: func(r *http.Request) (any, error) {
			d, err := decodePause(r)
			if err != nil {
				return nil, err
			}
			return a.configAfter(a.sched.Pause(r.Context(), id(r), d))
		},
		RouteResume: func(r *http.Request) (any, error) { return a.configAfter(a.sched.Resume(r.Context(), id(r))) },
		RoutePauseAll: func(r *http.Request) (any, error) {
			d, err := decodePause(r)
			if err != nil {
				return nil, err
			}
			return a.configAfter(a.sched.PauseAll(r.Context(), d))
		},
		RouteResumeAll: func(r *http.Request) (any, error) { return a.configAfter(a.sched.ResumeAll(r.Context())) },
		RouteBackups:   func(r *http.Request) (any, error) { return a.backupListing(r.Context(), id(r)) },
		RouteBackupVerify: withBody(func(r *http.Request, req VerifyRequest) (any, error) {
			return a.VerifyBackup(id(r), req.Name)
		}),
		RouteDrill:         func(*http.Request) (any, error) { return a.RunDrill("manual") },
		RouteExport:        withBody(func(_ *http.Request, req ExportRequest) (any, error) { return a.Export(req) }),
		RouteImportPreview: withBody(func(_ *http.Request, req ImportRequest) (any, error) { return a.startImport(KindImportPreview, req) }),
		RouteImport: withBody(func(_ *http.Request, req ImportRequest) (any, error) {
			if !req.Confirm {
				return nil, WithHint(fmt.Errorf("import without confirm: %w", wallet.ErrInvalidArgument), "look at the preview first, then confirm")
			}
			return a.startImport(KindImport, req)
		}),
		RouteImportAbandon:    withBody(func(_ *http.Request, req AbandonRequest) (any, error) { return a.AbandonImport(req.Wallet) }),
		RouteService:          func(*http.Request) (any, error) { return serviceInfo(), nil },
		RouteServiceInstall:   func(*http.Request) (any, error) { return serviceAction((*Service).Install) },
		RouteServiceUninstall: func(*http.Request) (any, error) { return serviceAction((*Service).Uninstall) },
		RoutePathCheck:        withBody(func(r *http.Request, req PathCheckRequest) (any, error) { return a.CheckPath(r.Context(), req) }),
		RouteWalletReplace: withBody(func(r *http.Request, req WalletReplaceRequest) (any, error) {
			return a.replaceWallet(r.Context(), req)
		}),
		RouteBundlePreview: withBody(func(_ *http.Request, req BundleRequest) (any, error) { return a.PreviewBundle(req) }),
		RouteBundleRestore: withBody(func(_ *http.Request, req BundleRequest) (any, error) { return a.RestoreBundle(req) }),
	} {
		a.srv.Handle(route, h)
	}
	a.storageServerRoutes()
}

// SettingsRequest is the body of PUT /api/v1/settings: what the Settings page edits besides the
// backup password (which goes to the secrets API) and the service.
type SettingsRequest struct {
	Retention Retention `json:"retention"`
	Drill     Schedule  `json:"drill"`
	LogLevel  LogLevel  `json:"logLevel"`
}

// PauseRequest is the body of a pause: for a duration ("1h", "8h"), or, empty, until resumed.
type PauseRequest struct {
	For Duration `json:"for,omitzero"`
}

// decodePause reads how long to pause; an empty body means until resumed.
func decodePause(r *http.Request) (time.Duration, error) {
	var req PauseRequest
	if r.ContentLength != 0 {
		if err := DecodeJSON(r, &req); err != nil {
			return 0, err
		}
	}
	return time.Duration(req.For), nil
}

// saveSettings applies the Settings page's edits to the config.
func (a *Agent) saveSettings(s SettingsRequest) (Config, error) {
	return a.updateConfig(func(c *Config) error {
		c.Retention, c.Drill, c.LogLevel = s.Retention, s.Drill, s.LogLevel
		return nil
	})
}

// addWallet adds (or replaces) the wallet ref, once the wallet opens.
func (a *Agent) addWallet(ctx context.Context, ref WalletRef) (Config, error) {
	if _, err := a.wallet(ctx, ref.Path); err != nil {
		return Config{}, WithHint(err, "give the path of a @bsv/wallet-toolbox SQLite wallet")
	}
	return a.updateConfig(func(c *Config) error {
		c.Wallets = slices.DeleteFunc(c.Wallets, func(w WalletRef) bool { return w.Path == ref.Path })
		c.Wallets = append(c.Wallets, ref)
		return nil
	})
}

// WalletReplaceRequest is the body of POST /api/v1/wallets/replace: protect the wallet
// file New in place of Old (a restored wallet made the one in use).
type WalletReplaceRequest struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// replaceWallet makes the agent protect req.New in place of req.Old, once New opens as a
// wallet: the same destinations back it up from now on. Old is left as it is, and the agent
// lets go of it (see releaseUnconfigured).
func (a *Agent) replaceWallet(ctx context.Context, req WalletReplaceRequest) (Config, error) {
	if _, err := a.wallet(ctx, req.New); err != nil {
		return Config{}, atPath(req.New, err)
	}
	cfg, err := a.updateConfig(func(c *Config) error {
		i := slices.IndexFunc(c.Wallets, func(w WalletRef) bool { return w.Path == req.Old })
		if i < 0 {
			return fmt.Errorf("wallet %q: %w", req.Old, wallet.ErrNotFound)
		}
		c.Wallets[i] = WalletRef{Path: req.New}
		for j := range c.Destinations {
			if c.Destinations[j].Wallet == req.Old {
				c.Destinations[j].Wallet = req.New
			}
		}
		return nil
	})
	if err == nil {
		a.releaseUnconfigured() // Old is no longer the agent's to hold
	}
	return cfg, err
}

// addDestination adds d; an id already in use is refused.
func (a *Agent) addDestination(d Destination) (Config, error) {
	return a.updateConfig(func(c *Config) error {
		if _, err := findDestination(*c, d.ID); err == nil {
			return fmt.Errorf("destination %q exists: %w", d.ID, wallet.ErrInvalidArgument)
		}
		c.Destinations = append(c.Destinations, d)
		return nil
	})
}

// removeDestination removes destination id.
func (a *Agent) removeDestination(id string) (Config, error) {
	return a.updateConfig(func(c *Config) error {
		if _, err := findDestination(*c, id); err != nil {
			return err
		}
		c.Destinations = slices.DeleteFunc(c.Destinations, func(d Destination) bool { return d.ID == id })
		return nil
	})
}

// runByHand starts destination id's job as the person asked, and tells the scheduler, so
// that a schedule counts from this run.
func (a *Agent) runByHand(id string) (Task, error) {
	t, err := a.RunDestination(id, "manual")
	if err == nil {
		a.sched.Ran(t.Target)
	}
	return t, err
}

// updateDestination applies change to destination id and saves the config.
func (a *Agent) updateDestination(id string, change func(*Destination)) (Config, error) {
	return a.updateConfig(func(c *Config) error {
		for i := range c.Destinations {
			if c.Destinations[i].ID == id {
				change(&c.Destinations[i])
				return nil
			}
		}
		return fmt.Errorf("destination %q: %w", id, wallet.ErrNotFound)
	})
}

// foreground runs a read of the wallet at path under a foreground grant of its access queue.
func (a *Agent) foreground(ctx context.Context, path string, read func(*walletHandle) error) error {
	w, err := a.wallet(ctx, path)
	if err != nil {
		return err
	}
	s := w.queue.NewSession("dashboard", path)
	g, err := s.Acquire(ctx, scheduler.Foreground, scheduler.Read)
	if err != nil {
		return err
	}
	defer s.Release(g)
	return read(w)
}

// configAfter answers a request that changed the config: the new config, or err.
func (a *Agent) configAfter(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return a.config(), nil
}
