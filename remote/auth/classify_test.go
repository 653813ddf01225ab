package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"walletsync/wallet"
)

// A transport failure leaves the request's outcome unknown (wallet.ErrUnavailable); a
// refusal or an answer that does not verify stays what it is, and so does the caller's
// own cancellation.
func TestClassifyTransport_UnknownOutcomeIsUnavailable(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name        string
		ctx         context.Context
		err         error
		unavailable bool
	}{
		{"connection reset", context.Background(), &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"answer cut short", context.Background(), fmt.Errorf("read the response: %w", io.ErrUnexpectedEOF), true},
		{"unsigned 503", context.Background(), &RejectedError{Status: 503}, true},
		{"unsigned 401 after a new handshake", context.Background(), &RejectedError{Status: 401}, false},
		{"answer does not verify", context.Background(), fmt.Errorf("verify response: %w", ErrBadSignature), false},
		{"another server", context.Background(), ErrWrongIdentity, false},
		{"cancelled by the caller", cancelled, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ClassifyTransport(tc.ctx, tc.err)
			if errors.Is(got, wallet.ErrUnavailable) != tc.unavailable || !errors.Is(got, tc.err) {
				t.Fatalf("ClassifyTransport(%v) = %v, want unavailable %v (with the cause kept)", tc.err, got, tc.unavailable)
			}
		})
	}
}
