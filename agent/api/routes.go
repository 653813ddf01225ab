package api

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Route is one route of the agent's API, written as its http.ServeMux pattern:
// "METHOD /api/v1/path", where a {name} wildcard is one path segment. The constants below
// are the API's one definition: the server serves exactly them (Server.routes, in this
// file, and the daemon's own routes, agent/handlers.go), the Client builds its requests from them, and the
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
	RouteWalletsFound      Route = "GET /api/v1/wallets/found"                     // []FoundWallet
	RouteForgetBrowsers    Route = "POST /api/v1/browsers/forget"                  // 204: every browser is signed out
	RoutePasswordTest      Route = "POST /api/v1/password/test"                    // PasswordTestRequest -> PasswordTest
	RouteBundlePreview     Route = "POST /api/v1/bundles/preview"                  // BundleRequest -> Task (a verify; its result a bundle.Manifest)
	RouteBundleRestore     Route = "POST /api/v1/bundles/restore"                  // BundleRequest, confirmed -> Task (its result BundleRestored)
	RouteWalletCensus      Route = "POST /api/v1/wallets/census"                   // WalletRef -> WalletCensus

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
		s.Handle(RouteSecretSet, WithBody(func(r *http.Request, body struct {
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
