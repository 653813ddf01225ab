// Package frontend is walletsync's dashboard: one user interface, served by the agent on
// its loopback address and embedded in the desktop window. It is plain HTML, CSS and
// JavaScript modules with no build step, so `go build` from a clean clone needs no Node.
//
// The pages talk to the agent only through its HTTP API and its event stream; web/api.js
// is the one place that names the API's routes (those of agent/routes.go). In a browser
// the agent serves these files itself (agent.Options.Dashboard = Handler()), so the API
// is on the page's own origin and the login URL's cookie authenticates. A window that
// serves the files from elsewhere passes /api/ through its own asset server (with the
// agent's Origin on requests that change state), since the agent answers no cross-origin
// request, and may set, before web/app.js loads,
//
//	window.walletsyncConfig = {
//		token: "<token>",   // sent as "Authorization: Bearer <token>", the event stream included
//		chooseSavePath: (suggested) => Promise<string>, // optional native dialogs; without them
//		chooseOpenPath: () => Promise<string>,          // the Wails window's bindings
//		chooseFolder: () => Promise<string>,            // (window.go.main.App) are used
//	}
//
// as TestDashboard_DesktopWindowConfig does. With a native dialog at hand, the Export,
// Restore and destination pages offer a Browse button; without one (a browser), the
// typed path and the file drop remain.
package frontend

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed all:web
var files embed.FS

// Assets returns the dashboard's files (index.html at the root), for the desktop window's
// asset server.
func Assets() fs.FS {
	sub, err := fs.Sub(files, "web")
	if err != nil {
		panic(err) // the folder is embedded at build time; its absence is a build error
	}
	return sub
}

// ContentSecurityPolicy is the policy Handler serves the dashboard with: scripts, styles,
// images and connections of its own origin only, and nothing inline (no inline script,
// event handler attribute or style attribute), so that text an attacker gets into the
// page (a destination name, a file name, an error message) can never run as code.
// TestDashboard_ContentSecurityPolicy checks in Chromium that no page breaks it.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the dashboard's files, with ContentSecurityPolicy.
func Handler() http.Handler {
	files := http.FileServerFS(Assets())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", ContentSecurityPolicy)
		files.ServeHTTP(w, r)
	})
}
