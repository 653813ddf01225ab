package api

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"walletsync/wallet"
)

// Defaults of ServerOptions.
const (
	DefaultAddr         = "127.0.0.1:0"
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxUploadBytes bounds a file upload (a backup file for import).
	DefaultMaxUploadBytes = 4 << 30
	DefaultHeartbeat      = 15 * time.Second
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Addr is the loopback address to listen on (default 127.0.0.1:0, any free port).
	// "localhost" binds 127.0.0.1 without asking the resolver; anything that is not a
	// loopback IP is refused with an *AddrError.
	Addr string
	// Token is the per-install API token (agent.DataDir.Token). Required.
	Token string
	// Bus feeds /api/v1/events; Tasks serves /api/v1/tasks. Both required.
	Bus   EventSource
	Tasks TaskSource
	// Secrets, when set, serves /api/v1/secrets and scrubs error messages.
	Secrets SecretStore
	// Version is reported by /api/v1/status.
	Version string
	// MaxBodyBytes bounds request bodies (default 1 MiB); larger ones get 413.
	MaxBodyBytes int64
	// MaxUploadBytes bounds the streamed bodies of HandleUpload routes (default 4 GiB).
	MaxUploadBytes int64
	// Heartbeat is how often an idle event stream gets a comment line (default 15 s), so
	// that proxies and browsers keep it open.
	Heartbeat time.Duration
	// LoginTTL is how long a login URL works (default 2 minutes).
	LoginTTL time.Duration
	// SessionKey signs the sign-in cookies that login URLs give browsers (see sessions);
	// the agent keeps it in its data folder, so that a browser stays signed in across
	// restarts, and replacing it signs every browser out. Empty means a random key of this
	// Server's own: its sessions end with it.
	SessionKey []byte
	// SessionTTL is how long a browser stays signed in after its last page visit (default
	// DefaultSessionTTL, 30 days).
	SessionTTL time.Duration
	// SignInCommand is the command that the sign-in page tells a person to run for a fresh
	// login URL (default DefaultSignInCommand; the agent adds its --data-dir when it is not
	// the default one).
	SignInCommand string
	// Logger receives refused requests and server errors (default: discarded).
	Logger *slog.Logger
}

// EventSource is the event bus a Server streams from: the daemon's, which numbers its
// events within an epoch (one run of the agent).
type EventSource interface {
	// Epoch names this run of the bus; cursors of another epoch restart the stream.
	Epoch() string
	// Last returns the Seq of the newest event, 0 before the first.
	Last() uint64
	// Subscribe follows the events after since, those still retained first. A since the
	// bus no longer retains, or of the future, is answered with an EventMissed event.
	Subscribe(since uint64) Subscription
}

// Subscription is one follower of an EventSource.
type Subscription interface {
	// Next waits for the next event, until ctx ends or the source closes (an error).
	Next(ctx context.Context) (Event, error)
	// TryNext returns the next event if one is waiting, without waiting.
	TryNext() (Event, bool)
}

// TaskSource is the task manager whose tasks a Server lists and cancels.
type TaskSource interface {
	// List returns the tasks, newest first.
	List() []Task
	// Get returns task id; an unknown id wraps wallet.ErrNotFound.
	Get(id string) (Task, error)
	// Log returns task id's log lines, oldest first.
	Log(id string) ([]LogLine, error)
	// Cancel asks task id to stop at its next safe point and returns it, cancelling.
	Cancel(id string) (Task, error)
}

// SecretStore holds the secrets whose keys a Server lists and whose values it sets or
// deletes, never reads back.
type SecretStore interface {
	// Keys returns the keys of the stored secrets.
	Keys() ([]string, error)
	// Set stores value under key.
	Set(key string, value Secret) error
	// Delete removes key; a missing key is not an error.
	Delete(key string) error
	// Redact replaces every stored secret value in text.
	Redact(text string) string
}

// HandlerFunc serves one API route. It returns the response body, marshalled as JSON with
// status 200 (or a Reply for another status), or an error, sent as a typed JSON error:
// an *APIError as it is, anything else classified by its wallet or agent sentinel
// (wallet.ErrNotFound is 404, wallet.ErrInvalidArgument 400, wallet.ErrBusy 409...),
// with its WithHint hint.
type HandlerFunc func(r *http.Request) (any, error)

// Reply is a response body with a status other than 200. A nil Body sends no body.
type Reply struct {
	Status int
	Body   any
}

// Status is the body of GET /api/v1/status.
type Status struct {
	Version       string    `json:"version"`
	PID           int       `json:"pid"`
	StartedAt     time.Time `json:"startedAt"`
	UptimeSeconds int64     `json:"uptimeSeconds"`
	// Events is the cursor of the newest event: a client that loads the state it shows
	// and then streams /api/v1/events?since=<Events> misses nothing in between.
	Events string `json:"events"`
}

// Server is the agent's HTTP API on a loopback address: JSON under /api/v1, and
// /api/v1/events as Server-Sent Events. Every request must:
//
//   - name the server in its Host header, as 127.0.0.1:<port> (or [::1]:<port>) or
//     localhost:<port>, else 403: a web page that rebinds its own domain name to 127.0.0.1
//     cannot talk to the agent;
//   - carry the token, as "Authorization: Bearer <token>", or the sign-in cookie that a
//     login URL (/login?code=..., one use, short-lived) sets, else 401: a JSON error under
//     /api/, the HTML sign-in page (how to get a fresh link) for a page;
//   - if it is not GET, HEAD or OPTIONS, carry an Origin (or, without one, a Referer) of
//     the server's own origin, else 403: no other page can make the browser post to it;
//   - have a body of at most MaxBodyBytes, else 413.
//
// No response ever carries an Access-Control-* header, so browsers keep other origins
// from reading anything, preflights included.
//
// Its built-in routes are the first group of the Route constants (routes.go): status,
// login URL, events, tasks and, with Secrets, the secrets. Handle and HandleHTTP add
// more, behind the same checks.
type Server struct {
	opts    ServerOptions
	log     *slog.Logger
	ln      net.Listener
	addr    string
	hosts   map[string]bool // allowed Host headers
	origins map[string]bool // allowed Origins
	cookie  string
	mux     *http.ServeMux
	uploads map[string]bool // "POST path" of routes whose bodies stream (HandleUpload)
	logins  *loginCodes
	session *sessions
	started time.Time
	http    *http.Server
	// streams is the base context of every request; cancelling it ends the event streams,
	// which would otherwise hold a graceful shutdown open.
	streams    context.Context
	endStreams context.CancelFunc
}

// NewServer validates opts and listens on opts.Addr. It refuses a non-loopback address
// (*AddrError, matching ErrNotLoopback) and missing parts (wallet.ErrInvalidArgument).
// The caller runs Serve, or calls Close to release the address without serving.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Token == "" || opts.Bus == nil || opts.Tasks == nil {
		return nil, fmt.Errorf("new API server: token, bus and task manager are required: %w", wallet.ErrInvalidArgument)
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.LoginTTL <= 0 {
		opts.LoginTTL = DefaultLoginTTL
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.SignInCommand == "" {
		opts.SignInCommand = DefaultSignInCommand
	}
	bind, err := loopbackBind(opts.Addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", bind, err)
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		ln:      ln,
		addr:    ln.Addr().String(),
		mux:     http.NewServeMux(),
		uploads: map[string]bool{},
		logins:  newLoginCodes(opts.LoginTTL),
		session: newSessions(opts.SessionKey, opts.SessionTTL),
		started: time.Now(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	s.cookie = "walletsync-" + port // cookies ignore ports: one per agent
	s.hosts = map[string]bool{s.addr: true, "localhost:" + port: true}
	s.origins = map[string]bool{}
	for h := range s.hosts {
		s.origins["http://"+h] = true
	}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.streams },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.routes()
	return s, nil
}

// loopbackBind returns the address to listen on for addr, or an *AddrError.
func loopbackBind(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &AddrError{Addr: addr, Reason: "not host:port"}
	}
	if strings.EqualFold(host, "localhost") {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	ip := net.ParseIP(host)
	switch {
	case host == "":
		return "", &AddrError{Addr: addr, Reason: "no host means every interface"}
	case ip == nil:
		return "", &AddrError{Addr: addr, Reason: "a host name other than localhost could resolve anywhere"}
	case !ip.IsLoopback():
		return "", &AddrError{Addr: addr, Reason: "reachable from other machines"}
	}
	return addr, nil
}

// Addr returns the address the server listens on, host:port.
func (s *Server) Addr() string { return s.addr }

// URL returns the server's origin, http://host:port.
func (s *Server) URL() string { return "http://" + s.addr }

// LoginURL returns a new one-time login URL for a browser: it sets the sign-in cookie
// (for SessionTTL, renewed by page visits) and leads to the dashboard at "/". It works
// once, within LoginTTL.
func (s *Server) LoginURL() string { return s.URL() + "/login?code=" + s.logins.issue() }

// SetSessionKey replaces the key that signs the sign-in cookies (ServerOptions.SessionKey):
// every browser signed in before is signed out at its next request; the token, and so the
// command line and the desktop window, are unaffected.
func (s *Server) SetSessionKey(key []byte) { s.session.setKey(key) }

// Handle serves route with h; path values are in r.PathValue. Like ServeMux.Handle, it
// panics on a route that conflicts with one already added.
func (s *Server) Handle(route Route, h HandlerFunc) {
	s.mux.HandleFunc(string(route), func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			s.writeError(w, err)
			return
		}
		status := http.StatusOK
		if rep, ok := v.(Reply); ok {
			status, v = rep.Status, rep.Body
		}
		writeJSON(w, status, v)
	})
}

// HandleUpload serves a route whose body is a file: it streams to h (up to
// MaxUploadBytes) instead of being buffered and bounded by MaxBodyBytes. Only routes
// without wildcards are supported.
func (s *Server) HandleUpload(route Route, h HandlerFunc) {
	s.uploads[string(route)] = true
	s.Handle(route, h)
}

// HandleHTTP adds a plain handler for an http.ServeMux pattern, such as the dashboard's
// files at "GET /". It sits behind the same checks as every route.
func (s *Server) HandleHTTP(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Pattern returns the pattern of the route or handler that serves r, "" when none does; it
// applies none of the checks. The route table's test asks it that every Route is served
// under exactly its own pattern.
func (s *Server) Pattern(r *http.Request) string {
	_, pattern := s.mux.Handler(r)
	return pattern
}

// Serve serves until ctx ends, then ends the event streams, shuts down gracefully (up to
// 5 s for requests in flight) and returns nil. It returns nil at once after Close.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	select {
	case err := <-errc:
		s.endStreams()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}
	s.endStreams()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down API: %w", errors.Join(err, s.http.Close()))
	}
	// After Shutdown, Serve returns http.ErrServerClosed: wait for it, so that nothing of
	// the server runs once Serve has returned.
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve API: %w", err)
	}
	return nil
}

// Close stops serving at once, dropping open connections, and releases the address.
func (s *Server) Close() error {
	s.endStreams()
	err := s.http.Close()
	if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = errors.Join(err, cerr)
	}
	return err
}

// ServeHTTP applies the checks (see Server) and routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if !s.hosts[strings.ToLower(r.Host)] {
		s.refuse(w, r, http.StatusForbidden, "bad_host", "the Host header does not name this server",
			"Open the dashboard at "+s.URL()+".")
		return
	}
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if !s.authorized(w, r) {
		h.Set("WWW-Authenticate", `Bearer realm="walletsync"`)
		if isPageRequest(r) {
			s.signIn(w, r, signInNoCookie)
			return
		}
		s.refuse(w, r, http.StatusUnauthorized, "unauthorized", "missing or wrong API token",
			"Use the login URL the agent prints, or send the token in the data folder's agent.token file as a Bearer token.")
		return
	}
	if !safeMethod(r.Method) && !s.sameOrigin(r) {
		s.refuse(w, r, http.StatusForbidden, "cross_origin", r.Method+" request without this server's Origin",
			"Send Origin: "+s.URL()+" with requests that change state.")
		return
	}
	if s.uploads[r.Method+" "+r.URL.Path] {
		// A file: streamed to its handler, never buffered in memory, bounded all the same.
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes)
	} else if err := s.bufferBody(r); err != nil {
		s.writeError(w, err)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" || isAPIFallthrough(r.URL.Path, pattern) {
		s.noRoute(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg, hint string) {
	s.log.Debug("API request refused", "method", r.Method, "path", r.URL.Path, "host", r.Host, "code", code)
	s.writeError(w, &APIError{Status: status, Code: code, Message: msg, Hint: hint})
}

// authorized reports whether r carries the token or a valid sign-in cookie. A page visit
// with a cookie more than a day old renews it, so that a browser in use stays signed in.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
	}
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return false
	}
	now := time.Now()
	expiry, ok := s.session.check(s.cookie, c.Value, now)
	if ok && isPageRequest(r) && s.session.renew(expiry, now) {
		http.SetCookie(w, s.session.cookie(s.cookie, now))
	}
	return ok
}

// sameOrigin reports whether r's Origin, or without one its Referer, is this server.
func (s *Server) sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return s.origins[strings.ToLower(o)]
	}
	ref := r.Header.Get("Referer")
	if ref == "" {
		return false
	}
	for o := range s.origins {
		if strings.HasPrefix(strings.ToLower(ref), o+"/") {
			return true
		}
	}
	return false
}

// bufferBody reads r's body into memory, refusing one over the limit with 413 before any
// handler runs, whether or not the handler would have read it.
func (s *Server) bufferBody(r *http.Request) error {
	tooLarge := &APIError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
		Message: fmt.Sprintf("request body over %d bytes", s.opts.MaxBodyBytes)}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return tooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		return &APIError{Status: http.StatusBadRequest, Code: "bad_body", Message: "read request body: " + err.Error()}
	}
	if int64(len(b)) > s.opts.MaxBodyBytes {
		return tooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

// noRoute answers a request no route matches: 405 with Allow when the path exists for
// other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		alt := r.Clone(r.Context())
		alt.Method = m
		if _, p := s.mux.Handler(alt); p != "" && !isAPIFallthrough(r.URL.Path, p) {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		s.writeError(w, &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "no route " + r.URL.Path})
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.writeError(w, &APIError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Message: r.Method + " " + r.URL.Path + " is not allowed"})
}

// writeError sends err as a typed JSON error.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	ae, ok := errors.AsType[*APIError](err)
	if !ok {
		c, _ := classify(err)
		ex := Explain(err)
		ae = &APIError{Status: c.status, Code: c.code, Message: s.redact(ex.Message), Hint: ex.Hint, Path: ex.Path, Detail: s.redact(ex.Detail)}
	}
	if ae.Status >= 500 {
		s.log.Error("API request failed", "code", ae.Code, "err", ae.Message)
	}
	writeJSON(w, ae.Status, errorBody{ae})
}

func (s *Server) redact(text string) string {
	if s.opts.Secrets == nil {
		return text
	}
	return s.opts.Secrets.Redact(text)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if v == nil {
		w.WriteHeader(status)
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: a failed body has nobody to tell
}

// DecodeJSON reads r's body as exactly one JSON value into v, refusing unknown fields.
// Errors wrap wallet.ErrInvalidArgument (400).
func DecodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidBody(err)
	}
	if dec.More() {
		return fmt.Errorf("decode request body: more than one JSON value: %w", wallet.ErrInvalidArgument)
	}
	return nil
}

// login trades a one-time code for a sign-in cookie (see sessions); a code that is wrong,
// used or expired gets the sign-in page, which says so and how to get a fresh one.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		s.writeError(w, &APIError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: "login is GET only"})
		return
	}
	if !s.logins.redeem(r.URL.Query().Get("code")) {
		s.signIn(w, r, signInLinkUsed)
		return
	}
	http.SetCookie(w, s.session.cookie(s.cookie, time.Now()))
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, loginPage) // as writeJSON: the header is sent
}

// cursor is the SSE id of the event seq of this server's bus: "<epoch>-<seq>".
func (s *Server) cursor(seq uint64) string {
	return s.opts.Bus.Epoch() + "-" + strconv.FormatUint(seq, 10)
}

// since parses the cursor a client resumes from: the Last-Event-ID header, else the since
// query parameter, as "<epoch>-<seq>" or a bare seq of this bus; none means the whole
// ring. A cursor of another epoch (an earlier run of the agent) becomes one that
// Subscribe resets.
func (s *Server) since(r *http.Request) (uint64, error) {
	c := r.Header.Get("Last-Event-ID")
	if c == "" {
		c = r.URL.Query().Get("since")
	}
	if c == "" {
		return 0, nil
	}
	epoch, seq, found := strings.Cut(c, "-")
	if !found {
		epoch, seq = s.opts.Bus.Epoch(), c
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("event cursor %q: %w", c, wallet.ErrInvalidArgument)
	}
	if epoch != s.opts.Bus.Epoch() {
		return math.MaxUint64, nil
	}
	return n, nil
}

// events streams the bus as Server-Sent Events: one "id: <cursor>" and one
// "data: <event JSON>" per event, without an event: field, so that one onmessage handler
// sees every event in order (the type is in the JSON). Idle streams get a comment line
// every Heartbeat. The stream ends when the client goes, the bus closes or the server
// stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	since, err := s.since(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx := r.Context()
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		// A browser's stream lasts as long as its sign-in: SetSessionKey ends it, and the
		// reconnection then meets the 401 that tells the page it is signed out.
		forgotten := s.session.forgottenChan()
		if !s.authorized(w, r) { // the key changed since ServeHTTP looked
			s.refuse(w, r, http.StatusUnauthorized, "unauthorized", "signed out", "Ask the agent for a new login URL (walletsync open).")
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-forgotten:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	sub := s.opts.Bus.Subscribe(since)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	for {
		wait, cancel := context.WithTimeout(ctx, s.opts.Heartbeat)
		ev, err := sub.Next(wait)
		cancel()
		switch {
		case err == nil:
			if err := s.writeEvents(w, sub, ev); err != nil {
				return
			}
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
				return
			}
		default:
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// writeEvents writes ev and every event already waiting behind it, so that a burst costs
// one flush.
func (s *Server) writeEvents(w io.Writer, sub Subscription, ev Event) error {
	for ok := true; ok; ev, ok = sub.TryNext() {
		b, err := json.Marshal(ev)
		if err != nil {
			s.log.Error("encode event", "type", ev.Type, "seq", ev.Seq, "err", err)
			continue
		}
		if _, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", s.cursor(ev.Seq), b); err != nil {
			return err
		}
	}
	return nil
}

// isAPIFallthrough reports a request under /api/ that only a catch-all pattern (the
// dashboard's "GET /") matched: an unknown API path, which must answer a JSON error like
// every other route instead of the dashboard's page.
func isAPIFallthrough(path, pattern string) bool {
	return strings.HasPrefix(path, "/api/") && !strings.Contains(pattern, "/api/")
}

// invalidBody classifies a request body the JSON decoder refused as wallet.ErrInvalidArgument,
// once: a field's own decoder (a Duration, a Secret) may have classified it already, and
// "invalid argument: invalid argument" tells a person nothing twice.
func invalidBody(err error) error {
	if errors.Is(err, wallet.ErrInvalidArgument) {
		return fmt.Errorf("decode request body: %w", err)
	}
	return fmt.Errorf("decode request body: %v: %w", err, wallet.ErrInvalidArgument)
}

// WithBody adapts a handler of a JSON request body of type T: the body is decoded (see
// DecodeJSON) before h runs.
func WithBody[T any](h func(r *http.Request, body T) (any, error)) HandlerFunc {
	return func(r *http.Request) (any, error) {
		var body T
		if err := DecodeJSON(r, &body); err != nil {
			return nil, err
		}
		return h(r, body)
	}
}
