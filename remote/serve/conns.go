package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of ConnLimits. The deadlines are sized for the largest request a client sends,
// a 64 MiB paged-wire frame: it arrives in ReadTimeout at 0.6 MB/s, while a body sent a
// byte every 2 s (which used to hold a connection for some 36 hours) is cut at the same
// bound. WriteTimeout runs from the end of the headers to the end of the answer, so it
// covers the handler too: a processSyncChunk commit on a busy disk takes seconds, and its
// answer a 64 MiB page. The connection bounds are a small VM's: 1,024 connections take
// well under 100 MiB of buffers, and 64 per address leave room for a NAT of busy wallets
// while one address cannot hold the whole server.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 5 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerAddr   = 64
)

// ConnLimits bound the connections of a Server's listener (Options.Listen). Zero values
// take the defaults above.
type ConnLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, its body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's headers to the end of its
	// answer.
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	IdleTimeout time.Duration
	// MaxConns bounds the connections open at once; MaxConnsPerAddr those from one client
	// IP address. A connection past either is answered 503 with Retry-After and the code
	// ERR_TOO_MANY_CONNECTIONS, then closed, before any request is read.
	MaxConns, MaxConnsPerAddr int
}

func (l ConnLimits) withDefaults() ConnLimits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerAddr <= 0 {
		l.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	return l
}

// Refusal reasons, as /metrics counts them.
const (
	refusedConns        = "connections"
	refusedConnsPerAddr = "connections_per_address"
)

// refuseGrace bounds how long a refused connection is given to take its 503 (a TLS
// handshake among it) before it is closed.
const refuseGrace = 2 * time.Second

// limitListener admits connections up to its limits and answers the others itself.
type limitListener struct {
	net.Listener
	limits  ConnLimits
	metrics *metrics

	mu      sync.Mutex
	perAddr map[string]int
	total   int
}

func newLimitListener(ln net.Listener, limits ConnLimits, m *metrics) *limitListener {
	return &limitListener{Listener: ln, limits: limits, metrics: m, perAddr: map[string]int{}}
}

// Accept returns the next connection within the limits; those past them are refused on
// their own goroutine, so that a flood never stalls an admitted client's accept.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr())
		if reason := l.admit(addr); reason != "" {
			l.metrics.refuse(reason)
			go refuseConn(c, reason)
			continue
		}
		l.metrics.conns.Add(1)
		return &limitedConn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

// admit counts a connection from addr in, or names the limit it would pass.
func (l *limitListener) admit(addr string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= l.limits.MaxConns:
		return refusedConns
	case l.perAddr[addr] >= l.limits.MaxConnsPerAddr:
		return refusedConnsPerAddr
	}
	l.total++
	l.perAddr[addr]++
	return ""
}

func (l *limitListener) release(addr string) {
	l.metrics.conns.Add(-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perAddr[addr]--; l.perAddr[addr] == 0 {
		delete(l.perAddr, addr)
	}
}

// hostOf is the client's IP address (the port differs per connection).
func hostOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// refuseConn answers a connection past a limit with a 503 in the auth middleware's error
// form, then closes it; what the client sent is drained (within refuseGrace) so that the
// close does not reset the answer away.
func refuseConn(c net.Conn, reason string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseGrace)) // a conn that refuses deadlines is closed below anyway
	body, _ := json.Marshal(map[string]string{"status": "error", "code": "ERR_TOO_MANY_CONNECTIONS",
		"description": "too many connections (" + reason + "); retry later"})
	if _, err := fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable), len(body), body); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10)) // ends at EOF, the limit or the deadline
	}
}

// limitedConn gives its slot back once, when it closes.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
