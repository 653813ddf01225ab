package auth

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestMiddleware_HandsItsBodyOn: the handler behind the middleware gets the body the
// middleware read and verified through HeldBody, the same bytes, and a request that did not
// come through the middleware has none.
func TestMiddleware_HandsItsBodyOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	server := NewProtoWallet(randKey(rng))
	as, err := NewServer(t.Context(), server, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	srv := httptest.NewServer(as.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := HeldBody(r)
		if !ok {
			body = nil
		}
		got <- body
		w.Write([]byte(`{}`))
	})))
	defer srv.Close()
	c := newTestClient(t, srv.URL, randKey(rng), ClientOptions{})
	sent := append(append([]byte("["), bytes.Repeat([]byte("1,"), 1<<19)...), "1]"...)
	if _, err := c.Do(context.Background(), http.MethodPost, "/", sent); err != nil {
		t.Fatal(err)
	}
	if body := <-got; !bytes.Equal(body, sent) {
		t.Fatalf("the handler got %d bytes through HeldBody, want the %d sent", len(body), len(sent))
	}
	if _, ok := HeldBody(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent))); ok {
		t.Fatal("a request that did not pass the middleware has a held body")
	}
}

// TestReadBody_OneBufferOfTheDeclaredLength: a body that declares its length is read into
// one buffer of that length; io.ReadAll's doubling allocated about twice the body.
func TestReadBody_OneBufferOfTheDeclaredLength(t *testing.T) {
	const n = 8 << 20
	body := bytes.Repeat([]byte("x"), n)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readBody(r, io.LimitReader(r.Body, n), n)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("readBody: %d bytes, %v", len(got), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n+64<<10 {
		t.Fatalf("reading an %d-byte body allocated %d bytes", n, alloc)
	}
}
