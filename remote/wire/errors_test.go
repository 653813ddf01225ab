package wire

import (
	"errors"
	"net/http"
	"testing"

	"walletsync/wallet"
)

// Every refusal comes back typed: a known code as its sentinel, a code this client does not
// know as wallet.ErrUnavailable from a failing server (5xx, "internal" among them: the
// session reads back what a commit left) and as wallet.ErrRemote otherwise.
func TestFromWire_EveryRefusalTyped(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   error
	}{
		{http.StatusConflict, `{"error":{"code":"checkpoint_conflict","message":"moved"}}`, wallet.ErrCheckpointConflict},
		{http.StatusInternalServerError, `{"error":{"code":"internal","message":"internal server error"}}`, wallet.ErrUnavailable},
		{http.StatusBadGateway, `{"error":{"code":"from_a_newer_server","message":"?"}}`, wallet.ErrUnavailable},
		{http.StatusTeapot, `{"error":{"code":"from_a_newer_server","message":"?"}}`, wallet.ErrRemote},
		{http.StatusBadGateway, `<html>bad gateway</html>`, ErrBadFrame},
	}
	for _, tc := range tests {
		if err := fromWire(tc.status, []byte(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("HTTP %d %s: %v, want %v", tc.status, tc.body, err, tc.want)
		}
	}
}
