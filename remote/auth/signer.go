package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// Signer is what BRC-103 authentication needs of a wallet: the BRC-100 operations
// getPublicKey (identity), createSignature, verifySignature, createHmac and verifyHmac,
// with @bsv/sdk ProtoWallet's semantics. Implementations must be safe for concurrent use.
type Signer interface {
	// IdentityKey returns the wallet's identity (root) public key.
	IdentityKey(ctx context.Context) (*secp256k1.PublicKey, error)
	// CreateSignature signs SHA-256(data) with the child private key derived for (p, keyID,
	// cp), low S, and returns it DER-encoded.
	CreateSignature(ctx context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error)
	// VerifySignature checks a DER signature over SHA-256(data) made by cp's child key for
	// (p, keyID) with this wallet as its counterparty; a signature that does not verify is
	// an error wrapping ErrBadSignature.
	VerifySignature(ctx context.Context, data, sig []byte, p Protocol, keyID string, cp Counterparty) error
	// CreateHMAC returns HMAC-SHA256(data) under the symmetric key shared with cp for
	// (p, keyID).
	CreateHMAC(ctx context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error)
	// VerifyHMAC checks mac against CreateHMAC's; a mismatch is an error wrapping ErrBadHMAC.
	VerifyHMAC(ctx context.Context, data, mac []byte, p Protocol, keyID string, cp Counterparty) error
}

// ProtoWallet is the Signer over a private key held in memory, computing as @bsv/sdk
// 2.1.0's ProtoWallet does, byte for byte (RFC 6979 signatures with low S are
// deterministic, so both produce the same DER). It never blocks and ignores ctx.
type ProtoWallet struct{ d *KeyDeriver }

var _ Signer = (*ProtoWallet)(nil)

// NewProtoWallet returns the ProtoWallet of root.
func NewProtoWallet(root *secp256k1.PrivateKey) *ProtoWallet {
	return &ProtoWallet{d: NewKeyDeriver(root)}
}

// Deriver returns the wallet's key deriver.
func (w *ProtoWallet) Deriver() *KeyDeriver { return w.d }

// IdentityKey returns the root's public key.
func (w *ProtoWallet) IdentityKey(context.Context) (*secp256k1.PublicKey, error) {
	return w.d.pub, nil
}

// CreateSignature implements Signer.
func (w *ProtoWallet) CreateSignature(_ context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error) {
	priv, err := w.d.DerivePrivateKey(p, keyID, cp)
	if err != nil {
		return nil, fmt.Errorf("create signature: %w", err)
	}
	h := sha256.Sum256(data)
	return ecdsa.Sign(priv, h[:]).Serialize(), nil
}

// VerifySignature implements Signer.
func (w *ProtoWallet) VerifySignature(_ context.Context, data, sig []byte, p Protocol, keyID string, cp Counterparty) error {
	pub, err := w.d.DerivePublicKey(p, keyID, cp)
	if err != nil {
		return fmt.Errorf("verify signature: %w", err)
	}
	s, err := ecdsa.ParseDERSignature(sig)
	if err != nil {
		return fmt.Errorf("verify signature: %w: %v", ErrBadSignature, err)
	}
	h := sha256.Sum256(data)
	if !s.Verify(h[:], pub) {
		return fmt.Errorf("verify signature: %w", ErrBadSignature)
	}
	return nil
}

// CreateHMAC implements Signer.
func (w *ProtoWallet) CreateHMAC(_ context.Context, data []byte, p Protocol, keyID string, cp Counterparty) ([]byte, error) {
	key, err := w.d.DeriveSymmetricKey(p, keyID, cp)
	if err != nil {
		return nil, fmt.Errorf("create hmac: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil), nil
}

// VerifyHMAC implements Signer.
func (w *ProtoWallet) VerifyHMAC(ctx context.Context, data, mac []byte, p Protocol, keyID string, cp Counterparty) error {
	want, err := w.CreateHMAC(ctx, data, p, keyID, cp)
	if err != nil {
		return fmt.Errorf("verify hmac: %w", err)
	}
	if !hmac.Equal(want, mac) {
		return fmt.Errorf("verify hmac: %w", ErrBadHMAC)
	}
	return nil
}
