package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// Version is the BRC-103 version @bsv/sdk 2.1.0 speaks (AUTH_VERSION); the BRC text's
// "1.0" is refused by it.
const Version = "0.1"

// Header names of BRC-104 (lower case, as Node reports them).
const (
	hVersion     = "x-bsv-auth-version"
	hIdentityKey = "x-bsv-auth-identity-key"
	hNonce       = "x-bsv-auth-nonce"
	hYourNonce   = "x-bsv-auth-your-nonce"
	hSignature   = "x-bsv-auth-signature"
	hRequestID   = "x-bsv-auth-request-id"
)

// wellKnownAuth is the handshake path, relative to the server's base URL.
const wellKnownAuth = "/.well-known/auth"

// requestedCertificates is always empty: walletsync asks for no certificates, and a
// non-empty certifier list would make a TypeScript peer send some.
type requestedCertificates struct {
	Certifiers []string          `json:"certifiers"`
	Types      map[string]string `json:"types"`
}

// handshakeMessage is the JSON body of an initialRequest and of an initialResponse. The
// signature is a JSON array of byte values: a TypeScript client handed a base64 or hex
// string instead hangs forever.
type handshakeMessage struct {
	Version               string                `json:"version"`
	MessageType           string                `json:"messageType"`
	IdentityKey           string                `json:"identityKey"`
	InitialNonce          string                `json:"initialNonce"`
	YourNonce             string                `json:"yourNonce,omitempty"`
	RequestedCertificates requestedCertificates `json:"requestedCertificates"`
	Signature             byteArray             `json:"signature,omitempty"`
}

// byteArray is bytes written and read as a JSON array of numbers 0..255.
type byteArray []byte

// MarshalJSON writes b as [n,n,...].
func (b byteArray) MarshalJSON() ([]byte, error) {
	out := []byte{'['}
	for i, c := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads an array of integers 0..255.
func (b *byteArray) UnmarshalJSON(data []byte) error {
	var ns []json.Number
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&ns); err != nil {
		return err
	}
	out := make([]byte, len(ns))
	for i, n := range ns {
		v, err := strconv.ParseUint(string(n), 10, 8)
		if err != nil {
			return fmt.Errorf("byte %d: %q is not 0..255", i, n)
		}
		out[i] = byte(v)
	}
	*b = out
	return nil
}

// parseHandshake decodes an initialRequest or initialResponse body of at most a few
// kilobytes, requiring the version, the message type and a parsable identity key and
// nonce. The nonce must be base64 without padding, so that a TypeScript peer, which decodes
// the two nonces of a handshake concatenated, reads the same bytes.
func parseHandshake(body []byte, messageType string) (*handshakeMessage, error) {
	var m handshakeMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadMessage, messageType, err)
	}
	if m.Version != Version {
		return nil, fmt.Errorf("%w: %s version %.20q, want %q", ErrBadMessage, messageType, m.Version, Version)
	}
	if m.MessageType != messageType {
		return nil, fmt.Errorf("%w: message type %.40q, want %s", ErrBadMessage, m.MessageType, messageType)
	}
	if _, err := ParsePublicKey(m.IdentityKey); err != nil {
		return nil, fmt.Errorf("%w: %s identity: %w", ErrBadMessage, messageType, err)
	}
	if _, err := decodeSessionNonce(m.InitialNonce); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadMessage, messageType, err)
	}
	return &m, nil
}

// decodeSessionNonce decodes a peer's session nonce: 1 to 256 bytes of standard base64 with
// no padding.
func decodeSessionNonce(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) == 0 || len(b) > 256 || len(b)%3 != 0 {
		return nil, fmt.Errorf("%w: nonce %.80q is not unpadded base64 of 1 to 256 bytes", ErrBadMessage, s)
	}
	return b, nil
}

// handshakeData is what an initialResponse signs: both nonces decoded, the client's first,
// under the key id "<clientNonce> <serverNonce>".
func handshakeData(clientNonce, serverNonce string) ([]byte, string, error) {
	c, err := decodeSessionNonce(clientNonce)
	if err != nil {
		return nil, "", err
	}
	s, err := decodeSessionNonce(serverNonce)
	if err != nil {
		return nil, "", err
	}
	return append(c, s...), clientNonce + " " + serverNonce, nil
}
