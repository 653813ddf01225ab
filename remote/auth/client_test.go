package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// nodeServer is a server run by an interop/ script that prints {"port", "identityKey"} once
// it listens on 127.0.0.1 and serves until its stdin closes.
type nodeServer struct {
	URL         string
	IdentityKey string
}

func startNodeServer(t *testing.T, script string, args ...string) nodeServer {
	t.Helper()
	cmd := exec.Command(nodePath(t), append([]string{filepath.Join(interopDir(), script)}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s after its stdin closed: %v\n%s", script, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			_ = <-done // "signal: killed": the error below says it
			t.Errorf("%s did not exit within 10 s of its stdin closing\n%s", script, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
	}()
	var ready struct {
		Port        int
		IdentityKey string
	}
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &ready); err != nil {
			t.Fatalf("%s: %q: %v\n%s", script, l, err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start\n%s", script, stderr.String())
	}
	return nodeServer{URL: "http://127.0.0.1:" + strconv.Itoa(ready.Port), IdentityKey: ready.IdentityKey}
}

// startTSServer runs the toolbox's StorageServer (interop/storage-server.mjs) on a fresh
// SQLite store.
func startTSServer(t *testing.T) nodeServer {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	return startNodeServer(t, "storage-server.mjs", "--db", filepath.Join(t.TempDir(), "server.sqlite"), "--key", privHex(randKey(rng)))
}

// proxy sits between a client and a server and can tamper with what passes; it counts
// handshakes.
type proxy struct {
	*httptest.Server
	handshakes atomic.Int64
	mu         sync.Mutex
	onRequest  func(*http.Request)
	onResponse func(*http.Response) error
}

func startProxy(t *testing.T, target string) *proxy {
	u, _ := url.Parse(target)
	p := &proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			if pr.In.URL.Path == wellKnownAuth {
				p.handshakes.Add(1)
				return
			}
			p.mu.Lock()
			f := p.onRequest
			p.mu.Unlock()
			if f != nil {
				f(pr.Out)
			}
		},
		ModifyResponse: func(r *http.Response) error {
			p.mu.Lock()
			f := p.onResponse
			p.mu.Unlock()
			if f != nil && r.Request.URL.Path != wellKnownAuth {
				return f(r)
			}
			return nil
		},
	}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) tamper(req func(*http.Request), resp func(*http.Response) error) {
	p.mu.Lock()
	p.onRequest, p.onResponse = req, resp
	p.mu.Unlock()
}

// rpc sends one JSON-RPC call and returns the decoded reply.
func rpc(ctx context.Context, c *Client, method string, params ...any) (map[string]any, error) {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
	resp, err := c.Do(ctx, http.MethodPost, "/", body)
	if err != nil {
		return nil, err
	}
	var reply map[string]any
	if err := json.Unmarshal(resp.Body, &reply); err != nil {
		return nil, fmt.Errorf("decode %q (HTTP %d): %w", resp.Body, resp.Status, err)
	}
	if resp.Status != http.StatusOK || reply["error"] != nil {
		return reply, fmt.Errorf("rpc %s: HTTP %d %v", method, resp.Status, reply["error"])
	}
	return reply, nil
}

// concurrently runs f n times at once and fails the test on the first error.
func concurrently(t *testing.T, n int, f func() error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- f() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newTestClient(t *testing.T, url string, root *secp256k1.PrivateKey, opts ClientOptions) *Client {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Second
	}
	c, err := NewClient(url, NewProtoWallet(root), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient_TypeScriptStorageServer(t *testing.T) {
	ts := startTSServer(t)
	px := startProxy(t, ts.URL)
	rng := rand.New(rand.NewPCG(31, 32))
	root := randKey(rng)
	me := string(CounterpartyKey(root.PubKey()))
	ctx := t.Context()

	t.Run("OK", func(t *testing.T) {
		c := newTestClient(t, px.URL, root, ClientOptions{ServerKey: ts.IdentityKey})
		settings, err := rpc(ctx, c, "makeAvailable")
		if err != nil {
			t.Fatal(err)
		}
		if got := settings["result"].(map[string]any)["storageIdentityKey"]; got != ts.IdentityKey {
			t.Fatalf("storageIdentityKey %v, want %s", got, ts.IdentityKey)
		}
		user, err := rpc(ctx, c, "findOrInsertUser", me)
		if err != nil {
			t.Fatal(err)
		}
		if got := user["result"].(map[string]any)["user"].(map[string]any)["identityKey"]; got != me {
			t.Fatalf("user %v, want %s", got, me)
		}
		// Spaces, HTML characters, U+2028, a float written 1.0 and integer-like keys: sent
		// as their JSON.stringify fixed point, the server verifies them.
		_, err = rpc(ctx, c, "findOrInsertSyncStateAuth", map[string]any{"identityKey": me}, ts.IdentityKey, "<a&b>\u2028 name")
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{ "jsonrpc" : "2.0", "method" : "findOrInsertUser", "params" : [ "` + me + `" ], "id" : 1.0, "2": "x" }`)
		resp, err := c.Do(ctx, http.MethodPost, "/", body)
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("non-canonical body: %v %+v", err, resp)
		}
		// Other users' data is refused by the server as a JSON-RPC error.
		if reply, err := rpc(ctx, c, "findOrInsertUser", string(CounterpartyKey(randKey(rng).PubKey()))); err == nil {
			t.Fatalf("another identity's user: %v", reply)
		}
		concurrently(t, 16, func() error {
			_, err := rpc(ctx, c, "findOrInsertUser", me)
			return err
		})
		if n := px.handshakes.Load(); n != 1 {
			t.Fatalf("%d handshakes for one client, want 1", n)
		}
	})

	// Every refusal ends in a typed error within the client's deadline, never a hang.
	refusals := []struct {
		name  string
		setup func(c *Client)
		req   func(*http.Request)
		resp  func(*http.Response) error
		want  error
	}{
		{name: "TamperedRequestSignature", req: func(r *http.Request) {
			sig := []byte(r.Header.Get(hSignature))
			sig[len(sig)-1] ^= 1
			r.Header.Set(hSignature, string(sig))
		}, want: ErrUnauthenticated},
		{name: "TamperedRequestBody", req: func(r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte(`"id":1`), []byte(`"id":2`), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}, want: ErrUnauthenticated},
		{name: "TamperedResponseBody", resp: func(r *http.Response) error {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte(`"jsonrpc"`), []byte(`"JSONRPC"`), 1)
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.Header.Del("Content-Length")
			return nil
		}, want: ErrBadSignature},
		{name: "TamperedResponseStatus", resp: func(r *http.Response) error {
			r.StatusCode = 201
			return nil
		}, want: ErrBadSignature},
		{name: "ResponseIdentitySwapped", resp: func(r *http.Response) error {
			r.Header.Set(hIdentityKey, string(CounterpartyKey(randKey(rng).PubKey())))
			return nil
		}, want: ErrWrongIdentity},
		{name: "ResponseForAnotherRequest", resp: func(r *http.Response) error {
			r.Header.Set(hRequestID, "AAAA")
			return nil
		}, want: ErrBadMessage},
		{name: "UnsignedResponse", resp: func(r *http.Response) error {
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-bsv-auth") {
					r.Header.Del(k)
				}
			}
			return nil
		}, want: ErrUnauthenticated},
		{name: "WrongServerIdentity", setup: func(c *Client) {
			c.opts.ServerKey = string(CounterpartyKey(randKey(rng).PubKey()))
			c.serverKey = c.opts.ServerKey
		}, want: ErrWrongIdentity},
		{name: "BodyNotAFixedPoint", setup: func(c *Client) { c.rawBody = true }, want: ErrUnauthenticated},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, px.URL, root, ClientOptions{Timeout: 10 * time.Second})
			if tc.setup != nil {
				tc.setup(c)
			}
			px.tamper(tc.req, tc.resp)
			defer px.tamper(nil, nil)
			body := []byte(`{"jsonrpc":"2.0","method":"findOrInsertUser","params":["` + me + `"],"id":1}`)
			if c.rawBody {
				body = []byte(`{"jsonrpc": "2.0", "method": "findOrInsertUser", "params": ["` + me + `"], "id": 1}`)
			}
			_, err := c.Do(ctx, http.MethodPost, "/", body)
			t.Log(err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("UnknownSessionHandshakesAgain", func(t *testing.T) {
		c := newTestClient(t, px.URL, root, ClientOptions{})
		if _, err := rpc(ctx, c, "makeAvailable"); err != nil {
			t.Fatal(err)
		}
		// A session nonce the server never issued (as after a server restart): it answers
		// an unsigned 500, the client hand-shakes once more and succeeds.
		other, err := CreateNonce(ctx, NewProtoWallet(randKey(rng)))
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.sess = &clientSession{clientNonce: c.sess.clientNonce, serverNonce: other, serverKey: c.sess.serverKey}
		c.mu.Unlock()
		before := px.handshakes.Load()
		if _, err := rpc(ctx, c, "makeAvailable"); err != nil {
			t.Fatal(err)
		}
		if n := px.handshakes.Load() - before; n != 1 {
			t.Fatalf("%d handshakes after the server refused the session, want 1", n)
		}
	})
}
