package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/wallet"
)

// Routes that only the tests serve, beside the API's own.
const (
	routeFail        api.Route = "GET /api/v1/fail"    // answers with the error a test sets
	routeLeakyBackup api.Route = "POST /api/v1/backup" // a job that formats the password every way it can
)

// testAgent is the agent's blocks wired as doc.go shows, serving on 127.0.0.1:0.
type testAgent struct {
	dir     DataDir
	token   string
	bus     *Bus
	state   *stateDB
	tasks   *Manager
	secrets *Secrets
	srv     *api.Server
	logs    *logBuffer
	stop    func() // shuts everything down; idempotent
}

func startAgent(t *testing.T, tune func(*api.ServerOptions)) *testAgent {
	t.Helper()
	a := &testAgent{dir: DataDir(t.TempDir())}
	lock, err := a.dir.Lock()
	if err != nil {
		t.Fatal(err)
	}
	var logger *slog.Logger
	logger, a.logs = debugLogger()
	ctx, cancel := context.WithCancel(context.Background())
	if a.state, err = openState(ctx, a.dir.StatePath()); err != nil {
		t.Fatal(err)
	}
	a.bus = newBus(0)
	recorded := make(chan error, 1)
	go func() { recorded <- a.state.RecordEvents(context.Background(), a.bus, 0) }()
	a.secrets = NewSecrets(a.dir.SecretsPath())
	if a.tasks, err = newManager(ctx, managerOptions{Bus: a.bus, State: a.state, Redactor: a.secrets, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	if a.token, err = a.dir.Token(); err != nil {
		t.Fatal(err)
	}
	opts := api.ServerOptions{Addr: "127.0.0.1:0", Token: a.token, Bus: busEvents{a.bus}, Tasks: a.tasks, Secrets: a.secrets,
		Version: "test", Logger: logger}
	if tune != nil {
		tune(&opts)
	}
	if a.srv, err = api.NewServer(opts); err != nil {
		t.Fatal(err)
	}
	if err := a.dir.PublishAddr(a.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.srv.Serve(ctx) }()
	a.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := a.tasks.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		a.bus.Close()
		if err := <-recorded; err != nil {
			t.Errorf("RecordEvents: %v", err)
		}
		a.state.Close()
		if err := a.dir.RemoveAddr(); err != nil {
			t.Errorf("RemoveAddr: %v", err)
		}
		if err := lock.Release(); err != nil {
			t.Errorf("release the data folder: %v", err)
		}
	})
	t.Cleanup(a.stop)
	return a
}

// client returns the command line's client for a, found through the data folder.
func (a *testAgent) client(t *testing.T) *api.Client {
	t.Helper()
	e, err := a.dir.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(e)
}

// response is what a raw request got.
type response struct {
	status int
	header http.Header
	body   string
}

// raw sends a request as a browser or an attacker might: nothing is added but what edit
// sets (edit may be nil). Use bearer to add the token.
func (a *testAgent) raw(t *testing.T, method, path, body string, edit func(*http.Request)) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(waitCtx(t), method, a.srv.URL()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func (a *testAgent) bearer(r *http.Request) { r.Header.Set("Authorization", "Bearer "+a.token) }

func (a *testAgent) sameOrigin(r *http.Request) {
	a.bearer(r)
	r.Header.Set("Origin", a.srv.URL())
}

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var eb struct {
		Error *api.APIError `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == nil || eb.Error.Message == "" {
		t.Fatalf("not a typed JSON error: %q", body)
	}
	return eb.Error.Code
}

func TestNewServer_RefusesNonLoopback(t *testing.T) {
	bus := newBus(0)
	base := api.ServerOptions{Token: "t", Bus: busEvents{bus}}
	base.Tasks, _ = newManager(t.Context(), managerOptions{Bus: bus})
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"127.0.0.2:0", true}, // all of 127/8 is loopback
		{"0.0.0.0:0", false},
		{":0", false},
		{"[::]:0", false},
		{"192.168.1.10:0", false},
		{"example.com:80", false},
		{"127.0.0.1", false},
	} {
		opts := base
		opts.Addr = tc.addr
		srv, err := api.NewServer(opts)
		if tc.ok {
			if err != nil {
				t.Errorf("NewServer(%q) = %v", tc.addr, err)
				continue
			}
			if host, _, _ := net.SplitHostPort(srv.Addr()); !net.ParseIP(host).IsLoopback() {
				t.Errorf("NewServer(%q) listens on %s", tc.addr, srv.Addr())
			}
			srv.Close()
			continue
		}
		if !errors.Is(err, api.ErrNotLoopback) || !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("NewServer(%q) = %v, want ErrNotLoopback", tc.addr, err)
		}
	}
}

func TestServer_RequiresToken(t *testing.T) {
	a := startAgent(t, nil)
	signedIn := a.signIn(t)
	cookie := func(v string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: "walletsync-" + a.srv.Addr()[strings.LastIndex(a.srv.Addr(), ":")+1:], Value: v})
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*http.Request)
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("0", 64)) }, http.StatusUnauthorized},
		{"token without Bearer", func(r *http.Request) { r.Header.Set("Authorization", a.token) }, http.StatusUnauthorized},
		{"token in the query", func(r *http.Request) { r.URL.RawQuery = "token=" + a.token }, http.StatusUnauthorized},
		{"wrong cookie", cookie("nope"), http.StatusUnauthorized},
		{"the token as the cookie", cookie(a.token), http.StatusUnauthorized},
		{"bearer token", a.bearer, http.StatusOK},
		{"cookie", cookie(signedIn.Value), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := a.raw(t, "GET", "/api/v1/status", "", tc.edit)
			if res.status != tc.want {
				t.Fatalf("status %d, want %d: %s", res.status, tc.want, res.body)
			}
			if tc.want == http.StatusUnauthorized && errorCode(t, res.body) != "unauthorized" {
				t.Fatalf("body %s", res.body)
			}
		})
	}
}

// A page that rebinds its own name to 127.0.0.1 sends its own Host; it is refused before
// the token is even looked at.
func TestServer_ChecksHost(t *testing.T) {
	a := startAgent(t, nil)
	_, port, _ := net.SplitHostPort(a.srv.Addr())
	for _, tc := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"LOCALHOST:" + port, http.StatusOK},
		{"evil.example:" + port, http.StatusForbidden},
		{"127.0.0.1", http.StatusForbidden},
		{"127.0.0.1:1", http.StatusForbidden},
		{"localhost.evil.example:" + port, http.StatusForbidden},
		{"[::1]:" + port, http.StatusForbidden}, // not the address it listens on
	} {
		t.Run(tc.host, func(t *testing.T) {
			res := a.raw(t, "GET", "/api/v1/status", "", func(r *http.Request) { a.bearer(r); r.Host = tc.host })
			if res.status != tc.want {
				t.Fatalf("status %d, want %d: %s", res.status, tc.want, res.body)
			}
			if tc.want == http.StatusForbidden && errorCode(t, res.body) != "bad_host" {
				t.Fatalf("body %s", res.body)
			}
		})
	}
}

func TestServer_StateChangesNeedOwnOrigin(t *testing.T) {
	a := startAgent(t, nil)
	_, port, _ := net.SplitHostPort(a.srv.Addr())
	calls := 0
	a.srv.Handle("POST /api/v1/poke", func(*http.Request) (any, error) { calls++; return "poked", nil })
	for _, tc := range []struct {
		name    string
		origin  string
		referer string
		want    int
	}{
		{"no Origin or Referer", "", "", http.StatusForbidden},
		{"another site", "http://evil.example", "", http.StatusForbidden},
		{"another port", "http://127.0.0.1:1", "", http.StatusForbidden},
		{"https", "https://127.0.0.1:" + port, "", http.StatusForbidden},
		{"null (a sandboxed page)", "null", "", http.StatusForbidden},
		{"own Origin", "http://127.0.0.1:" + port, "", http.StatusOK},
		{"own Origin as localhost", "http://localhost:" + port, "", http.StatusOK},
		{"own Referer", "", "http://127.0.0.1:" + port + "/dashboard", http.StatusOK},
		{"foreign Referer", "", "http://evil.example/http://127.0.0.1:" + port + "/", http.StatusForbidden},
		{"foreign Origin beats own Referer", "http://evil.example", "http://127.0.0.1:" + port + "/", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := a.raw(t, "POST", "/api/v1/poke", "", func(r *http.Request) {
				a.bearer(r)
				if tc.origin != "" {
					r.Header.Set("Origin", tc.origin)
				}
				if tc.referer != "" {
					r.Header.Set("Referer", tc.referer)
				}
			})
			if res.status != tc.want {
				t.Fatalf("status %d, want %d: %s", res.status, tc.want, res.body)
			}
			if tc.want == http.StatusForbidden && errorCode(t, res.body) != "cross_origin" {
				t.Fatalf("body %s", res.body)
			}
		})
	}
	if calls != 3 {
		t.Errorf("the handler ran %d times, want 3 (only for the accepted requests)", calls)
	}
	if res := a.raw(t, "GET", "/api/v1/tasks", "", a.bearer); res.status != http.StatusOK {
		t.Errorf("a GET without Origin: %d", res.status)
	}
}

func TestServer_NeverSendsCORSHeaders(t *testing.T) {
	a := startAgent(t, nil)
	evil := func(r *http.Request) {
		r.Header.Set("Origin", "http://evil.example")
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization")
	}
	evilWithToken := func(r *http.Request) { evil(r); a.bearer(r) }
	for _, tc := range []struct {
		method, path string
		edit         func(*http.Request)
	}{
		{"OPTIONS", "/api/v1/status", evil},
		{"OPTIONS", "/api/v1/tasks/x/cancel", evilWithToken},
		{"GET", "/api/v1/status", evil},
		{"GET", "/api/v1/status", evilWithToken},
		{"POST", "/api/v1/tasks/x/cancel", evilWithToken},
		{"POST", "/api/v1/tasks/x/cancel", a.sameOrigin},
		{"GET", "/api/v1/nowhere", evilWithToken},
		{"GET", "/login?code=nope", evil},
		{"GET", "/api/v1/events", evilWithToken}, // RoundTrip returns with the headers
	} {
		req, err := http.NewRequest(tc.method, a.srv.URL()+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(req)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for k := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s %s (%d): header %s: %s", tc.method, tc.path, resp.StatusCode, k, resp.Header.Get(k))
			}
		}
	}
}

func TestServer_BoundsBodies(t *testing.T) {
	const limit = 1 << 10
	a := startAgent(t, func(o *api.ServerOptions) { o.MaxBodyBytes = limit })
	read := 0
	a.srv.Handle("PUT /api/v1/blob", func(r *http.Request) (any, error) {
		b, err := io.ReadAll(r.Body)
		read += len(b)
		return len(b), err
	})
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at the limit", limit, false, http.StatusOK},
		{"over the limit", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"over the limit, chunked", limit + 1, true, http.StatusRequestEntityTooLarge},
		{"far over the limit, chunked", 50 * limit, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := a.raw(t, "PUT", "/api/v1/blob", strings.Repeat("x", tc.size), func(r *http.Request) {
				a.sameOrigin(r)
				if tc.chunked {
					r.ContentLength = -1
					r.Body = io.NopCloser(r.Body) // hide the length from the transport
				}
			})
			if res.status != tc.want {
				t.Fatalf("status %d, want %d: %s", res.status, tc.want, res.body)
			}
			if tc.want == http.StatusRequestEntityTooLarge && errorCode(t, res.body) != "body_too_large" {
				t.Fatalf("body %s", res.body)
			}
		})
	}
	if read != limit {
		t.Errorf("the handler read %d bytes, want %d: it never sees an oversized body", read, limit)
	}
}

func TestServer_LoginURLWorksOnce(t *testing.T) {
	a := startAgent(t, nil)
	login := a.srv.LoginURL()
	path := strings.TrimPrefix(login, a.srv.URL())
	res := a.raw(t, "GET", path, "", nil)
	if res.status != http.StatusOK || !strings.Contains(res.body, `url=/`) {
		t.Fatalf("login: %d %s", res.status, res.body)
	}
	cookies := (&http.Response{Header: res.header}).Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	c := cookies[0]
	if strings.Contains(c.Value, a.token) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Fatalf("cookie %+v: want a session (not the token), HttpOnly, SameSite=Strict, Path=/", c)
	}
	// "Remember this browser": the cookie outlives the browser's session, for 30 days.
	if c.MaxAge != int(api.DefaultSessionTTL/time.Second) || time.Until(c.Expires) < api.DefaultSessionTTL-time.Minute {
		t.Fatalf("cookie Max-Age %d, Expires %v: want %v from now", c.MaxAge, c.Expires, api.DefaultSessionTTL)
	}
	if res := a.raw(t, "GET", "/api/v1/status", "", func(r *http.Request) { r.AddCookie(c) }); res.status != http.StatusOK {
		t.Fatalf("with the cookie: %d", res.status)
	}
	for _, p := range []string{path, "/login?code=" + strings.Repeat("ab", 16), "/login"} {
		res := a.raw(t, "GET", p, "", nil)
		if res.status != http.StatusUnauthorized || res.header.Get("Set-Cookie") != "" || !strings.Contains(res.body, `data-reason="link-used"`) {
			t.Fatalf("%s: %d %s %q, want the sign-in page for a used link", p, res.status, res.body, res.header.Get("Set-Cookie"))
		}
	}
	var fresh map[string]string
	if err := a.client(t).Call(t.Context(), api.RouteLoginURL, nil, &fresh); err != nil || !strings.HasPrefix(fresh["url"], a.srv.URL()+"/login?code=") {
		t.Fatalf("POST /api/v1/login-url = %v, %v", fresh, err)
	}
}

// TestServer_PagesGetTheSignInPage: a browser that is not signed in, asking for a page,
// gets an HTML page that says how to get in (never the API's JSON); the API's routes keep
// their JSON errors.
func TestServer_PagesGetTheSignInPage(t *testing.T) {
	a := startAgent(t, func(o *api.ServerOptions) { o.SignInCommand = "walletsync open --data-dir /x" })
	a.srv.HandleHTTP("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the dashboard") }))
	used := strings.TrimPrefix(a.srv.LoginURL(), a.srv.URL())
	a.raw(t, "GET", used, "", nil)
	for _, tc := range []struct {
		name, method, path string
		edit               func(*http.Request)
		page               string // the sign-in page's data-reason, "" for a JSON error
		code               string
	}{
		{"the dashboard without a cookie", "GET", "/", nil, "signed-out", ""},
		{"a file of it", "GET", "/app.js", nil, "signed-out", ""},
		{"a wrong cookie", "GET", "/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "walletsync-" + port(a), Value: "s1.1.00"}) }, "signed-out", ""},
		{"HEAD", "HEAD", "/", nil, "signed-out", ""},
		{"a used link", "GET", used, nil, "link-used", ""},
		{"an API route", "GET", "/api/v1/status", nil, "", "unauthorized"},
		{"an unknown API path", "GET", "/api/v1/nope", nil, "", "unauthorized"},
		{"a POST to a page", "POST", "/", nil, "", "unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := a.raw(t, tc.method, tc.path, "", tc.edit)
			if res.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", res.status, res.body)
			}
			ct := res.header.Get("Content-Type")
			if tc.page == "" {
				if !strings.HasPrefix(ct, "application/json") || errorCode(t, res.body) != tc.code {
					t.Fatalf("%s %s, want the JSON error %s", ct, res.body, tc.code)
				}
				return
			}
			if !strings.HasPrefix(ct, "text/html") {
				t.Fatalf("Content-Type %q, want text/html", ct)
			}
			if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if tc.method == "HEAD" {
				return
			}
			for _, want := range []string{`data-reason="` + tc.page + `"`, "walletsync open --data-dir /x", "tray", "desktop window"} {
				if !strings.Contains(res.body, want) {
					t.Errorf("the page lacks %q:\n%s", want, res.body)
				}
			}
			if strings.Contains(res.body, `"error"`) || strings.Contains(res.body, a.token) {
				t.Errorf("the page shows JSON or the token:\n%s", res.body)
			}
		})
	}
}

// TestServer_SessionSurvivesARestart: a cookie signed with the data folder's key still
// works on the next server of that folder; one with another key does not.
func TestServer_SessionSurvivesARestart(t *testing.T) {
	dir := DataDir(t.TempDir())
	key, err := dir.SessionKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	first := startAgent(t, func(o *api.ServerOptions) { o.SessionKey, o.Addr = key, addr })
	c := first.signIn(t)
	first.stop()
	again, err := dir.SessionKey()
	if err != nil || string(again) != string(key) {
		t.Fatalf("the key changed between starts (%v)", err)
	}
	second := startAgent(t, func(o *api.ServerOptions) { o.SessionKey, o.Addr = key, addr })
	if res := second.raw(t, "GET", "/api/v1/status", "", func(r *http.Request) { r.AddCookie(c) }); res.status != http.StatusOK {
		t.Fatalf("after a restart the cookie gets %d", res.status)
	}
	fresh, err := dir.ForgetBrowsers()
	if err != nil {
		t.Fatal(err)
	}
	second.stop()
	third := startAgent(t, func(o *api.ServerOptions) { o.SessionKey, o.Addr = fresh, addr })
	if res := third.raw(t, "GET", "/api/v1/status", "", func(r *http.Request) { r.AddCookie(c) }); res.status != http.StatusUnauthorized {
		t.Fatalf("after ForgetBrowsers the old cookie gets %d, want 401", res.status)
	}
}

// TestServer_PageVisitRenewsAnOldSession: a page visit with a sign-in cookie more than a
// day old gets a fresh one (a browser in use stays signed in); a fresh cookie and API
// requests get none. The second server's longer SessionTTL makes the first one's cookie
// old without waiting a day.
func TestServer_PageVisitRenewsAnOldSession(t *testing.T) {
	key, err := DataDir(t.TempDir()).SessionKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	dashboard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the dashboard") })
	first := startAgent(t, func(o *api.ServerOptions) { o.SessionKey, o.Addr = key, addr })
	first.srv.HandleHTTP("GET /", dashboard)
	c := first.signIn(t)
	withCookie := func(r *http.Request) { r.AddCookie(c) }
	if res := first.raw(t, "GET", "/", "", withCookie); res.status != http.StatusOK || res.header.Get("Set-Cookie") != "" {
		t.Fatalf("a fresh cookie's page visit: %d, Set-Cookie %q; want 200 and none", res.status, res.header.Get("Set-Cookie"))
	}
	first.stop()

	longer := api.DefaultSessionTTL + 2*24*time.Hour
	second := startAgent(t, func(o *api.ServerOptions) { o.SessionKey, o.Addr, o.SessionTTL = key, addr, longer })
	second.srv.HandleHTTP("GET /", dashboard)
	if res := second.raw(t, "GET", "/api/v1/status", "", withCookie); res.status != http.StatusOK || res.header.Get("Set-Cookie") != "" {
		t.Fatalf("an API request: %d, Set-Cookie %q; want 200 and none", res.status, res.header.Get("Set-Cookie"))
	}
	res := second.raw(t, "GET", "/", "", withCookie)
	renewed := (&http.Response{Header: res.header}).Cookies()
	if res.status != http.StatusOK || len(renewed) != 1 || renewed[0].Name != c.Name || renewed[0].Value == c.Value || renewed[0].MaxAge != int(longer/time.Second) {
		t.Fatalf("an old cookie's page visit: %d, cookies %+v; want a renewed one for %v", res.status, renewed, longer)
	}
}

// signIn redeems a login URL and returns the cookie it sets.
func (a *testAgent) signIn(t *testing.T) *http.Cookie {
	t.Helper()
	res := a.raw(t, "GET", strings.TrimPrefix(a.srv.LoginURL(), a.srv.URL()), "", nil)
	cookies := (&http.Response{Header: res.header}).Cookies()
	if res.status != http.StatusOK || len(cookies) != 1 {
		t.Fatalf("login: %d, %d cookies", res.status, len(cookies))
	}
	return cookies[0]
}

func port(a *testAgent) string { return a.srv.Addr()[strings.LastIndex(a.srv.Addr(), ":")+1:] }

func TestServer_MapsTypedErrors(t *testing.T) {
	a := startAgent(t, nil)
	var fail error
	a.srv.Handle(routeFail, func(*http.Request) (any, error) { return nil, fail })
	diskHint := api.Explain(wallet.ErrDiskFull).Hint
	for _, tc := range []struct {
		err    error
		status int
		code   string
		hint   string
	}{
		{fmt.Errorf("destination %q: %w", "x", wallet.ErrNotFound), 404, "not_found", ""},
		{fmt.Errorf("max rows: %w", wallet.ErrInvalidArgument), 400, "invalid_argument", ""},
		{&wallet.LockedError{Path: "/w.sqlite", PID: 42}, 409, "wallet_locked", ""},
		{fmt.Errorf("commit: %w", wallet.ErrBusy), 409, "busy", ""},
		{fmt.Errorf("write: %w", wallet.ErrDiskFull), 507, "disk_full", diskHint},
		{&wallet.SchemaError{Path: "/w", Reason: "v9", Err: wallet.ErrSchemaTooNew}, 422, "schema_too_new", ""},
		{api.WithHint(fmt.Errorf("open: %w", wallet.ErrNotFound), "create it first"), 404, "not_found", "create it first"},
		{&api.APIError{Status: 418, Code: "teapot", Message: "short and stout"}, 418, "teapot", ""},
		{errors.New("something unexpected"), 500, "internal", ""},
	} {
		t.Run(tc.code, func(t *testing.T) {
			fail = tc.err
			var ae *api.APIError
			err := a.client(t).Call(t.Context(), routeFail, nil, nil)
			// The technical text is the message, or the detail behind a message in plain words.
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.Code != tc.code || ae.Message != tc.err.Error() && ae.Detail != tc.err.Error() {
				t.Fatalf("got %#v, want %d %s %q", ae, tc.status, tc.code, tc.err.Error())
			}
			if tc.hint != "" && ae.Hint != tc.hint || ae.Code == "wallet_locked" && ae.Hint == "" {
				t.Fatalf("hint %q, want %q", ae.Hint, tc.hint)
			}
		})
	}
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/api/v1/nowhere", 404, "not_found", ""},
		{"DELETE", "/api/v1/tasks", 405, "method_not_allowed", "GET"},
		{"POST", "/login", 405, "method_not_allowed", "GET"},
	} {
		res := a.raw(t, tc.method, tc.path, "", a.sameOrigin)
		if res.status != tc.status || errorCode(t, res.body) != tc.code || res.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %s, Allow %q", tc.method, tc.path, res.status, res.body, res.header.Get("Allow"))
		}
	}
}

func TestServer_TaskRoutes(t *testing.T) {
	a := startAgent(t, nil)
	c := a.client(t)
	j := newBlockingJob()
	task, _ := a.tasks.Start(api.KindSync, "usb-copy", func(ctx context.Context, h *TaskHandle) error {
		h.Logf("copying %d tables", 14)
		return j.run(ctx, h)
	})
	<-j.started
	var list []api.Task
	var got api.Task
	var log []api.LogLine
	if err := c.Call(t.Context(), api.RouteTasks, nil, &list); err != nil || len(list) != 1 || list[0].ID != task.ID {
		t.Fatalf("tasks = %+v, %v", list, err)
	}
	if err := c.Call(t.Context(), api.RouteTaskLog, nil, &log, task.ID); err != nil || len(log) != 1 || log[0].Text != "copying 14 tables" {
		t.Fatalf("log = %+v, %v", log, err)
	}
	if err := c.Call(t.Context(), api.RouteTaskCancel, nil, &got, task.ID); err != nil || got.State != api.TaskCancelling {
		t.Fatalf("cancel = %+v, %v", got, err)
	}
	sub := a.bus.Subscribe(0)
	nextTaskEvent(t, sub, task.ID, api.EventTaskFinished)
	if err := c.Call(t.Context(), api.RouteTask, nil, &got, task.ID); err != nil || got.State != api.TaskCancelled {
		t.Fatalf("task = %+v, %v", got, err)
	}
	var ae *api.APIError
	for _, r := range []api.Route{api.RouteTask, api.RouteTaskLog} {
		if err := c.Call(t.Context(), r, nil, nil, "nope"); !errors.As(err, &ae) || ae.Status != 404 {
			t.Errorf("%s nope = %v, want 404", r, err)
		}
	}
	var st api.Status
	if err := c.Call(t.Context(), api.RouteStatus, nil, &st); err != nil || st.Version != "test" || st.PID != os.Getpid() ||
		st.Events != fmt.Sprintf("%s-%d", a.bus.Epoch(), a.bus.Last()) {
		t.Fatalf("status = %+v, %v", st, err)
	}
}

// sseStream reads an event stream as EventSource does.
type sseStream struct {
	r      *bufio.Reader
	cancel context.CancelFunc
}

type sseMessage struct {
	id      string
	event   api.Event
	missed  api.Missed
	comment string
}

func (a *testAgent) openEvents(t *testing.T, query, lastEventID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(waitCtx(t))
	req, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL()+"/api/v1/events"+query, nil)
	a.bearer(req)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return &sseStream{r: bufio.NewReader(resp.Body), cancel: cancel}
}

// next returns the next event or comment, skipping the retry field.
func (s *sseStream) next(t *testing.T) sseMessage {
	t.Helper()
	var m sseMessage
	var data string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && data != "":
			var raw struct {
				api.Event
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(data), &raw); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			m.event = raw.Event
			m.event.Data = raw.Data
			if m.event.Type == api.EventMissed {
				if err := json.Unmarshal(raw.Data, &m.missed); err != nil {
					t.Fatalf("missed event %s: %v", raw.Data, err)
				}
			}
			return m
		case strings.HasPrefix(line, ":"):
			m.comment = strings.TrimSpace(line[1:])
			return m
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}

// A client that drops off and comes back with Last-Event-ID gets exactly the events it
// missed, in order, then the live ones.
func TestServer_EventsResumeWithLastEventID(t *testing.T) {
	a := startAgent(t, nil)
	publish := func(from, to int) {
		for i := from; i <= to; i++ {
			a.bus.Publish(api.EventBackupWritten, map[string]int{"n": i})
		}
	}
	cursor := func(seq uint64) string { return a.bus.Epoch() + "-" + strconv.FormatUint(seq, 10) }
	publish(1, 2)
	first := a.openEvents(t, "", "")
	var last string
	for want := uint64(1); want <= 2; want++ {
		m := first.next(t)
		if m.event.Seq != want || m.id != cursor(want) || string(m.event.Data.(json.RawMessage)) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("first stream: %+v, want seq %d", m, want)
		}
		last = m.id
	}
	first.cancel() // the laptop sleeps
	publish(3, 7)
	again := a.openEvents(t, "", last)
	go publish(8, 8) // and one live event after the catch-up
	for want := uint64(3); want <= 8; want++ {
		if m := again.next(t); m.event.Seq != want || m.id != cursor(want) || m.event.Type != api.EventBackupWritten {
			t.Fatalf("after reconnecting: %+v, want seq %d", m, want)
		}
	}
	// EventSource's first connection passes the cursor from GET /api/v1/status as ?since=.
	fresh := a.openEvents(t, "?since="+cursor(6), "")
	for want := uint64(7); want <= 8; want++ {
		if m := fresh.next(t); m.event.Seq != want {
			t.Fatalf("?since=: got seq %d, want %d", m.event.Seq, want)
		}
	}
}

func TestServer_EventsAfterAgentRestartReset(t *testing.T) {
	a := startAgent(t, nil)
	a.bus.Publish(api.EventTaskStarted, nil)
	s := a.openEvents(t, "", "0badcafe-1234") // a cursor from an earlier run
	m := s.next(t)
	if m.event.Type != api.EventMissed || !m.missed.Reset || m.id != a.bus.Epoch()+"-0" {
		t.Fatalf("first: %+v, want a reset", m)
	}
	if m := s.next(t); m.event.Seq != 1 {
		t.Fatalf("then: %+v, want the ring from seq 1", m)
	}
	res := a.raw(t, "GET", "/api/v1/events?since=x-y", "", a.bearer)
	if res.status != http.StatusBadRequest || errorCode(t, res.body) != "invalid_argument" {
		t.Fatalf("a malformed cursor: %d %s", res.status, res.body)
	}
}

func TestServer_EventsHeartbeatAndEnd(t *testing.T) {
	a := startAgent(t, func(o *api.ServerOptions) { o.Heartbeat = 10 * time.Millisecond })
	s := a.openEvents(t, "", "")
	if m := s.next(t); m.comment != "heartbeat" {
		t.Fatalf("idle stream: %+v, want a heartbeat comment", m)
	}
	a.stop() // Serve returns although a stream is open
	if _, err := io.ReadAll(s.r); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stream after stop: %v", err)
	}
}

// The backup password, set through the API, appears in no API response, event, log line,
// task log or state database byte, though a job formats it every way it can.
func TestAgent_SecretNeverLeaks(t *testing.T) {
	const password = "plum-orbit-lantern-4402"
	a := startAgent(t, nil)
	c := a.client(t)
	var seen strings.Builder
	record := func(v any) {
		b, _ := json.Marshal(v)
		seen.Write(b)
		seen.WriteByte('\n')
	}

	stream := a.openEvents(t, "", "")
	streamed := make(chan string)
	go func() {
		var b strings.Builder
		for {
			line, err := stream.r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				streamed <- b.String()
				return
			}
		}
	}()

	var set map[string]string
	if err := c.Call(t.Context(), api.RouteSecretSet, map[string]string{"value": password}, &set, "backup"); err != nil {
		t.Fatal(err)
	}
	if set["warning"] != api.LostPasswordWarning {
		t.Errorf("setting the password did not warn: %v", set)
	}
	record(set)
	for _, bad := range []struct{ key, value string }{
		{"Bad Key", password},
		{"backup", "short"},
	} {
		err := c.Call(t.Context(), api.RouteSecretSet, map[string]string{"value": bad.value}, nil, bad.key)
		record(err)
		if err == nil {
			t.Fatalf("PUT secret %q accepted", bad.key)
		}
	}
	a.srv.Handle(routeLeakyBackup, func(r *http.Request) (any, error) {
		return a.tasks.Start(api.KindBackup, "nas", func(_ context.Context, h *TaskHandle) error {
			pw, err := a.secrets.Get("backup")
			if err != nil {
				return err
			}
			h.Logf("deriving key with %v %q %x", pw, pw, pw)
			h.Logf("by mistake: %s", pw.Reveal())
			h.SetDetail("encrypting with " + pw.Reveal())
			return fmt.Errorf("wrong password %s: %w", pw.Reveal(), wallet.ErrInvalidArgument)
		})
	})
	var task api.Task
	if err := c.Call(t.Context(), routeLeakyBackup, nil, &task); err != nil {
		t.Fatal(err)
	}
	nextTaskEvent(t, a.bus.Subscribe(0), task.ID, api.EventTaskFinished)
	for _, r := range []api.Route{api.RouteTasks, api.RouteTask, api.RouteTaskLog, api.RouteSecrets, api.RouteStatus} {
		var args []string
		if strings.Contains(string(r), "{id}") {
			args = []string{task.ID}
		}
		var v any
		if err := c.Call(t.Context(), r, nil, &v, args...); err != nil {
			t.Fatal(err)
		}
		record(v)
	}
	if got, _ := a.tasks.Get(task.ID); got.State != api.TaskFailed || !strings.Contains(got.Error, "wrong password "+api.Redacted) {
		t.Fatalf("task: %+v", got)
	}
	a.stop()
	seen.WriteString(<-streamed)
	seen.WriteString(a.logs.String())
	entries, _ := os.ReadDir(string(a.dir))
	for _, e := range entries {
		if e.Name() == "secrets.json" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(string(a.dir), e.Name()))
		seen.Write(b)
	}
	if !strings.Contains(seen.String(), `"type":"task.finished"`) || !strings.Contains(seen.String(), "encrypting with "+api.Redacted) {
		t.Fatal("the capture is missing the task's events")
	}
	assertNoSecret(t, seen.String(), password)
	if b, _ := os.ReadFile(a.dir.SecretsPath()); !strings.Contains(string(b), password) {
		t.Fatal("the password was not stored in the secrets file")
	}
}
