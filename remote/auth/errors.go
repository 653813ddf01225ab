package auth

import (
	"context"
	"errors"
	"fmt"
	"net"

	"walletsync/wallet"
)

// Typed errors of BRC-103/104 authentication. Callers tell failures apart with errors.Is;
// the struct types below unwrap to one of these.
var (
	// ErrInvalidInvoice: a BRC-43 protocol id or key id that @bsv/sdk's KeyDeriver refuses.
	ErrInvalidInvoice = errors.New("invalid BRC-43 invoice number")
	// ErrBadPublicKey: a public key that is not a compressed secp256k1 point in hex.
	ErrBadPublicKey = errors.New("invalid public key")
	// ErrBadSignature: a signature that does not verify (or is not DER).
	ErrBadSignature = errors.New("signature is not valid")
	// ErrBadHMAC: an HMAC that does not verify.
	ErrBadHMAC = errors.New("HMAC is not valid")
	// ErrBadNonce: a session nonce this side did not issue (wrong length, or its HMAC fails).
	ErrBadNonce = errors.New("nonce is not valid")
	// ErrBadMessage: an auth message or auth header set that is malformed, of another
	// version, or inconsistent (a request id, a nonce or an identity that does not match).
	ErrBadMessage = errors.New("malformed auth message")
	// ErrUnauthenticated: the server answered without authenticating its answer (an
	// unsigned 401, 500 or other status), even after one new handshake. See RejectedError.
	ErrUnauthenticated = errors.New("server refused to authenticate the request")
	// ErrWrongIdentity: the server authenticated as another identity than the one the
	// client was told to expect.
	ErrWrongIdentity = errors.New("server identity is not the expected one")
	// ErrKeyFile: a key file that is malformed. See KeyFileError.
	ErrKeyFile = errors.New("invalid key file")
	// ErrKeyFileMode: a key file that group or other users can read or write.
	ErrKeyFileMode = errors.New("key file is readable by other users")
	// ErrSigner: the signer (a BRC-100 wallet) failed or answered something unusable.
	ErrSigner = errors.New("signer failed")
)

// InvoiceError says why InvoiceNumber refused a protocol id or key id.
type InvoiceError struct{ Reason string }

func (e *InvoiceError) Error() string { return "invalid BRC-43 invoice number: " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidInvoice) true.
func (e *InvoiceError) Unwrap() error { return ErrInvalidInvoice }

// RejectedError is an unsigned answer of the server: its HTTP status and, when the body was
// the middleware's JSON, its code and description (ERR_AUTH_FAILED for a bad signature,
// ERR_INTERNAL_SERVER_ERROR for a session nonce it does not know).
type RejectedError struct {
	Status      int
	Code        string
	Description string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("server refused to authenticate the request: HTTP %d %s %s", e.Status, e.Code, e.Description)
}

// Unwrap makes errors.Is(err, ErrUnauthenticated) true.
func (e *RejectedError) Unwrap() error { return ErrUnauthenticated }

// isVerifyFailure tells a check that failed (the peer's fault) from a signer that could not
// check (the signer's fault).
func isVerifyFailure(err error) bool {
	return errors.Is(err, ErrBadHMAC) || errors.Is(err, ErrBadSignature)
}

// ErrBadBody: a request body that is not JSON, or that JavaScript's JSON round trip would
// change (see CanonicalJSON and BodyError).
var ErrBadBody = errors.New("request body has no exact JSON.stringify form")

// ClassifyTransport marks the failures of a Client's request after which its outcome is
// unknown, or that a later attempt may not meet (the server down, restarting, or slow; an
// answer lost or cut short), as wallet.ErrUnavailable, keeping err in the chain. The
// caller's cancellation, a server that authenticates as someone else, a malformed or
// forged answer and a refused signature stay what they are: sending again would not
// change them. Both of walletsync's wires classify their transport errors here.
func ClassifyTransport(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var rej *RejectedError
	var netErr net.Error
	switch {
	case errors.As(err, &rej):
		if rej.Status >= 500 {
			return fmt.Errorf("%w: %w", wallet.ErrUnavailable, err)
		}
		return err
	case errors.Is(err, ErrWrongIdentity), errors.Is(err, ErrBadMessage), errors.Is(err, ErrBadSignature),
		errors.Is(err, ErrBadBody), errors.Is(err, ErrSigner), errors.Is(err, ErrBadHMAC):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr), errors.Is(err, net.ErrClosed):
		return fmt.Errorf("%w: %w", wallet.ErrUnavailable, err)
	}
	// Anything else from net/http (an EOF, a reset connection, a refused dial) leaves the
	// request's fate unknown.
	return fmt.Errorf("%w: %w", wallet.ErrUnavailable, err)
}

// quoteBody shows an answer's body in an error: quoted and cut at 200 bytes, so that a
// large or binary page cannot flood a log; "" for an empty body.
func quoteBody(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("%.200q", b)
}
