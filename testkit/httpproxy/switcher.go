package httpproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
)

// handshakePath is where BRC-104 clients hand-shake.
const handshakePath = "/.well-known/auth"

// Switcher is a running switching proxy on 127.0.0.1: a test load balancer that moves a
// client to another upstream after every answered request, so that each request of a sync
// lands on another server process than the one before it: what a round-robin balancer in
// front of several `walletsync serve` processes does at its worst.
//
// BRC-104 sessions live in one server's memory, so a request that reaches another server
// is refused (401) and the client hand-shakes again and retries: the proxy sends a
// handshake, and the request after a refusal, to the upstream it is on, and moves to the
// next upstream only after an answer that is not a refusal. Every request of the wire is
// thus served by a process other than the previous request's, at the cost of a handshake
// per request.
type Switcher struct {
	*httptest.Server

	mu     sync.Mutex
	up     ring[*url.URL]
	served []map[string]int // per upstream: answered requests by path
}

// StartSwitcher starts a switching proxy over the upstreams' base URLs; Close stops it.
func StartSwitcher(upstreams ...string) (*Switcher, error) {
	p := &Switcher{}
	var urls []*url.URL
	for _, u := range upstreams {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("start switching proxy: %w", err)
		}
		urls = append(urls, parsed)
		p.served = append(p.served, map[string]int{})
	}
	p.up = newRing(urls...)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			i, u := p.up.at, p.up.current()
			p.mu.Unlock()
			r.SetURL(u)
			r.Out = r.Out.WithContext(withUpstream(r.Out.Context(), i))
		},
		ModifyResponse: func(resp *http.Response) error {
			i := upstreamOf(resp.Request.Context())
			p.mu.Lock()
			defer p.mu.Unlock()
			if resp.Request.URL.Path != handshakePath && resp.StatusCode != http.StatusUnauthorized {
				p.served[i][resp.Request.URL.Path]++
				p.up.advance(i)
			}
			return nil
		},
	}
	p.Server = httptest.NewServer(rp)
	return p, nil
}

// Drop stops sending requests to upstream i (a server that was killed), as a balancer
// does once its health check fails.
func (p *Switcher) Drop(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up.drop(i)
}

// Served returns how many requests of path upstream i answered (refusals and handshakes
// not counted).
func (p *Switcher) Served(i int, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served[i][path]
}

type upstreamKey struct{}

func withUpstream(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, upstreamKey{}, i)
}

func upstreamOf(ctx context.Context) int { return ctx.Value(upstreamKey{}).(int) }
