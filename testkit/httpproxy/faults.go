package httpproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Kind is what a Fault does to the request it fires on.
type Kind string

// The faults. "Before forwarding" faults never reach the server; "after forwarding" ones
// reach it, and the server has answered before the fault acts.
const (
	// Drop closes the client's connection (FIN) before forwarding the request.
	Drop Kind = "drop"
	// Reset closes the client's connection with a TCP RST (SO_LINGER 0) before forwarding.
	Reset Kind = "reset"
	// LoseAnswer forwards the request, then closes the client's connection (FIN) without
	// the response: an acknowledgement lost after a commit.
	LoseAnswer Kind = "lose-answer"
	// ResetAfter forwards the request, then resets the client's connection (RST).
	ResetAfter Kind = "reset-after"
	// Delay waits Fault.Delay, then forwards the request as it is.
	Delay Kind = "delay"
	// Truncate forwards the request, then writes the response's head (with the whole
	// body's Content-Length) and only the first half of its body, and closes.
	Truncate Kind = "truncate"
	// CorruptRequest flips one byte of the request body (Fault.Offset) before forwarding.
	CorruptRequest Kind = "corrupt-request"
	// CorruptResponse forwards the request, then flips one byte of the response body.
	CorruptResponse Kind = "corrupt-response"
	// Duplicate forwards the request twice, one after the other, and answers the client
	// with the second response.
	Duplicate Kind = "duplicate"
	// SwitchAfter forwards the request as it is and, when the upstream answered it with a
	// 2xx, sends the requests after it to the next of the proxy's upstreams (SetUpstreams):
	// a client moved to another server between two pages, as a load balancer without
	// session affinity moves it. It is no fault of the exchange itself: the client gets
	// the answer whole.
	SwitchAfter Kind = "switch-after"
)

// Fault is one scripted fault.
type Fault struct {
	Kind Kind
	// Method, Path and Contains select the requests the fault counts: an empty field
	// matches every request; Path is the exact URL path; Contains is a piece of the
	// request body.
	Method, Path string
	Contains     string
	// Nth is the matching request the fault fires on, from 1; 0 fires on every one.
	Nth int
	// Delay is how long Delay waits.
	Delay time.Duration
	// Offset is the body byte CorruptRequest and CorruptResponse flip; a negative one, or
	// one past the end, is the middle byte. A body of no bytes is passed unchanged.
	Offset int
}

// Rule is an added Fault and its counts.
type Rule struct {
	Fault
	mu          sync.Mutex
	seen, fired int
	disabled    bool
}

// Fired returns how many times the rule's fault has fired.
func (r *Rule) Fired() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fired
}

// Seen returns how many requests the rule has matched, the one it fired on among them.
func (r *Rule) Seen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// Disable stops the rule from firing again.
func (r *Rule) Disable() {
	r.mu.Lock()
	r.disabled = true
	r.mu.Unlock()
}

// take counts a matching request and reports whether the fault fires on it.
func (r *Rule) take(req *http.Request, body []byte) bool {
	if (r.Method != "" && r.Method != req.Method) || (r.Path != "" && r.Path != req.URL.Path) ||
		(r.Contains != "" && !bytes.Contains(body, []byte(r.Contains))) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disabled {
		return false
	}
	r.seen++
	if r.Nth != 0 && r.seen != r.Nth {
		return false
	}
	r.fired++
	return true
}

// Proxy is a running fault proxy. It is safe for concurrent use.
//
// It speaks HTTP/1.1 on plain TCP (walletsync's clients over http://). Each request the
// client sends is read whole, forwarded on a fresh connection to the upstream server, and
// its response read whole before it is written back, so a fault always knows what the
// server did: a fault "after forwarding" runs once the server has answered (and so has
// committed whatever the request commits).
//
// A test adds Faults; each matches requests by method, path and a piece of the body (a
// JSON-RPC method name, say) and fires on the Nth request it matches, or on every one.
//
//	p, _ := httpproxy.Start(serverAddr)
//	defer p.Close()
//	lost := p.Add(httpproxy.Fault{Kind: httpproxy.LoseAnswer, Path: "/walletsync/v1/commit", Nth: 2})
//	... sync through p.URL() ...
//	if lost.Fired() != 1 { ... }
type Proxy struct {
	ln net.Listener

	mu       sync.Mutex
	up       ring[string] // the servers ("host:port") requests may go to (SetUpstreams)
	rules    []*Rule
	conns    map[net.Conn]struct{}
	closed   bool
	requests int

	done chan struct{} // closed by Close: ends a Delay early
	wg   sync.WaitGroup
}

// Start listens on 127.0.0.1 (a free port) and forwards to the server at upstream
// ("host:port").
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start fault proxy: %w", err)
	}
	p := &Proxy{ln: ln, up: newRing(upstream), conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// URL is the proxy's base URL, http://127.0.0.1:port.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// SetUpstream points the proxy at another server address, for the requests that arrive
// from now on (a server restarted on another port).
func (p *Proxy) SetUpstream(addr string) { p.SetUpstreams(addr) }

// SetUpstreams gives the proxy several servers ("host:port"): requests go to the first
// until a SwitchAfter fault moves them to the next, and after the last to the first again.
func (p *Proxy) SetUpstreams(addrs ...string) {
	p.mu.Lock()
	p.up = newRing(addrs...)
	p.mu.Unlock()
}

// Upstream returns the server address requests go to now.
func (p *Proxy) Upstream() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up.current()
}

// Add scripts a fault and returns its Rule. Rules are tried in the order they were added,
// and the first whose fault fires on a request decides what happens to it.
func (p *Proxy) Add(f Fault) *Rule {
	r := &Rule{Fault: f}
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return r
}

// Requests returns how many requests the proxy has read from clients.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Close stops listening, closes every client connection and waits for their goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.done)
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve proxies the requests of one client connection until it closes or a fault ends it.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		if !p.handle(c, req, body) {
			return
		}
	}
}

// handle answers one request and reports whether the connection stays open.
func (p *Proxy) handle(c net.Conn, req *http.Request, body []byte) bool {
	p.mu.Lock()
	p.requests++
	rules := p.rules
	p.mu.Unlock()
	var kind Kind
	var fault Fault
	for _, r := range rules {
		if r.take(req, body) {
			kind, fault = r.Kind, r.Fault
			break
		}
	}
	switch kind {
	case Drop:
		return false
	case Reset:
		reset(c)
		return false
	case Delay:
		select {
		case <-time.After(fault.Delay):
		case <-p.done:
			return false
		}
	case CorruptRequest:
		body = corrupt(body, fault.Offset)
	}
	resp, respBody, err := p.forward(req, body)
	if err == nil && kind == Duplicate {
		resp, respBody, err = p.forward(req, body)
	}
	if err != nil {
		// The upstream is down or broke the exchange: the client sees its connection close,
		// as it would without the proxy.
		return false
	}
	switch kind {
	case LoseAnswer:
		return false
	case ResetAfter:
		reset(c)
		return false
	case Truncate:
		_ = writeResponse(c, resp, respBody, len(respBody)/2) // the connection ends here either way
		return false
	case CorruptResponse:
		respBody = corrupt(respBody, fault.Offset)
	case SwitchAfter:
		if resp.StatusCode/100 == 2 {
			p.mu.Lock()
			p.up.advance(p.up.at)
			p.mu.Unlock()
		}
	}
	return writeResponse(c, resp, respBody, len(respBody)) == nil && !resp.Close && !req.Close
}

// forward sends one request to the upstream on a fresh connection and reads its response.
func (p *Proxy) forward(req *http.Request, body []byte) (*http.Response, []byte, error) {
	p.mu.Lock()
	addr := p.up.current()
	p.mu.Unlock()
	up, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("dial upstream: %w", err)
	}
	defer up.Close()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.TransferEncoding = nil
	out.Close = true // one request per upstream connection
	if err := out.Write(up); err != nil {
		return nil, nil, fmt.Errorf("write upstream: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), out)
	if err != nil {
		return nil, nil, fmt.Errorf("read upstream: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read upstream body: %w", err)
	}
	return resp, b, nil
}

// writeResponse writes resp's status and headers, a Content-Length of the whole body, and
// the first n bytes of body.
func writeResponse(c net.Conn, resp *http.Response, body []byte, n int) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	h := resp.Header.Clone()
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	h.Del("Connection")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if resp.Close {
		h.Set("Connection", "close")
	}
	_ = h.Write(&b) // a bytes.Buffer never fails
	b.WriteString("\r\n")
	b.Write(body[:n])
	_, err := c.Write(b.Bytes())
	return err
}

// corrupt returns a copy of body with the byte at offset (the middle one when offset is
// out of range) inverted.
func corrupt(body []byte, offset int) []byte {
	if len(body) == 0 {
		return body
	}
	if offset < 0 || offset >= len(body) {
		offset = len(body) / 2
	}
	out := bytes.Clone(body)
	out[offset] ^= 0xff
	return out
}

// reset closes c with a TCP RST instead of a FIN: SO_LINGER 0 discards what is unsent and
// aborts the connection.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // if the socket refuses, a FIN still ends the connection
	}
	c.Close()
}
