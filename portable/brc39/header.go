package brc39

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// BRC-39 v1 constants (reference: "Header layout").
const (
	// Magic opens every BRC-39 file.
	Magic = "WDAT"
	// HeaderFixedSize is the length of the header before the salt and the nonce.
	HeaderFixedSize = 33
	// TagSize is the length of the GCM tag that ends every BRC-39 file.
	TagSize = 16
	// SaltSize and NonceSize are what export writes; import accepts 1..255 bytes of each.
	SaltSize  = 32
	NonceSize = 32

	FormatVersion1    = 1  // format version
	ProtectorPassword = 1  // protector type: password
	InnerFormatBRC38  = 38 // inner format: BRC-38 JSON
	KDFArgon2id       = 1  // KDF type: Argon2id
	// HashLength is the only Argon2id output length BRC-39 allows: an AES-256 key.
	HashLength = KeySize
)

// Header is a BRC-39 header: the 33-byte fixed part, then the salt and the nonce. Nothing in
// it is authenticated (BRC-39 uses no AAD), so a parsed Header has passed every format rule
// but is still hostile input: check its KDF parameters against KDFLimits before Argon2 runs
// (DeriveKey does).
type Header struct {
	Version     uint8     // format version, 1
	Protector   uint8     // protector type, 1 (password)
	InnerFormat uint8     // 38 (BRC-38 JSON)
	KDFType     uint8     // 1 (Argon2id)
	Flags       uint8     // 0
	KDF         KDFParams // Argon2id t, m (KiB), p
	HashLength  uint8     // Argon2id output length, 32
	Salt        []byte    // 1..255 bytes; export writes 32
	Nonce       []byte    // the GCM IV, 1..255 bytes; export writes 32
}

// NewHeader returns the v1 header export writes for the given KDF parameters, salt and
// nonce. It does not copy salt or nonce.
func NewHeader(kdf KDFParams, salt, nonce []byte) Header {
	return Header{
		Version: FormatVersion1, Protector: ProtectorPassword, InnerFormat: InnerFormatBRC38,
		KDFType: KDFArgon2id, KDF: kdf, HashLength: HashLength, Salt: salt, Nonce: nonce,
	}
}

// Size returns the encoded length of h: 33 bytes plus the salt and the nonce.
func (h Header) Size() int { return HeaderFixedSize + len(h.Salt) + len(h.Nonce) }

// Validate returns a *HeaderError for the first field of h that breaks a BRC-39 rule, or
// nil. It applies the rules ParseHeader applies, so MarshalBinary never writes a header
// ParseHeader refuses.
func (h Header) Validate() error { return h.validate(nil) }

// validate checks the fields in the order decryptBRC39 checks them; reserved is the fixed
// header's bytes 21..32 when the header was parsed.
func (h Header) validate(reserved []byte) error {
	fail := func(f HeaderField, v uint64, reason string) error {
		return &HeaderError{Field: f, Value: v, Reason: reason}
	}
	switch {
	case h.Version != FormatVersion1:
		return fail(FieldVersion, uint64(h.Version), "unsupported; want 1")
	case h.Protector != ProtectorPassword:
		return fail(FieldProtector, uint64(h.Protector), "unsupported; want 1 (password)")
	case h.InnerFormat != InnerFormatBRC38:
		return fail(FieldInnerFormat, uint64(h.InnerFormat), "unsupported; want 38 (BRC-38)")
	case h.KDFType != KDFArgon2id:
		return fail(FieldKDFType, uint64(h.KDFType), "unsupported; want 1 (Argon2id)")
	case h.Flags != 0:
		return fail(FieldFlags, uint64(h.Flags), "must be 0")
	}
	for i, b := range reserved {
		if b != 0 {
			return fail(FieldReserved, uint64(b), fmt.Sprintf("byte %d must be 0", 21+i))
		}
	}
	switch {
	case len(h.Salt) == 0 || len(h.Salt) > 255:
		return fail(FieldSaltLength, uint64(len(h.Salt)), "must be 1..255")
	case len(h.Nonce) == 0 || len(h.Nonce) > 255:
		return fail(FieldNonceLength, uint64(len(h.Nonce)), "must be 1..255")
	case h.KDF.Iterations == 0:
		return fail(FieldIterations, 0, "must not be 0")
	case h.KDF.MemoryKiB == 0:
		return fail(FieldMemory, 0, "must not be 0")
	case h.KDF.Parallelism == 0:
		return fail(FieldParallelism, 0, "must not be 0")
	case h.HashLength != HashLength:
		return fail(FieldHashLength, uint64(h.HashLength), "must be 32")
	case uint64(h.KDF.MemoryKiB) < 8*uint64(h.KDF.Parallelism):
		// Argon2id needs 8 KiB per lane. hash-wasm refuses less; Go's argon2 would silently
		// raise the memory and derive a different key, so refuse it here, before any work.
		return fail(FieldMemory, uint64(h.KDF.MemoryKiB), "below Argon2id's minimum of 8 KiB per lane")
	}
	return nil
}

// ParseHeader reads exactly one BRC-39 header from r: the 33-byte fixed part, the salt and
// the nonce, and nothing after them. It returns a *HeaderError (matching ErrBadHeader) for a
// broken rule and a *TruncatedError (matching ErrTruncated) when r ends first; input whose
// first bytes already differ from "WDAT" is reported as bad magic even when it is short,
// because "not a BRC-39 file" is the more useful answer. The returned salt and nonce are
// freshly allocated.
func ParseHeader(r io.Reader) (Header, error) {
	var fixed [HeaderFixedSize]byte
	if n, err := io.ReadFull(r, fixed[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if m := min(n, len(Magic)); string(fixed[:m]) != Magic[:m] {
				return Header{}, fmt.Errorf("parse header: %w", badMagic(fixed[:]))
			}
			return Header{}, fmt.Errorf("parse header: %w", &TruncatedError{Region: RegionHeader, Want: HeaderFixedSize, Got: n})
		}
		return Header{}, fmt.Errorf("parse header: read: %w", err)
	}
	if string(fixed[:4]) != Magic {
		return Header{}, fmt.Errorf("parse header: %w", badMagic(fixed[:]))
	}
	h := Header{
		Version: fixed[4], Protector: fixed[5], InnerFormat: fixed[6], KDFType: fixed[7], Flags: fixed[8],
		KDF: KDFParams{
			Iterations:  binary.BigEndian.Uint32(fixed[11:15]),
			MemoryKiB:   binary.BigEndian.Uint32(fixed[15:19]),
			Parallelism: fixed[19],
		},
		HashLength: fixed[20],
	}
	// Validate against the declared lengths before reading the salt and nonce they size.
	h.Salt, h.Nonce = make([]byte, fixed[9]), make([]byte, fixed[10])
	if err := h.validate(fixed[21:]); err != nil {
		return Header{}, fmt.Errorf("parse header: %w", err)
	}
	for _, part := range []struct {
		region Region
		buf    []byte
	}{{RegionSalt, h.Salt}, {RegionNonce, h.Nonce}} {
		if n, err := io.ReadFull(r, part.buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = &TruncatedError{Region: part.region, Want: len(part.buf), Got: n}
			}
			return Header{}, fmt.Errorf("parse header: read %s: %w", part.region, err)
		}
	}
	return h, nil
}

func badMagic(fixed []byte) error {
	return &HeaderError{Field: FieldMagic, Value: uint64(binary.BigEndian.Uint32(fixed[:4])), Reason: `no BRC-39 header (a BRC-39 file begins with "WDAT")`}
}

// AppendBinary appends the encoded header to b. It refuses a header that Validate refuses,
// returning b unchanged.
func (h Header) AppendBinary(b []byte) ([]byte, error) {
	if err := h.Validate(); err != nil {
		return b, fmt.Errorf("marshal header: %w", err)
	}
	b = append(b, Magic...)
	b = append(b, h.Version, h.Protector, h.InnerFormat, h.KDFType, h.Flags, byte(len(h.Salt)), byte(len(h.Nonce)))
	b = binary.BigEndian.AppendUint32(b, h.KDF.Iterations)
	b = binary.BigEndian.AppendUint32(b, h.KDF.MemoryKiB)
	b = append(b, h.KDF.Parallelism, h.HashLength)
	b = append(b, make([]byte, HeaderFixedSize-21)...) // reserved
	b = append(b, h.Salt...)
	return append(b, h.Nonce...), nil
}

// MarshalBinary returns the encoded header, or the error AppendBinary returns.
func (h Header) MarshalBinary() ([]byte, error) { return h.AppendBinary(make([]byte, 0, h.Size())) }
