// Package frontend is walletsync's dashboard: one user interface, served by the agent on
// its loopback address and embedded in the desktop window. It is plain HTML, CSS and
// JavaScript modules with no build step, so `go build` from a clean clone needs no Node.
//
// The pages talk to the agent only through its HTTP API and its event stream
// (web/api.js, web/events.js). In a browser the agent serves these files itself, so the
// API is on the page's own origin and the login URL's cookie authenticates. A window that
// serves the files from elsewhere sets, before web/app.js loads,
//
//	window.walletsyncConfig = {
//		base: "",            // the API's origin; "" is the page's own (an asset server that proxies /api/)
//		token: "<token>",    // sent as "Authorization: Bearer <token>", the event stream included
//		chooseSavePath: (suggested) => Promise<string>, // optional: a native save dialog
//		chooseOpenPath: () => Promise<string>,          // optional: a native open dialog
//	}
//
// The agent answers no cross-origin request, so a window on another origin passes /api/
// through its own asset server (with the agent's Origin on requests that change state),
// as TestDashboard_DesktopWindowConfig does.
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

// Handler serves the dashboard's files.
func Handler() http.Handler { return http.FileServerFS(Assets()) }
