package desktop

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"walletsync/agent/api"
)

// windowOrigins are the origins of the dashboard page inside the desktop window: Wails
// serves it from wails://wails on Linux and macOS and from http://wails.localhost on
// Windows (WebView2).
var windowOrigins = map[string]bool{
	"wails://wails":           true,
	"http://wails.localhost":  true,
	"https://wails.localhost": true,
}

// endpointWait bounds how long a request waits for the App to reach the agent: the page can
// ask before startup has connected (Wails runs OnStartup beside the first page load).
const endpointWait = 30 * time.Second

// APIProxy is the window's way to the agent's API. The page in the window asks its own
// origin for /api/v1/... exactly as it asks the agent in a browser; the Wails asset server
// hands those requests (every one that is not a file of the dashboard) to the proxy, which
// forwards them to the agent with the token and the agent's own Origin, and streams the
// answer back, the event stream included.
//
// Why a proxy rather than giving the page the agent's address and token: from the page's
// origin every call to http://127.0.0.1:<port> is cross-origin. The agent refuses
// state-changing requests from another Origin and sends no CORS headers, so the browser
// engine would not even let the page read a GET answer; loosening either would weaken the
// agent for every browser on the machine. Through the proxy the agent's rules stay as
// they are, the token never enters the page, and the dashboard needs no desktop-specific
// code path.
//
// The proxy keeps the agent's Origin rule at its own door: a request that changes state
// must come from the window's page (an Origin, or without one a Referer, of windowOrigins),
// so a foreign page the webview might be led to cannot borrow the token the proxy adds.
type APIProxy struct {
	// Endpoint returns the agent's current address and token, waiting until the App has
	// connected (or failed to) or ctx ends.
	Endpoint EndpointFunc
	// Transport carries the requests to the agent (http.DefaultTransport in the window).
	Transport http.RoundTripper
	Log       *slog.Logger // required
}

// ServeHTTP forwards r to the agent when it is an API request the window may make, and
// answers with the agent's JSON error shape otherwise: 404 outside /api/, 403 for a
// state-changing request from another origin, 502 when the agent cannot be reached.
func (p *APIProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		writeAPIError(w, &api.APIError{Status: http.StatusNotFound, Code: "not_found", Message: "no file or route " + r.URL.Path})
		return
	}
	if !safeMethod(r.Method) && !fromWindow(r) {
		writeAPIError(w, &api.APIError{Status: http.StatusForbidden, Code: "cross_origin",
			Message: r.Method + " request from outside the walletsync window"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), endpointWait)
	e, err := p.Endpoint(ctx)
	cancel()
	if err != nil {
		p.unreachable(w, r, err)
		return
	}
	target := &url.URL{Scheme: "http", Host: e.Addr}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			h := pr.Out.Header
			for _, k := range []string{"Cookie", "Referer", "Origin", "Authorization"} {
				h.Del(k)
			}
			h.Set("Authorization", "Bearer "+e.Token)
			if !safeMethod(pr.Out.Method) {
				h.Set("Origin", target.String())
			}
		},
		Transport: p.Transport,
		// The event stream must reach the page event by event; the proxy flushes every
		// write rather than waiting for a buffer to fill.
		FlushInterval: -1,
		ErrorHandler:  p.unreachable,
	}
	rp.ServeHTTP(w, r)
}

// unreachable answers a request the agent could not take.
func (p *APIProxy) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	p.Log.Warn("window request: agent unreachable", "method", r.Method, "path", r.URL.Path, "err", err)
	writeAPIError(w, &api.APIError{Status: http.StatusBadGateway, Code: "agent_unreachable",
		Message: "the walletsync agent cannot be reached: " + err.Error(),
		Hint:    "Close and reopen the window; if the background service should be running, start it with \"walletsync service start\"."})
}

// fromWindow reports whether r comes from the window's own page, by its Origin or,
// without one, its Referer.
func fromWindow(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return windowOrigins[strings.ToLower(o)]
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host == "" {
		return false
	}
	return windowOrigins[strings.ToLower(ref.Scheme+"://"+ref.Host)]
}

// safeMethod reports whether m only reads, as the agent counts it.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// writeAPIError writes e in the agent's error shape, {"error": {...}}, so that the
// dashboard shows the proxy's failures as it shows the agent's.
func writeAPIError(w http.ResponseWriter, e *api.APIError) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]*api.APIError{"error": e}) // the status is sent: a failed body has nobody to tell
}
