package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Go client against Go server.

func TestClientServer_RoundTrip(t *testing.T) {
	gs := startGoServer(t, ServerOptions{})
	rng := rand.New(rand.NewPCG(41, 42))
	root := randKey(rng)
	me := string(CounterpartyKey(root.PubKey()))
	c := newTestClient(t, gs.URL, root, ClientOptions{ServerKey: string(CounterpartyKey(gs.wallet.Deriver().IdentityKey()))})
	ctx := t.Context()
	concurrently(t, 32, func() error {
		reply, err := rpc(ctx, c, "whoAmI")
		if err == nil && reply["result"] != me {
			err = errors.New("whoAmI answered " + reply["result"].(string))
		}
		return err
	})
	if n := gs.handshakes.Load(); n != 1 {
		t.Fatalf("%d handshakes for 32 concurrent calls of one client, want 1", n)
	}
	reply, err := rpc(ctx, c, "findOrInsertUser", "02"+strings.Repeat("ab", 32))
	if err == nil || reply["error"].(map[string]any)["name"] != "WERR_UNAUTHORIZED" {
		t.Fatalf("another identity: %v %v", reply, err)
	}
	if c.ServerIdentity() != string(CounterpartyKey(gs.wallet.Deriver().IdentityKey())) {
		t.Fatalf("ServerIdentity %s", c.ServerIdentity())
	}
}

// TestServer_SessionEnds: an expired or forgotten session is answered with the unsigned
// 401 that makes a client hand-shake once more, and the call then succeeds.
func TestServer_SessionEnds(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	gs := startGoServer(t, ServerOptions{SessionTTL: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	c := newTestClient(t, gs.URL, randKey(rand.New(rand.NewPCG(43, 44))), ClientOptions{})
	ctx := t.Context()
	call := func(wantHandshakes int64) {
		t.Helper()
		if _, err := rpc(ctx, c, "whoAmI"); err != nil {
			t.Fatal(err)
		}
		if n := gs.handshakes.Load(); n != wantHandshakes {
			t.Fatalf("%d handshakes, want %d", n, wantHandshakes)
		}
	}
	call(1)
	now.Add(int64(59 * time.Second))
	call(1) // used within the TTL: still live, and its idle time starts again
	now.Add(int64(59 * time.Second))
	call(1)
	now.Add(int64(61 * time.Second))
	call(2) // expired
	gs.auth.ForgetSessions()
	call(3)
}

// rawRequest sends a request as given and returns status, headers and body.
func rawRequest(t *testing.T, method, url string, h http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func hasAuthHeaders(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-bsv-") {
			return true
		}
	}
	return false
}

func TestServer_UnsignedRefusals(t *testing.T) {
	gs := startGoServer(t, ServerOptions{MaxBodyBytes: 1 << 10})
	rng := rand.New(rand.NewPCG(45, 46))
	root := randKey(rng)

	// Capture one genuine signed request through a proxy, to replay and vary it.
	var mu sync.Mutex
	var captured *http.Request
	var capturedBody []byte
	px := startProxy(t, gs.URL)
	px.tamper(func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		mu.Lock()
		captured, capturedBody = r.Clone(context.Background()), b
		mu.Unlock()
	}, nil)
	c := newTestClient(t, px.URL, root, ClientOptions{})
	if _, err := rpc(t.Context(), c, "whoAmI"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	signed := captured.Header.Clone()
	mu.Unlock()
	with := func(k, v string) http.Header {
		h := signed.Clone()
		h.Set(k, v)
		return h
	}
	big := []byte(`{"x":"` + strings.Repeat("a", 2000) + `"}`)
	for _, tc := range []struct {
		name   string
		path   string
		h      http.Header
		body   []byte
		status int
		code   string
	}{
		{"NoAuthHeaders", "/", http.Header{"Content-Type": {"application/json"}}, []byte(`{}`), 401, "UNAUTHORIZED"},
		{"Replay", "/", signed, capturedBody, 401, "ERR_AUTH_FAILED"},
		{"UnknownSession", "/", with(hYourNonce, strings.Repeat("A", 64)), capturedBody, 401, "ERR_SESSION_NOT_FOUND"},
		{"OtherIdentity", "/", with(hIdentityKey, string(CounterpartyKey(randKey(rng).PubKey()))), capturedBody, 401, "ERR_AUTH_FAILED"},
		{"BadSignature", "/", with(hNonce, "AAAA"), capturedBody, 401, "ERR_AUTH_FAILED"},
		{"LongNonce", "/", with(hNonce, strings.Repeat("A", 900)), capturedBody, 401, "ERR_AUTH_FAILED"},
		{"OtherVersion", "/", with(hVersion, "1.0"), capturedBody, 401, "ERR_AUTH_FAILED"},
		{"BodyTooLarge", "/", with(hNonce, "BBBB"), big, 413, "ERR_BODY_TOO_LARGE"},
		{"BadHandshake", wellKnownAuth, http.Header{"Content-Type": {"application/json"}}, []byte(`{"version":"1.0"}`), 400, "ERR_INVALID_MESSAGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := rawRequest(t, http.MethodPost, gs.URL+tc.path, tc.h, tc.body)
			var m struct{ Code string }
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("got %d %q: not an error body: %v", status, body, err)
			}
			if status != tc.status || m.Code != tc.code || hasAuthHeaders(h) {
				t.Fatalf("got %d %s (auth headers: %v), want unsigned %d %s", status, body, hasAuthHeaders(h), tc.status, tc.code)
			}
		})
	}
}

// TestServer_NeverEmptyBody: a handler that writes nothing still gets a signed, non-empty
// body, which both TypeScript's client and walletsync's verify.
func TestServer_NeverEmptyBody(t *testing.T) {
	srv, err := NewServer(t.Context(), NewProtoWallet(randKey(rand.New(rand.NewPCG(47, 48)))), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Bsv-Custom", "signed too")
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(hs.Close)
	c := newTestClient(t, hs.URL, randKey(rand.New(rand.NewPCG(49, 50))), ClientOptions{})
	resp, err := c.Do(t.Context(), http.MethodPost, "/x?y=1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK || string(resp.Body) != "{}" || resp.Header.Get("X-Bsv-Custom") != "signed too" {
		t.Fatalf("got %d %q %v", resp.Status, resp.Body, resp.Header)
	}
}

// TestClient_Deadline: a server that never answers, at the handshake or after it, costs
// the caller its Timeout, not forever.
func TestClient_Deadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// So that the server notices the client hanging up, which is also what fails the read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv, err := NewServer(t.Context(), NewProtoWallet(randKey(rand.New(rand.NewPCG(51, 52)))), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{"Handshake": hang, "Request": srv.Middleware(hang)} {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(h)
			t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
			c := newTestClient(t, hs.URL, randKey(rand.New(rand.NewPCG(53, 54))), ClientOptions{Timeout: 300 * time.Millisecond})
			_, err := c.Do(t.Context(), http.MethodPost, "/", []byte(`{}`))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want context.DeadlineExceeded", err)
			}
		})
	}
}

// TestClient_ReplayedResponse: a response recorded for one request and played back for
// the next is refused.
func TestClient_ReplayedResponse(t *testing.T) {
	gs := startGoServer(t, ServerOptions{})
	px := startProxy(t, gs.URL)
	var mu sync.Mutex
	var first *http.Response
	var firstBody []byte
	px.tamper(nil, func(r *http.Response) error {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			firstBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(firstBody))
			first = r
			return nil
		}
		r.Header = first.Header.Clone()
		r.Body = io.NopCloser(bytes.NewReader(firstBody))
		return nil
	})
	c := newTestClient(t, px.URL, randKey(rand.New(rand.NewPCG(55, 56))), ClientOptions{})
	if _, err := rpc(t.Context(), c, "whoAmI"); err != nil {
		t.Fatal(err)
	}
	if _, err := rpc(t.Context(), c, "whoAmI"); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("replayed response: got %v, want ErrBadMessage", err)
	}
}
