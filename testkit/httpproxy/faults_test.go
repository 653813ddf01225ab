package httpproxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// upstream is a real HTTP server on 127.0.0.1 that answers every request with its count
// and the body it received, and remembers the bodies.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		n := len(u.bodies)
		u.mu.Unlock()
		fmt.Fprintf(w, "answer %d to %s %s: %s", n, r.Method, r.URL.Path, b)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

func startProxy(t *testing.T, u *upstream) *Proxy {
	t.Helper()
	p, err := Start(u.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// post sends one POST through a client of its own (POSTs are never retried by net/http).
func post(p *Proxy, path, body string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Post(p.URL()+path, "text/plain", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestProxy_Faults(t *testing.T) {
	const body = "0123456789"
	tests := []struct {
		kind      Kind
		wantErr   bool     // the client's request fails
		reset     bool     // ... with ECONNRESET
		forwarded []string // what the upstream received
		answer    string   // the client's answer when it succeeds
	}{
		{kind: "", forwarded: []string{body}, answer: "answer 1 to POST /x: " + body},
		{kind: Drop, wantErr: true},
		{kind: Reset, wantErr: true, reset: true},
		{kind: LoseAnswer, wantErr: true, forwarded: []string{body}},
		{kind: ResetAfter, wantErr: true, reset: true, forwarded: []string{body}},
		{kind: Delay, forwarded: []string{body}, answer: "answer 1 to POST /x: " + body},
		{kind: Truncate, wantErr: true, forwarded: []string{body}},
		{kind: CorruptRequest, forwarded: []string{"01234\xca6789"}, answer: "answer 1 to POST /x: 01234\xca6789"},
		{kind: CorruptResponse, forwarded: []string{body}, answer: "answer 1 to POST /x:\xdf" + body},
		{kind: Duplicate, forwarded: []string{body, body}, answer: "answer 2 to POST /x: " + body},
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			u := startUpstream(t)
			p := startProxy(t, u)
			rule := p.Add(Fault{Kind: tc.kind, Path: "/x", Delay: 10 * time.Millisecond, Offset: -1})
			if tc.kind == CorruptResponse {
				rule.Offset = len("answer 1 to POST /x:")
			}
			got, err := post(p, "/x", body)
			if tc.wantErr != (err != nil) {
				t.Fatalf("POST through %q: %q, %v; want an error: %v", tc.kind, got, err, tc.wantErr)
			}
			if tc.reset && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("POST through %q: %v, want a connection reset", tc.kind, err)
			}
			if err == nil && got != tc.answer {
				t.Fatalf("POST through %q answered %q, want %q", tc.kind, got, tc.answer)
			}
			if fw := u.received(); strings.Join(fw, "|") != strings.Join(tc.forwarded, "|") {
				t.Fatalf("upstream received %q, want %q", fw, tc.forwarded)
			}
			if tc.kind != "" && rule.Fired() != 1 {
				t.Fatalf("the fault fired %d times, want 1", rule.Fired())
			}
		})
	}
}

// A fault counts only the requests it matches, fires on the Nth, and leaves the others and
// the same connection's later requests alone.
func TestProxy_MatchesNthRequest(t *testing.T) {
	u := startUpstream(t)
	p := startProxy(t, u)
	rule := p.Add(Fault{Kind: Drop, Method: http.MethodPost, Path: "/commit", Contains: "page", Nth: 2})
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	send := func(path, body string) error {
		resp, err := c.Post(p.URL()+path, "text/plain", strings.NewReader(body))
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			resp.Body.Close()
			return err
		}
		return resp.Body.Close()
	}
	steps := []struct {
		path, body string
		wantErr    bool
	}{
		{"/commit", "page 1", false},
		{"/other", "page x", false},        // another path
		{"/commit", "checkpoint", false},   // another body
		{"/commit", "page 2", true},        // the second match
		{"/commit", "page 2 again", false}, // fired once only
	}
	for i, s := range steps {
		if err := send(s.path, s.body); (err != nil) != s.wantErr {
			t.Fatalf("step %d (%s %q): %v, want an error: %v", i, s.path, s.body, err, s.wantErr)
		}
	}
	if got, want := u.received(), []string{"page 1", "page x", "checkpoint", "page 2 again"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("upstream received %q, want %q", got, want)
	}
	if rule.Fired() != 1 || rule.Seen() != 3 || p.Requests() != len(steps) {
		t.Fatalf("fired %d, seen %d, requests %d", rule.Fired(), rule.Seen(), p.Requests())
	}
}

// SetUpstream moves the requests that arrive next to another server; a request the
// upstream cannot take closes the client's connection.
func TestProxy_SetUpstream(t *testing.T) {
	a, b := startUpstream(t), startUpstream(t)
	p := startProxy(t, a)
	if _, err := post(p, "/", "to a"); err != nil {
		t.Fatal(err)
	}
	addr := b.Listener.Addr().String()
	b.Close()
	p.SetUpstream(addr)
	if got, err := post(p, "/", "to nobody"); err == nil {
		t.Fatalf("a request to a closed upstream answered %q", got)
	}
	c := startUpstream(t)
	p.SetUpstream(c.Listener.Addr().String())
	if _, err := post(p, "/", "to c"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.received(), "|") != "to a" || strings.Join(c.received(), "|") != "to c" {
		t.Fatalf("a received %q, c %q", a.received(), c.received())
	}
}

// SwitchAfter moves the requests after a matching request that the upstream answered
// (2xx) to the next upstream, around the ring; a request it does not match, or one
// refused, leaves them where they are.
func TestProxy_SwitchAfter(t *testing.T) {
	a, b := startUpstream(t), startUpstream(t)
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(refuse.Close)
	p := startProxy(t, a)
	p.SetUpstreams(a.Listener.Addr().String(), b.Listener.Addr().String())
	rule := p.Add(Fault{Kind: SwitchAfter, Path: "/page"})
	for _, s := range []struct{ path, body string }{
		{"/hello", "a1"}, // no page: stays on a
		{"/page", "a2"},  // answered by a, then on b
		{"/hello", "b1"},
		{"/page", "b2"}, // answered by b, then on a again
		{"/page", "a3"},
	} {
		if _, err := post(p, s.path, s.body); err != nil {
			t.Fatalf("%s %q: %v", s.path, s.body, err)
		}
	}
	if got, want := strings.Join(a.received(), "|")+" / "+strings.Join(b.received(), "|"), "a1|a2|a3 / b1|b2"; got != want {
		t.Fatalf("upstreams received %q, want %q", got, want)
	}
	p.SetUpstreams(refuse.Listener.Addr().String(), a.Listener.Addr().String())
	if _, err := post(p, "/page", "refused"); err != nil {
		t.Fatal(err)
	}
	if p.Upstream() != refuse.Listener.Addr().String() || rule.Fired() != 4 {
		t.Fatalf("after a refused page: upstream %s, fired %d", p.Upstream(), rule.Fired())
	}
}
