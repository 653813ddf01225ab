package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// HTTPWallet is the Signer of a BRC-100 wallet reached over its local HTTP JSON interface,
// the wire of @bsv/sdk's HTTPWalletJSON substrate: POST <base>/<call> with the call's
// arguments as a JSON object (bytes as arrays of numbers, protocol ids as [level, name]),
// answered with the result object. The wallet holds the key and may ask its user to
// approve. It is safe for concurrent use; the identity key is asked for once.
type HTTPWallet struct {
	base       string
	originator string
	client     *http.Client
	timeout    time.Duration

	mu       sync.Mutex
	identity *secp256k1.PublicKey
}

var _ Signer = (*HTTPWallet)(nil)

// HTTPWalletOptions tune an HTTPWallet. Zero values take the defaults.
type HTTPWalletOptions struct {
	// Originator is sent as the Origin and Originator headers, as HTTPWalletJSON does
	// under Node (default "walletsync"); wallets show it to their user.
	Originator string
	// Timeout bounds each call (default 2 minutes: a wallet may wait for its user).
	Timeout time.Duration
	// HTTPClient sends the calls (default a new http.Client).
	HTTPClient *http.Client
}

// NewHTTPWallet returns the wallet at baseURL, e.g. "http://127.0.0.1:3321".
func NewHTTPWallet(baseURL string, opts HTTPWalletOptions) (*HTTPWallet, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new BRC-100 wallet: %q is not an http(s) URL", baseURL)
	}
	if opts.Originator == "" {
		opts.Originator = "walletsync"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	return &HTTPWallet{base: strings.TrimSuffix(baseURL, "/"), originator: opts.Originator, client: opts.HTTPClient, timeout: opts.Timeout}, nil
}

// protocolJSON writes a Protocol as BRC-100's [level, name].
func protocolJSON(p Protocol) []any { return []any{p.Level, p.Name} }

// call posts args to <base>/<name> and decodes the result into out. A wallet's own
// refusal (a non-2xx answer) is an error wrapping ErrSigner with its code and message.
func (w *HTTPWallet) call(ctx context.Context, name string, args, out any) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSigner, name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+"/"+name, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSigner, name, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	origin := w.originator
	if !strings.Contains(origin, "://") {
		origin = "http://" + origin
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Originator", origin)
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSigner, name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%w: %s: read the answer: %w", ErrSigner, name, err)
	}
	if resp.StatusCode/100 != 2 {
		var we struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(data, &we); err != nil {
			we.Message = quoteBody(data) // not the wallet's JSON error: a proxy's page, say
		}
		code := ""
		if we.Code != nil {
			code = fmt.Sprint(" ", we.Code)
		}
		return fmt.Errorf("%w: %s: HTTP %d%s: %s", ErrSigner, name, resp.StatusCode, code, we.Message)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s: decode %s: %v", ErrSigner, name, quoteBody(data), err)
	}
	return nil
}

// IdentityKey asks getPublicKey {identityKey: true} once and remembers the answer.
func (w *HTTPWallet) IdentityKey(ctx context.Context) (*secp256k1.PublicKey, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.identity != nil {
		return w.identity, nil
	}
	var out struct{ PublicKey string }
	if err := w.call(ctx, "getPublicKey", map[string]any{"identityKey": true}, &out); err != nil {
		return nil, err
	}
	pub, err := ParsePublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: getPublicKey: %w", ErrSigner, err)
	}
	w.identity = pub
	return pub, nil
}

// CreateSignature calls createSignature.
func (w *HTTPWallet) CreateSignature(ctx context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error) {
	var out struct{ Signature byteArray }
	err := w.call(ctx, "createSignature", map[string]any{"data": byteArray(data), "protocolID": protocolJSON(p), "keyID": keyID, "counterparty": cp}, &out)
	if err != nil {
		return nil, err
	}
	if len(out.Signature) == 0 {
		return nil, fmt.Errorf("%w: createSignature answered no signature", ErrSigner)
	}
	return out.Signature, nil
}

// VerifySignature calls verifySignature. ProtoWallet-based wallets answer a bad signature
// by failing the call ("Signature is not valid", code ERR_INVALID_SIGNATURE); that, or a
// {valid: false}, is ErrBadSignature.
func (w *HTTPWallet) VerifySignature(ctx context.Context, data, sig []byte, p Protocol, keyID string, cp Counterparty) error {
	var out struct{ Valid bool }
	err := w.call(ctx, "verifySignature", map[string]any{"data": byteArray(data), "signature": byteArray(sig), "protocolID": protocolJSON(p), "keyID": keyID, "counterparty": cp}, &out)
	return verdict(err, out.Valid, "ERR_INVALID_SIGNATURE", ErrBadSignature)
}

// CreateHMAC calls createHmac.
func (w *HTTPWallet) CreateHMAC(ctx context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error) {
	var out struct{ HMAC byteArray }
	err := w.call(ctx, "createHmac", map[string]any{"data": byteArray(data), "protocolID": protocolJSON(p), "keyID": keyID, "counterparty": cp}, &out)
	if err != nil {
		return nil, err
	}
	if len(out.HMAC) != 32 {
		return nil, fmt.Errorf("%w: createHmac answered %d bytes, not 32", ErrSigner, len(out.HMAC))
	}
	return out.HMAC, nil
}

// VerifyHMAC calls verifyHmac; a failed check (ERR_INVALID_HMAC, or {valid: false}) is
// ErrBadHMAC.
func (w *HTTPWallet) VerifyHMAC(ctx context.Context, data, mac []byte, p Protocol, keyID string, cp Counterparty) error {
	var out struct{ Valid bool }
	err := w.call(ctx, "verifyHmac", map[string]any{"data": byteArray(data), "hmac": byteArray(mac), "protocolID": protocolJSON(p), "keyID": keyID, "counterparty": cp}, &out)
	return verdict(err, out.Valid, "ERR_INVALID_HMAC", ErrBadHMAC)
}

// verdict turns a verify call's outcome into nil, bad (the check failed) or the call's
// error (the wallet could not check).
func verdict(err error, valid bool, failCode string, bad error) error {
	if err != nil {
		if strings.Contains(err.Error(), failCode) || strings.Contains(err.Error(), " is not valid") {
			return fmt.Errorf("%w: %w", bad, err)
		}
		return err
	}
	if !valid {
		return bad
	}
	return nil
}
