package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
		{http.StatusForbidden, `{"error":{"code":"quota_exceeded","message":"over","quota":{"resource":"rows","used":9,"adding":2,"limit":10}}}`, wallet.ErrQuotaExceeded},
		{http.StatusInsufficientStorage, `{"error":{"code":"disk_full","message":"full"}}`, wallet.ErrDiskFull},
	}
	for _, tc := range tests {
		if err := fromWire(tc.status, []byte(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("HTTP %d %s: %v, want %v", tc.status, tc.body, err, tc.want)
		}
	}
}

// TestToWire_QuotaRefusalRoundTrips: a quota refusal travels as quota_exceeded (403, not a
// retryable 5xx) with its resource and figures, and comes back as the same
// *wallet.QuotaError; a full disk travels as disk_full without the server's text (which
// names its paths).
func TestToWire_QuotaRefusalRoundTrips(t *testing.T) {
	sent := &wallet.QuotaError{Resource: wallet.QuotaBytes, Used: 100, Adding: 50, Limit: 120}
	we, status := toWire(fmt.Errorf("admit a write: %w", sent))
	if we.Code != "quota_exceeded" || status != http.StatusForbidden {
		t.Fatalf("sent as %q %d", we.Code, status)
	}
	body, _ := json.Marshal(struct {
		Error wireError `json:"error"`
	}{we})
	var got *wallet.QuotaError
	if err := fromWire(status, body); !errors.As(err, &got) || *got != *sent {
		t.Fatalf("rebuilt as %#v from %s", err, body)
	}
	full, status := toWire(fmt.Errorf("commit /srv/secret.sqlite: %w", &wallet.ClassError{Class: wallet.ErrDiskFull, Err: errors.New("ENOSPC")}))
	if full.Code != "disk_full" || status != http.StatusInsufficientStorage || strings.Contains(full.Message, "/srv") {
		t.Fatalf("a full disk sent as %+v %d", full, status)
	}
}
