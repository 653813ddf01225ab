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
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ClientOptions tune a Client. Zero values take the defaults.
type ClientOptions struct {
	// HTTPClient sends the requests (default: a new http.Client; deadlines come from
	// Timeout and the caller's context, never from the client).
	HTTPClient *http.Client
	// Timeout bounds each Do, retries and handshakes included (default 60 s). The
	// TypeScript side never times out on its own: a peer that stops answering must not
	// hang a walletsync caller.
	Timeout time.Duration
	// ServerKey, when set, is the server identity (compressed hex) the client insists on;
	// a handshake with any other identity fails with ErrWrongIdentity. When empty the
	// client trusts the identity of its first handshake, and every later handshake and
	// response must carry the same one.
	ServerKey string
	// MaxResponseBytes bounds a response body (default 64 MiB, the frame ceiling).
	MaxResponseBytes int64
}

// Client is the client side of BRC-103/104 as @bsv/sdk 2.1.0's AuthFetch speaks it to
// @bsv/auth-express-middleware: one session with one server (the base URL's origin),
// opened by a handshake on first use, signed requests, and every response verified (its
// signature, request id, nonce and server identity) before the caller sees it. An unsigned
// 401 or 500 (the server forgot or never knew the session) drops the session and is retried
// once after a new handshake; a second refusal is a *RejectedError. Client is safe for
// concurrent use.
type Client struct {
	origin string // scheme://host[:port] of the base URL
	base   *url.URL
	signer Signer
	opts   ClientOptions

	hsMu sync.Mutex // serialises handshakes, so that concurrent callers share one
	mu   sync.Mutex // guards sess and serverKey
	sess *clientSession
	// serverKey is the identity every handshake must carry: ServerKey, or the first one seen.
	serverKey string

	// rawBody sends bodies as given, without CanonicalJSON; tests use it to show what a
	// server does with a body that is not a fixed point.
	rawBody bool
}

// clientSession is one handshake's state.
type clientSession struct {
	clientNonce string
	serverNonce string
	serverKey   string
}

// Response is a verified response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewClient returns a Client for the server at baseURL (http or https), signing as signer.
func NewClient(baseURL string, signer Signer, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new auth client: base URL %q is not an http(s) URL", baseURL)
	}
	if opts.ServerKey != "" {
		pub, err := ParsePublicKey(opts.ServerKey)
		if err != nil {
			return nil, fmt.Errorf("new auth client: server key: %w", err)
		}
		opts.ServerKey = string(CounterpartyKey(pub))
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	return &Client{origin: u.Scheme + "://" + u.Host, base: u, signer: signer, opts: opts, serverKey: opts.ServerKey}, nil
}

// ServerIdentity returns the server's identity key (compressed hex) once a handshake has
// succeeded, else "".
func (c *Client) ServerIdentity() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverKey
}

// Do sends one authenticated request: method to path (relative to the base URL, with an
// optional "?query"), with body as JSON when it is not nil. The body is sent as
// CanonicalJSON writes it, with Content-Type exactly application/json, because the
// TypeScript server signs JSON.stringify(JSON.parse(body)) rather than the bytes it got;
// a body CanonicalJSON refuses is an ErrBadBody error before anything is sent. The
// returned response has been verified; any status is returned as it is (the JSON-RPC
// layer above reads 200 bodies with an "error" member as failures).
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (*Response, error) {
	if body != nil && !c.rawBody {
		var err error
		if body, err = CanonicalJSON(body); err != nil {
			return nil, fmt.Errorf("auth request %s %s: %w", method, path, err)
		}
	}
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return c.DoContent(ctx, method, path, contentType, body)
}

// DoContent is Do for a body of any content type, sent and signed byte for byte as given.
// walletsync's Server signs the bytes it receives whatever their type; the TypeScript
// middleware signs no body unless its type is exactly application/json, so a body of
// another type verifies only with a walletsync server (walletsync's binary wire).
func (c *Client) DoContent(ctx context.Context, method, path, contentType string, body []byte) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("auth request %s %q: the path must start with '/'", method, path)
	}
	u, err := url.Parse(c.origin + strings.TrimSuffix(c.base.Path, "/") + path)
	if err != nil {
		return nil, fmt.Errorf("auth request %s %q: %w", method, path, err)
	}
	for attempt := 0; ; attempt++ {
		sess, err := c.session(ctx)
		if err != nil {
			return nil, fmt.Errorf("auth request %s %s: %w", method, path, err)
		}
		resp, err := c.exchange(ctx, sess, method, u, contentType, body)
		var rej *RejectedError
		if errors.As(err, &rej) && (rej.Status == http.StatusUnauthorized || rej.Status == http.StatusInternalServerError) && attempt == 0 {
			c.drop(sess)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("auth request %s %s: %w", method, path, err)
		}
		return resp, nil
	}
}

// session returns the current session, hand-shaking first when there is none.
func (c *Client) session(ctx context.Context) (*clientSession, error) {
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	c.mu.Lock()
	sess = c.sess
	c.mu.Unlock()
	if sess != nil {
		return sess, nil // another caller's handshake
	}
	sess, err := c.handshake(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serverKey == "" {
		c.serverKey = sess.serverKey
	}
	c.sess = sess
	return sess, nil
}

// drop forgets sess unless a newer session has replaced it already.
func (c *Client) drop(sess *clientSession) {
	c.mu.Lock()
	if c.sess == sess {
		c.sess = nil
	}
	c.mu.Unlock()
}

// handshake runs initialRequest/initialResponse.
func (c *Client) handshake(ctx context.Context) (*clientSession, error) {
	me, err := c.signer.IdentityKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("handshake: get identity: %w", err)
	}
	clientNonce, err := CreateNonce(ctx, c.signer)
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	reqBody, _ := json.Marshal(handshakeMessage{
		Version:               Version,
		MessageType:           "initialRequest",
		IdentityKey:           string(CounterpartyKey(me)),
		InitialNonce:          clientNonce,
		RequestedCertificates: requestedCertificates{Certifiers: []string{}, Types: map[string]string{}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.origin+wellKnownAuth, bytes.NewReader(reqBody))
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("handshake: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("handshake: %w", rejected(resp.StatusCode, body))
	}
	m, err := parseHandshake(body, "initialResponse")
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if m.YourNonce != clientNonce {
		return nil, fmt.Errorf("handshake: %w: the answer is for another nonce", ErrBadMessage)
	}
	pub, _ := ParsePublicKey(m.IdentityKey) // parseHandshake checked it
	serverKey := string(CounterpartyKey(pub))
	if want := c.ServerIdentity(); want != "" && serverKey != want {
		return nil, fmt.Errorf("handshake: server is %s, want %s: %w", serverKey, want, ErrWrongIdentity)
	}
	data, keyID, err := handshakeData(clientNonce, m.InitialNonce)
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if err := c.signer.VerifySignature(ctx, data, m.Signature, ProtocolSignature, keyID, Counterparty(serverKey)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	return &clientSession{clientNonce: clientNonce, serverNonce: m.InitialNonce, serverKey: serverKey}, nil
}

// rejected describes an unsigned answer, reading the middleware's JSON when it is that; any
// other body (a proxy's error page) is quoted, shortened, as the description, so that the
// error still says who answered.
func rejected(status int, body []byte) *RejectedError {
	var m struct{ Code, Description, Message string }
	if err := json.Unmarshal(body, &m); err != nil {
		return &RejectedError{Status: status, Description: quoteBody(body)}
	}
	if m.Description == "" {
		m.Description = m.Message
	}
	return &RejectedError{Status: status, Code: m.Code, Description: m.Description}
}

// exchange sends one signed request on sess and verifies the response.
func (c *Client) exchange(ctx context.Context, sess *clientSession, method string, u *url.URL, contentType string, body []byte) (*Response, error) {
	rid := make([]byte, 32)
	rand.Read(rid)
	nonceBytes := make([]byte, 32)
	rand.Read(nonceBytes)
	reqNonce := base64.StdEncoding.EncodeToString(nonceBytes)
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	payload := requestPayload(rid, method, u.EscapedPath(), u.RawQuery, signedHeaders(h, true), body)
	sig, err := c.signer.CreateSignature(ctx, payload, ProtocolSignature, reqNonce+" "+sess.serverNonce, Counterparty(sess.serverKey))
	if err != nil {
		return nil, fmt.Errorf("sign the request: %w", err)
	}
	me, err := c.signer.IdentityKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("get identity: %w", err)
	}
	ridB64 := base64.StdEncoding.EncodeToString(rid)
	h.Set(hVersion, Version)
	h.Set(hIdentityKey, string(CounterpartyKey(me)))
	h.Set(hNonce, reqNonce)
	h.Set(hYourNonce, sess.serverNonce)
	h.Set(hSignature, hex.EncodeToString(sig))
	h.Set(hRequestID, ridB64)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = h
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the response: %w", err)
	}
	if int64(len(respBody)) > c.opts.MaxResponseBytes {
		return nil, fmt.Errorf("%w: response body over %d bytes", ErrBadMessage, c.opts.MaxResponseBytes)
	}
	if err := c.verify(ctx, sess, resp, rid, ridB64, respBody); err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: respBody}, nil
}

// verify checks a response against its request: signed at all (else a *RejectedError),
// by the session's server, for our session and request id, over this status, headers and
// body. Our own session nonce needs no HMAC check here: it is compared with the one we
// made and checked when it was made.
func (c *Client) verify(ctx context.Context, sess *clientSession, resp *http.Response, rid []byte, ridB64 string, body []byte) error {
	h := resp.Header
	if h.Get(hVersion) == "" || h.Get(hIdentityKey) == "" || h.Get(hSignature) == "" {
		return rejected(resp.StatusCode, body)
	}
	if v := h.Get(hVersion); v != Version {
		return fmt.Errorf("verify response: %w: version %.20q", ErrBadMessage, v)
	}
	if k := strings.ToLower(h.Get(hIdentityKey)); k != sess.serverKey {
		return fmt.Errorf("verify response: signed by %.70s, not the session's server %s: %w", k, sess.serverKey, ErrWrongIdentity)
	}
	if h.Get(hYourNonce) != sess.clientNonce {
		return fmt.Errorf("verify response: %w: for another session", ErrBadMessage)
	}
	if h.Get(hRequestID) != ridB64 {
		return fmt.Errorf("verify response: %w: for another request", ErrBadMessage)
	}
	respNonce := h.Get(hNonce)
	sig, err := hex.DecodeString(h.Get(hSignature))
	if err != nil || respNonce == "" {
		return fmt.Errorf("verify response: %w: malformed nonce or signature", ErrBadMessage)
	}
	hs := signedHeaders(h, false)
	keyID := respNonce + " " + sess.clientNonce
	err = c.signer.VerifySignature(ctx, responsePayload(rid, resp.StatusCode, hs, body, false), sig, ProtocolSignature, keyID, Counterparty(sess.serverKey))
	if err != nil && len(body) == 0 && isVerifyFailure(err) {
		// An empty body signed as the TypeScript client would verify it.
		err = c.signer.VerifySignature(ctx, responsePayload(rid, resp.StatusCode, hs, body, true), sig, ProtocolSignature, keyID, Counterparty(sess.serverKey))
	}
	if err != nil {
		return fmt.Errorf("verify response: %w", err)
	}
	return nil
}
