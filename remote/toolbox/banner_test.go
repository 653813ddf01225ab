package toolbox_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"walletsync/remote/toolbox"
	"walletsync/wallet"
)

// TestBanner_TellsAStorageServerFromTheRest asks servers that answer GET / with the
// StorageServer's banner, with something else, and nothing at all.
func TestBanner_TellsAStorageServerFromTheRest(t *testing.T) {
	serve := func(status int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		url  string
		want error
	}{
		{"toolbox", serve(http.StatusOK, "BRC-100 Wallet Storage Provider: ts-server\n"), nil},
		{"web page", serve(http.StatusOK, "<html>hello</html>"), toolbox.ErrNotStorageServer},
		{"banner with an error status", serve(http.StatusNotFound, "BRC-100 Wallet Storage Provider"), toolbox.ErrNotStorageServer},
		{"nothing listens", closed, wallet.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			banner, err := toolbox.Banner(t.Context(), tc.url)
			if tc.want == nil && (err != nil || banner != "BRC-100 Wallet Storage Provider: ts-server") {
				t.Fatalf("got %q, %v", banner, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}
