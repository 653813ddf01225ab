package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// abuseGuard bounds how long a test waits for the server to act on its own; reaching it
// is the failure (the server kept a connection it should have cut).
const abuseGuard = 30 * time.Second

// dialFrom opens a connection to the server at addr from the loopback address local
// (127.0.0.x: every one of them is this machine's), so that one test can be many clients.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getBanner sends GET / (the banner, served without authentication) on c and returns the answer's status and error code.
func getBanner(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	if err := c.SetDeadline(time.Now().Add(abuseGuard)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: walletsync\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var refusal struct{ Code string }
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &refusal) // a 200's body is text, and has no code
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %s", body)
	}
	return resp.StatusCode, refusal.Code
}

// TestServe_ConnectionLimits: connections past the limit per client address, then past the
// total, are answered 503 ERR_TOO_MANY_CONNECTIONS with Retry-After before any request is
// read, while the connections admitted and another address's keep being answered; /metrics
// counts both refusals and the open connections.
func TestServe_ConnectionLimits(t *testing.T) {
	srv := startServer(t, Options{MetricsListen: "127.0.0.1:0", Conns: ConnLimits{MaxConns: 3, MaxConnsPerAddr: 2}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	for i, step := range []struct {
		from     string
		status   int
		wantCode string
	}{
		{"127.0.0.1", http.StatusOK, ""},
		{"127.0.0.1", http.StatusOK, ""},
		{"127.0.0.1", http.StatusServiceUnavailable, "ERR_TOO_MANY_CONNECTIONS"}, // its address's third
		{"127.0.0.2", http.StatusOK, ""},
		{"127.0.0.3", http.StatusServiceUnavailable, "ERR_TOO_MANY_CONNECTIONS"}, // the fourth in all
	} {
		c := dialFrom(t, step.from, addr)
		if status, code := getBanner(t, c); status != step.status || code != step.wantCode {
			t.Fatalf("connection %d from %s: %d %q, want %d %q", i+1, step.from, status, code, step.status, step.wantCode)
		}
		if step.status == http.StatusOK {
			// Kept alive: an admitted connection goes on being answered.
			if status, _ := getBanner(t, c); status != http.StatusOK {
				t.Fatalf("connection %d's second request: %d", i+1, status)
			}
		}
	}
	resp, err := http.Get(srv.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`walletsync_serve_refused_total{reason="connections"} 1`,
		`walletsync_serve_refused_total{reason="connections_per_address"} 1`,
		"walletsync_serve_connections 3",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}

// TestServe_SlowBodyIsCut: a client that sends its handshake body a byte at a time (a
// slow-loris body: each byte resets no deadline) has its connection ended by the server at
// ReadTimeout, and a new client is answered meanwhile and after.
func TestServe_SlowBodyIsCut(t *testing.T) {
	srv := startServer(t, Options{Conns: ConnLimits{ReadTimeout: 500 * time.Millisecond}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	slow := dialFrom(t, "127.0.0.1", addr)
	if _, err := io.WriteString(slow, "POST /.well-known/auth HTTP/1.1\r\nHost: walletsync\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(slow, " "); err != nil {
					return // the server closed it
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	if status, _ := getBanner(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusOK {
		t.Fatalf("another client beside the slow one: %d", status)
	}
	if err := slow.SetReadDeadline(time.Now().Add(abuseGuard)); err != nil {
		t.Fatal(err)
	}
	// The server ends the request: an answer (the handshake could not be read) then the
	// close, or the close alone; the guard's timeout is the failure.
	_, err := io.Copy(io.Discard, slow)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the slow body's connection was still open after %s", abuseGuard)
	}
	if status, _ := getBanner(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusOK {
		t.Fatalf("a client after the slow one: %d", status)
	}
}
