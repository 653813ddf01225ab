package localstore

import (
	"encoding/hex"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// NewIdentityKey returns a fresh compressed secp256k1 public key in hex, the form the
// toolbox uses for storage and user identity keys. The private key is discarded: a storage
// identity only names a store, it never signs.
func NewIdentityKey() (string, error) {
	priv, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return "", fmt.Errorf("generate identity key: %w", err)
	}
	return hex.EncodeToString(priv.PubKey().SerializeCompressed()), nil
}
