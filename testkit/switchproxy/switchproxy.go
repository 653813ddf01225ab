// Package switchproxy is a test load balancer that moves a client to another upstream
// after every answered request, so that each request of a sync lands on another server
// process than the one before it: what a round-robin balancer in front of several
// `walletsync serve` processes does at its worst.
//
// BRC-104 sessions live in one server's memory, so a request that reaches another server
// is refused (401) and the client hand-shakes again and retries: the proxy sends a
// handshake, and the request after a refusal, to the upstream it is on, and moves to the
// next upstream only after an answer that is not a refusal. Every request of the wire is
// thus served by a process other than the previous request's, at the cost of a handshake
// per request.
package switchproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
)

// handshakePath is where BRC-104 clients hand-shake.
const handshakePath = "/.well-known/auth"

// Proxy is a running switching proxy on 127.0.0.1.
type Proxy struct {
	*httptest.Server
	upstreams []*url.URL

	mu     sync.Mutex
	next   int
	served []map[string]int // per upstream: answered requests by path
	gone   []bool           // dropped upstreams (a killed server): never chosen again
}

// Start starts a proxy over the upstreams' base URLs; Close stops it.
func Start(upstreams ...string) (*Proxy, error) {
	p := &Proxy{}
	for _, u := range upstreams {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		p.upstreams = append(p.upstreams, parsed)
		p.served = append(p.served, map[string]int{})
		p.gone = append(p.gone, false)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			i := p.next
			p.mu.Unlock()
			r.SetURL(p.upstreams[i])
			r.Out = r.Out.WithContext(withUpstream(r.Out.Context(), i))
		},
		ModifyResponse: func(resp *http.Response) error {
			i := upstreamOf(resp.Request.Context())
			p.mu.Lock()
			defer p.mu.Unlock()
			if resp.Request.URL.Path != handshakePath && resp.StatusCode != http.StatusUnauthorized {
				p.served[i][resp.Request.URL.Path]++
				p.advance(i)
			}
			return nil
		},
	}
	p.Server = httptest.NewServer(rp)
	return p, nil
}

// advance moves to the next upstream after i that is not gone; mu must be held.
func (p *Proxy) advance(i int) {
	for range p.upstreams {
		i = (i + 1) % len(p.upstreams)
		if !p.gone[i] {
			p.next = i
			return
		}
	}
}

// Drop stops sending requests to upstream i (a server that was killed), as a balancer
// does once its health check fails.
func (p *Proxy) Drop(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone[i] = true
	if p.next == i {
		p.advance(i)
	}
}

// Served returns how many requests of path upstream i answered (refusals and handshakes
// not counted).
func (p *Proxy) Served(i int, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served[i][path]
}

type upstreamKey struct{}

func withUpstream(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, upstreamKey{}, i)
}

func upstreamOf(ctx context.Context) int { return ctx.Value(upstreamKey{}).(int) }
