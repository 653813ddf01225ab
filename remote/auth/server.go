package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServerOptions tune a Server. Zero values take the defaults.
type ServerOptions struct {
	// SessionTTL is how long a session lives after its last use (default 1 hour). A request
	// on an expired session gets the unsigned 401 that makes a client hand-shake again.
	SessionTTL time.Duration
	// MaxSessions bounds the session store (default 10,000); when it is full, a handshake
	// evicts the least recently used session.
	MaxSessions int
	// MaxNonceBytes bounds the used request nonces that every session together keeps
	// against replays (default 64 MiB, each nonce charged its bytes and nonceOverhead);
	// when a new one would pass it, the least recently used other sessions end (their
	// clients hand-shake again) until it fits.
	MaxNonceBytes int64
	// MaxBodyBytes bounds a request body (default 32 MiB, above the toolbox's 30 MB).
	MaxBodyBytes int64
	// Logger receives refusals at debug level (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now); tests move it to expire sessions.
	Now func() time.Time
}

// Server is the server side of BRC-103/104 as @bsv/auth-express-middleware 2.0.5 speaks
// it to @bsv/sdk's AuthFetch: it answers handshakes on POST /.well-known/auth, verifies
// every other request against its session, and signs every response. It is safe for
// concurrent use; its sessions live in memory only.
type Server struct {
	signer   Signer
	identity string // compressed hex of the signer's identity key
	opts     ServerOptions

	mu         sync.Mutex
	sessions   map[string]*serverSession // by the server's session nonce
	nonceBytes int64                     // the charge of every session's seen nonces
}

// serverSession is one handshake's state.
type serverSession struct {
	clientNonce string
	clientKey   string // compressed lower-case hex
	lastUsed    time.Time
	// seen holds the request nonces of the session's verified requests, so that a captured
	// request cannot be replayed (the TypeScript middleware keeps none: the toolbox server
	// runs a replayed request again, verified on 2.1.26). At maxSeen the
	// session ends and the client hand-shakes again, which bounds its memory.
	seen      map[string]struct{}
	seenBytes int64 // the charge of seen (see nonceCharge)
}

// maxSeen is the number of requests one session serves: with request nonces of at most
// maxRequestNonce characters, under 10 MB of nonces.
const maxSeen = 50000

// maxRequestNonce bounds a request's nonce, in bytes. The toolbox's clients send 32 random
// bytes in base64 (44 characters); a longer nonce is refused as a malformed header (401),
// which also keeps the signature's key ID (nonce, space, the 64-character server nonce)
// inside BRC-43's 800 characters: a 900-character nonce used to fail there, as a 500.
const maxRequestNonce = 128

// maxSeenBytes bounds one session's seen nonces in bytes: maxSeen of the toolbox's
// 44-character nonces, each with its map entry, fit; a session of longer nonces ends
// sooner.
const maxSeenBytes = maxSeen * (44 + nonceOverhead)

// nonceOverhead is what a seen nonce costs beyond its bytes: a Go map entry and the
// string header, rounded up.
const nonceOverhead = 64

// nonceCharge is what keeping nonce costs against the nonce budgets.
func nonceCharge(nonce string) int64 { return int64(len(nonce)) + nonceOverhead }

// NewServer returns a Server that authenticates as signer's identity.
func NewServer(ctx context.Context, signer Signer, opts ServerOptions) (*Server, error) {
	pub, err := signer.IdentityKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("get server identity: %w", err)
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = time.Hour
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10000
	}
	if opts.MaxNonceBytes <= 0 {
		opts.MaxNonceBytes = 64 << 20
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{
		signer:   signer,
		identity: hex.EncodeToString(pub.SerializeCompressed()),
		opts:     opts,
		sessions: map[string]*serverSession{},
	}, nil
}

// ForgetSessions drops every session, as a restart does; clients hand-shake again on their
// next request.
func (s *Server) ForgetSessions() {
	s.mu.Lock()
	clear(s.sessions)
	s.nonceBytes = 0
	s.mu.Unlock()
}

type identityKey struct{}

// WithIdentity returns ctx carrying key as the authenticated client's identity, as
// Middleware passes it to its handler; handler tests and fuzzers that run a handler without
// the middleware use it. Only a server's own code can set it: nothing a client sends does.
func WithIdentity(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, identityKey{}, key)
}

// Identity returns the authenticated client's identity key (66 lower-case hex digits) that
// Server.Middleware put in a request's context; ok is false outside it.
func Identity(ctx context.Context) (key string, ok bool) {
	key, ok = ctx.Value(identityKey{}).(string)
	return key, ok
}

// Middleware wraps next: POST /.well-known/auth is the handshake; every other request must
// carry valid BRC-104 headers of a live session, reaches next with the client's identity
// in its context (see Identity), and gets a signed response. next's response is buffered
// whole to be signed, so it must not stream or hijack. An empty body is sent as "{}"
// (with 200 for 204/304): the TypeScript client signs an empty body differently from the
// TypeScript server, so none is ever sent.
//
// Refusals are unsigned JSON, as the TypeScript middleware sends them: 401 for missing
// headers, an unknown or expired session, a bad signature and a replayed request nonce
// (AuthFetch then hand-shakes again and retries), 400 for a malformed handshake, 413 for a
// body over MaxBodyBytes.
func (s *Server) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wellKnownAuth {
			s.handshake(w, r)
			return
		}
		s.general(w, r, next)
	})
}

// refuse answers unsigned, in the middleware's {status, code, description} shape.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, description string) {
	s.opts.Logger.Debug("auth: refused", "path", r.URL.Path, "status", status, "code", code, "why", description)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"status": "error", "code": code, "description": description})
	w.Write(b)
}

// handshake answers an initialRequest with a signed initialResponse and opens a session.
func (s *Server) handshake(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.refuse(w, r, http.StatusMethodNotAllowed, "ERR_METHOD_NOT_ALLOWED", "the handshake is a POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "ERR_INVALID_MESSAGE", "read the handshake: "+err.Error())
		return
	}
	req, err := parseHandshake(body, "initialRequest")
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "ERR_INVALID_MESSAGE", err.Error())
		return
	}
	ctx := r.Context()
	serverNonce, err := CreateNonce(ctx, s.signer)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "ERR_INTERNAL_SERVER_ERROR", err.Error())
		return
	}
	data, keyID, err := handshakeData(req.InitialNonce, serverNonce)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "ERR_INVALID_MESSAGE", err.Error())
		return
	}
	sig, err := s.signer.CreateSignature(ctx, data, ProtocolSignature, keyID, Counterparty(req.IdentityKey))
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "ERR_INTERNAL_SERVER_ERROR", err.Error())
		return
	}
	clientKey, _ := ParsePublicKey(req.IdentityKey) // parseHandshake checked it
	s.store(serverNonce, &serverSession{clientNonce: req.InitialNonce, clientKey: hex.EncodeToString(clientKey.SerializeCompressed())})
	resp, _ := json.Marshal(handshakeMessage{
		Version:               Version,
		MessageType:           "initialResponse",
		IdentityKey:           s.identity,
		InitialNonce:          serverNonce,
		YourNonce:             req.InitialNonce,
		RequestedCertificates: requestedCertificates{Certifiers: []string{}, Types: map[string]string{}},
		Signature:             sig,
	})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(resp)
}

// drop ends the session of nonce and gives its nonces' charge back. s.mu is held.
func (s *Server) drop(nonce string) {
	if sess := s.sessions[nonce]; sess != nil {
		s.nonceBytes -= sess.seenBytes
		delete(s.sessions, nonce)
	}
}

// store adds a session, first dropping expired ones and, when still full, the least
// recently used.
func (s *Server) store(nonce string, sess *serverSession) {
	now := s.opts.Now()
	sess.lastUsed = now
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest string
	for k, v := range s.sessions {
		if now.Sub(v.lastUsed) > s.opts.SessionTTL {
			s.drop(k)
		} else if oldest == "" || v.lastUsed.Before(s.sessions[oldest].lastUsed) {
			oldest = k
		}
	}
	if len(s.sessions) >= s.opts.MaxSessions {
		s.drop(oldest)
	}
	s.sessions[nonce] = sess
}

// session returns a live session by the server nonce and marks it used, or nil.
func (s *Server) session(nonce string) *serverSession {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[nonce]
	if sess == nil {
		return nil
	}
	if now.Sub(sess.lastUsed) > s.opts.SessionTTL {
		s.drop(nonce)
		return nil
	}
	sess.lastUsed = now
	c := *sess
	c.seen = nil
	return &c
}

// claim records reqNonce as used in the session of serverNonce; false means it was used
// before (a replay), or the session is gone or full.
func (s *Server) claim(serverNonce, reqNonce string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[serverNonce]
	if sess == nil {
		return false
	}
	if _, dup := sess.seen[reqNonce]; dup {
		return false
	}
	charge := nonceCharge(reqNonce)
	if len(sess.seen) >= maxSeen || sess.seenBytes+charge > maxSeenBytes {
		s.drop(serverNonce)
		return false
	}
	for s.nonceBytes+charge > s.opts.MaxNonceBytes {
		if !s.dropOldestBut(serverNonce) {
			s.drop(serverNonce) // this session alone holds the whole budget
			return false
		}
	}
	if sess.seen == nil {
		sess.seen = map[string]struct{}{}
	}
	sess.seen[reqNonce] = struct{}{}
	sess.seenBytes += charge
	s.nonceBytes += charge
	return true
}

// dropOldestBut ends the least recently used session that holds nonces, other than keep;
// false when there is none. s.mu is held.
func (s *Server) dropOldestBut(keep string) bool {
	var oldest string
	for k, v := range s.sessions {
		if k != keep && v.seenBytes > 0 && (oldest == "" || v.lastUsed.Before(s.sessions[oldest].lastUsed)) {
			oldest = k
		}
	}
	if oldest == "" {
		return false
	}
	s.drop(oldest)
	return true
}

// general verifies an authenticated request, runs next and signs its response.
func (s *Server) general(w http.ResponseWriter, r *http.Request, next http.Handler) {
	h := r.Header
	if h.Get(hVersion) == "" && h.Get(hSignature) == "" && h.Get(hYourNonce) == "" {
		s.refuse(w, r, http.StatusUnauthorized, "UNAUTHORIZED", "Mutual-authentication failed!")
		return
	}
	if v := h.Get(hVersion); v != Version {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", "unsupported auth version "+strconv.Quote(v))
		return
	}
	ctx := r.Context()
	serverNonce := h.Get(hYourNonce)
	sess := s.session(serverNonce)
	if sess == nil {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_SESSION_NOT_FOUND", "Session not found")
		return
	}
	if err := VerifyNonce(ctx, s.signer, serverNonce); err != nil {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", err.Error())
		return
	}
	if strings.ToLower(h.Get(hIdentityKey)) != sess.clientKey {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", "identity key does not match the session")
		return
	}
	rid, err := base64.StdEncoding.DecodeString(h.Get(hRequestID))
	sig, err2 := hex.DecodeString(h.Get(hSignature))
	reqNonce := h.Get(hNonce)
	if err != nil || len(rid) == 0 || len(rid) > 64 || err2 != nil || reqNonce == "" || len(reqNonce) > maxRequestNonce {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", "malformed auth headers")
		return
	}
	body, err := readBody(r, http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes), s.opts.MaxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, "ERR_BODY_TOO_LARGE", err.Error())
			return
		}
		s.refuse(w, r, http.StatusBadRequest, "ERR_INVALID_MESSAGE", "read the body: "+err.Error())
		return
	}
	payload := requestPayload(rid, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, signedHeaders(h, true), body)
	err = s.signer.VerifySignature(ctx, payload, sig, ProtocolSignature, reqNonce+" "+serverNonce, Counterparty(sess.clientKey))
	if err != nil {
		if isVerifyFailure(err) {
			s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", "Signature is not valid")
		} else {
			s.refuse(w, r, http.StatusInternalServerError, "ERR_INTERNAL_SERVER_ERROR", err.Error())
		}
		return
	}
	if !s.claim(serverNonce, reqNonce) {
		s.refuse(w, r, http.StatusUnauthorized, "ERR_AUTH_FAILED", "request nonce already used, or the session ended")
		return
	}
	r.Body = &heldBody{Reader: bytes.NewReader(body), b: body}
	rec := &responseRecorder{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(rec, r.WithContext(WithIdentity(ctx, sess.clientKey)))
	if err := s.sign(ctx, w, rec, rid, h.Get(hRequestID), sess); err != nil {
		s.opts.Logger.Error("auth: sign the response", "path", r.URL.Path, "err", err)
		s.refuse(w, r, http.StatusInternalServerError, "ERR_INTERNAL_SERVER_ERROR", "could not sign the response")
	}
}

// sign writes rec's response with the BRC-104 headers of sess.
func (s *Server) sign(ctx context.Context, w http.ResponseWriter, rec *responseRecorder, rid []byte, ridHeader string, sess *serverSession) error {
	body := rec.body.Bytes()
	if len(body) == 0 {
		body = []byte("{}")
		if rec.status == http.StatusNoContent || rec.status == http.StatusNotModified {
			rec.status = http.StatusOK
		}
		if rec.header.Get("Content-Type") == "" {
			rec.header.Set("Content-Type", "application/json")
		}
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	respNonce := base64.StdEncoding.EncodeToString(nonce)
	payload := responsePayload(rid, rec.status, signedHeaders(rec.header, false), body, false)
	sig, err := s.signer.CreateSignature(ctx, payload, ProtocolSignature, respNonce+" "+sess.clientNonce, Counterparty(sess.clientKey))
	if err != nil {
		return err
	}
	out := w.Header()
	for k, v := range rec.header {
		out[k] = v
	}
	out.Set(hVersion, Version)
	out.Set(hIdentityKey, s.identity)
	out.Set(hNonce, respNonce)
	out.Set(hYourNonce, sess.clientNonce)
	out.Set(hSignature, hex.EncodeToString(sig))
	out.Set(hRequestID, ridHeader)
	out.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.status)
	_, err = w.Write(body)
	if err != nil {
		s.opts.Logger.Debug("auth: write the response", "err", err)
	}
	return nil
}

// responseRecorder buffers a handler's response so that it can be signed whole.
type responseRecorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *responseRecorder) Header() http.Header { return r.header }

func (r *responseRecorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.body.Write(b)
}

// heldBody is a request body the middleware has read (to verify its signature) and hands
// on: HeldBody gives a handler the bytes themselves, so that a body is held once.
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (heldBody) Close() error { return nil }

// HeldBody returns the body of a request that came through the Middleware, as it was read
// and signed, without a copy; ok is false for any other request (read r.Body then). The
// caller must not modify the bytes.
func HeldBody(r *http.Request) (body []byte, ok bool) {
	h, ok := r.Body.(*heldBody)
	if !ok {
		return nil, false
	}
	return h.b, true
}

// readBody reads a request body of at most limit bytes from rd (r.Body, bounded). A body
// whose Content-Length is declared is read into one buffer of that size: io.ReadAll's
// doubling took up to twice a 64 MiB body, and the copies it outgrew.
func readBody(r *http.Request, rd io.Reader, limit int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return io.ReadAll(rd)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
