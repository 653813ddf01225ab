package httpproxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The switcher moves the client to the next upstream after every answered request, but not
// after a handshake or a refusal (401), which belong to the upstream the client is on; a
// dropped upstream is never chosen again, and Served counts only answered requests.
func TestSwitcher_MovesAfterEveryAnswer(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	upstream := func(name string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, name+r.URL.Path)
			mu.Unlock()
			if r.URL.Path == "/refused" {
				http.Error(w, "no session", http.StatusUnauthorized)
			}
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	p, err := StartSwitcher(upstream("a"), upstream("b"), upstream("c"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	for i, path := range []string{"/page", handshakePath, "/refused", "/page", "/page", "drop b", "/page", "/page"} {
		if path == "drop b" {
			p.Drop(1)
			continue
		}
		resp, err := http.Post(p.URL+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
	}
	want := "a/page b" + handshakePath + " b/refused b/page c/page a/page c/page"
	mu.Lock()
	defer mu.Unlock()
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("upstreams answered %q, want %q", g, want)
	}
	for i, n := range []int{2, 1, 2} {
		if s := p.Served(i, "/page"); s != n {
			t.Errorf("upstream %d served %d pages, want %d", i, s, n)
		}
	}
	if s := p.Served(1, "/refused"); s != 0 {
		t.Errorf("a refusal counted as served: %d", s)
	}
}
