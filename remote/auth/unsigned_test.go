package auth

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUnsignedAnswer_SaysWhoAnswered: an unsigned error answer that is not the peer's JSON
// (a proxy's page) still shows in the error, quoted, for the server's handshake and for a
// BRC-100 wallet alike; the peer's own JSON shows as its code and description.
func TestUnsignedAnswer_SaysWhoAnswered(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    []string
	}{
		{"proxy page", "text/html", "<html>502 Bad Gateway</html>", []string{"502", `"<html>502 Bad Gateway</html>"`}},
		{"peer JSON", "application/json", `{"code":"ERR_AUTH_FAILED","description":"no","message":"no"}`, []string{"502", "no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(http.StatusBadGateway)
				if _, err := w.Write([]byte(tt.body)); err != nil {
					t.Error(err)
				}
			}))
			defer hs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			c, err := NewClient(hs.URL, NewProtoWallet(randKey(rand.New(rand.NewPCG(1, 2)))), ClientOptions{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			_, clientErr := c.Do(ctx, http.MethodPost, "/", []byte(`{}`))
			var rej *RejectedError
			if !errors.As(clientErr, &rej) || rej.Status != http.StatusBadGateway {
				t.Fatalf("client: got %v, want a *RejectedError with status 502", clientErr)
			}
			hw, err := NewHTTPWallet(hs.URL, HTTPWalletOptions{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			_, walletErr := hw.IdentityKey(ctx)
			if !errors.Is(walletErr, ErrSigner) {
				t.Fatalf("wallet: got %v, want ErrSigner", walletErr)
			}
			for _, e := range []error{clientErr, walletErr} {
				for _, w := range tt.want {
					if !strings.Contains(e.Error(), w) {
						t.Errorf("%q does not say %q", e, w)
					}
				}
			}
		})
	}
}
