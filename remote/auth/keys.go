package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Protocol is a BRC-43 protocol id: a security level (0, 1 or 2) and a protocol name. On the
// BRC-100 wire it is the JSON array [level, name].
type Protocol struct {
	Level int
	Name  string
}

// The two protocols BRC-103 authentication uses.
var (
	// ProtocolSignature signs handshake and message payloads.
	ProtocolSignature = Protocol{2, "auth message signature"}
	// ProtocolNonce keys the HMAC of a session nonce.
	ProtocolNonce = Protocol{2, "server hmac"}
)

// Counterparty names the other side of a BRC-42 derivation as ProtoWallet takes it: Self,
// Anyone, or a compressed public key in hex (66 digits).
type Counterparty string

const (
	// Self derives with one's own identity key as the counterparty.
	Self Counterparty = "self"
	// Anyone derives with the public key 1·G, whose private key is known to everybody.
	Anyone Counterparty = "anyone"
)

// CounterpartyKey returns the counterparty for the public key pub.
func CounterpartyKey(pub *secp256k1.PublicKey) Counterparty {
	return Counterparty(hex.EncodeToString(pub.SerializeCompressed()))
}

// InvoiceNumber returns the BRC-43 invoice number "<level>-<name>-<keyID>" exactly as @bsv/sdk
// 2.1.0's KeyDeriver.computeInvoiceNumber builds it, or refuses with ErrInvalidInvoice what
// that function throws on: a level outside 0..2; a name that, lower-cased and trimmed as
// JavaScript does, has fewer than 5 or more than 400 characters (430 for "specific linkage
// revelation ..."), a character outside [a-z0-9 ], a double space, or ends in " protocol"; a
// keyID of fewer than 1 or more than 800 UTF-16 code units.
func InvoiceNumber(p Protocol, keyID string) (string, error) {
	if p.Level < 0 || p.Level > 2 {
		return "", &InvoiceError{Reason: "protocol security level must be 0, 1, or 2"}
	}
	name := jsTrim(jsLowerASCII(p.Name))
	if n := utf16Len(keyID); n > 800 || n < 1 {
		return "", &InvoiceError{Reason: "key IDs must be 1 to 800 characters"}
	}
	if len(name) > 400 && (!strings.HasPrefix(name, "specific linkage revelation ") || utf16Len(name) > 430) {
		return "", &InvoiceError{Reason: "protocol names must be 400 characters or less"}
	}
	if len(name) < 5 {
		return "", &InvoiceError{Reason: "protocol names must be 5 characters or more"}
	}
	if strings.Contains(name, "  ") {
		return "", &InvoiceError{Reason: "protocol names cannot contain multiple consecutive spaces"}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ' ') {
			return "", &InvoiceError{Reason: "protocol names can only contain letters, numbers and spaces"}
		}
	}
	if strings.HasSuffix(name, " protocol") {
		return "", &InvoiceError{Reason: `no need to end your protocol name with " protocol"`}
	}
	return strconv.Itoa(p.Level) + "-" + name + "-" + keyID, nil
}

// jsLowerASCII lower-cases s as String.prototype.toLowerCase does, as far as it matters to a
// name that must end up in [a-z0-9 ]: ASCII letters, and U+212A KELVIN SIGN, the one
// non-ASCII character whose lower case is ASCII ("k"). Every other non-ASCII character stays
// non-ASCII in JavaScript and is refused after, so it is left as it is.
func jsLowerASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r == '\u212A':
			r = 'k'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsTrim removes what String.prototype.trim removes from both ends: WhiteSpace and
// LineTerminator code points of ECMAScript.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
			return true
		}
		return r >= 0x2000 && r <= 0x200A
	})
}

// utf16Len is JavaScript's String length of s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// KeyDeriver does BRC-42 derivations from a root private key as @bsv/sdk's KeyDeriver does.
type KeyDeriver struct {
	root *secp256k1.PrivateKey
	pub  *secp256k1.PublicKey
}

// NewKeyDeriver returns the deriver of root.
func NewKeyDeriver(root *secp256k1.PrivateKey) *KeyDeriver {
	return &KeyDeriver{root: root, pub: root.PubKey()}
}

// IdentityKey is the root's public key.
func (d *KeyDeriver) IdentityKey() *secp256k1.PublicKey { return d.pub }

// anyoneKey is 1·G.
func anyoneKey() *secp256k1.PublicKey {
	var one secp256k1.ModNScalar
	one.SetInt(1)
	var p secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&one, &p)
	p.ToAffine()
	return secp256k1.NewPublicKey(&p.X, &p.Y)
}

// counterpartyKey resolves cp to a public key.
func (d *KeyDeriver) counterpartyKey(cp Counterparty) (*secp256k1.PublicKey, error) {
	switch cp {
	case Self:
		return d.pub, nil
	case Anyone:
		return anyoneKey(), nil
	}
	return ParsePublicKey(string(cp))
}

// ParsePublicKey parses a compressed secp256k1 public key given as 66 hex digits.
func ParsePublicKey(s string) (*secp256k1.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != secp256k1.PubKeyBytesLenCompressed {
		return nil, fmt.Errorf("parse public key %.80q: %w", s, ErrBadPublicKey)
	}
	pub, err := secp256k1.ParsePubKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse public key %.80q: %w: %v", s, ErrBadPublicKey, err)
	}
	return pub, nil
}

// mul returns k·P.
func mul(k *secp256k1.ModNScalar, pub *secp256k1.PublicKey) secp256k1.JacobianPoint {
	var p, r secp256k1.JacobianPoint
	pub.AsJacobian(&p)
	secp256k1.ScalarMultNonConst(k, &p, &r)
	r.ToAffine()
	return r
}

// tweak is BRC-42's h = HMAC-SHA256(compressed(root·P), invoice) as a scalar mod n.
func (d *KeyDeriver) tweak(cp *secp256k1.PublicKey, invoice string) secp256k1.ModNScalar {
	shared := mul(&d.root.Key, cp)
	m := hmac.New(sha256.New, secp256k1.NewPublicKey(&shared.X, &shared.Y).SerializeCompressed())
	m.Write([]byte(invoice))
	var h secp256k1.ModNScalar
	h.SetByteSlice(m.Sum(nil))
	return h
}

// child resolves (p, keyID, cp) to the counterparty's key and BRC-42's tweak h.
func (d *KeyDeriver) child(p Protocol, keyID string, cp Counterparty) (*secp256k1.PublicKey, secp256k1.ModNScalar, error) {
	invoice, err := InvoiceNumber(p, keyID)
	if err != nil {
		return nil, secp256k1.ModNScalar{}, err
	}
	cpKey, err := d.counterpartyKey(cp)
	if err != nil {
		return nil, secp256k1.ModNScalar{}, err
	}
	return cpKey, d.tweak(cpKey, invoice), nil
}

// DerivePrivateKey is KeyDeriver.derivePrivateKey: (root + h) mod n.
func (d *KeyDeriver) DerivePrivateKey(p Protocol, keyID string, cp Counterparty) (*secp256k1.PrivateKey, error) {
	_, h, err := d.child(p, keyID, cp)
	if err != nil {
		return nil, err
	}
	h.Add(&d.root.Key)
	return secp256k1.NewPrivateKey(&h), nil
}

// DerivePublicKey is KeyDeriver.derivePublicKey with forSelf false: the counterparty's child
// public key P_cp + h·G, which is the public key of the child private key the counterparty
// derives for the same invoice with this root as its counterparty.
func (d *KeyDeriver) DerivePublicKey(p Protocol, keyID string, cp Counterparty) (*secp256k1.PublicKey, error) {
	cpKey, h, err := d.child(p, keyID, cp)
	if err != nil {
		return nil, err
	}
	var hg, base, sum secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&h, &hg)
	cpKey.AsJacobian(&base)
	secp256k1.AddNonConst(&base, &hg, &sum)
	sum.ToAffine()
	return secp256k1.NewPublicKey(&sum.X, &sum.Y), nil
}

// DeriveSymmetricKey is KeyDeriver.deriveSymmetricKey: the x coordinate of
// childPriv · childPub, big-endian with its leading zero bytes stripped, as BigNumber.toArray
// writes it. The stripping is part of the HMAC key: HMAC pads a short key with zeros on the
// right, so a kept leading zero gives another MAC.
func (d *KeyDeriver) DeriveSymmetricKey(p Protocol, keyID string, cp Counterparty) ([]byte, error) {
	priv, err := d.DerivePrivateKey(p, keyID, cp)
	if err != nil {
		return nil, err
	}
	pub, err := d.DerivePublicKey(p, keyID, cp)
	if err != nil {
		return nil, err
	}
	s := mul(&priv.Key, pub)
	x := s.X.Bytes()
	k := x[:]
	for len(k) > 1 && k[0] == 0 {
		k = k[1:]
	}
	return k, nil
}
