package brc39

import (
	"errors"
	"fmt"
)

// Typed errors of the BRC-39 envelope. Every function wraps them with %w and a lowercase
// action, so callers tell failures apart with errors.Is; the struct types below carry the
// details and unwrap to one of these sentinels.
var (
	// ErrBadHeader: the BRC-39 header breaks a rule of the format (see HeaderError).
	ErrBadHeader = errors.New("invalid BRC-39 header")
	// ErrTruncated: the file ends before a region the format requires (see TruncatedError).
	ErrTruncated = errors.New("truncated BRC-39 file")
	// ErrAuthFailed: the GCM tag did not verify. The password is wrong or the file was
	// altered; the two cannot be told apart. Any plaintext already written is garbage.
	ErrAuthFailed = errors.New("wrong password or tampered file")
	// ErrKDFTooWeak: export parameters are weaker than the BRC-39 defaults.
	ErrKDFTooWeak = errors.New("KDF parameters weaker than the BRC-39 defaults")
	// ErrKDFTooCostly: KDF parameters exceed the configured limits. Import refuses such a
	// header before Argon2 runs, because the header is unauthenticated and could ask for
	// terabytes of memory.
	ErrKDFTooCostly = errors.New("KDF parameters above the limits")
	// ErrMessageTooLarge: a GCM message may hold at most 2^32-2 blocks (about 64 GiB).
	ErrMessageTooLarge = errors.New("plaintext exceeds the AES-GCM message limit")
	// ErrClosed: a write or a close after Close. (After a failure, the failure is returned
	// instead.)
	ErrClosed = errors.New("encrypter closed")
)

// HeaderField names a field of the BRC-39 header in errors.
type HeaderField string

// The header fields, in the order of the header layout.
const (
	FieldMagic       HeaderField = "magic"
	FieldVersion     HeaderField = "format version"
	FieldProtector   HeaderField = "protector type"
	FieldInnerFormat HeaderField = "inner format"
	FieldKDFType     HeaderField = "KDF type"
	FieldFlags       HeaderField = "flags"
	FieldSaltLength  HeaderField = "salt length"
	FieldNonceLength HeaderField = "nonce length"
	FieldIterations  HeaderField = "Argon2id iterations"
	FieldMemory      HeaderField = "Argon2id memory"
	FieldParallelism HeaderField = "Argon2id parallelism"
	FieldHashLength  HeaderField = "Argon2id hash length"
	FieldReserved    HeaderField = "reserved bytes"
)

// HeaderError reports the first header field that breaks a BRC-39 rule. Fields are checked
// in the toolbox's order, so a header with several faults names the same one both
// implementations name.
type HeaderError struct {
	Field  HeaderField
	Value  uint64 // the offending value (for the magic, its 4 bytes big-endian)
	Reason string
}

// Error names the field, its value and the rule, except for a wrong magic: that "value" is
// the first bytes of a file that is not a backup at all (a wallet, a key file, a document),
// which an error message must not carry to a log, a task or an API answer.
func (e *HeaderError) Error() string {
	if e.Field == FieldMagic {
		return "not a backup file: " + e.Reason
	}
	return fmt.Sprintf("BRC-39 header %s %#x: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadHeader) true.
func (e *HeaderError) Unwrap() error { return ErrBadHeader }

// Region names a part of a BRC-39 file in a TruncatedError.
type Region string

// The regions of a BRC-39 file, in file order.
const (
	RegionHeader     Region = "header"
	RegionSalt       Region = "salt"
	RegionNonce      Region = "nonce"
	RegionCiphertext Region = "ciphertext"
	RegionTag        Region = "tag"
)

// TruncatedError reports the region a BRC-39 file ends in. A file cut inside its
// ciphertext cannot be told from a shorter file: its last 16 bytes are taken as the tag and
// it fails with ErrAuthFailed instead.
type TruncatedError struct {
	Region Region
	Want   int // bytes the region needs
	Got    int // bytes present
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("BRC-39 file ends in the %s: %d of %d bytes", e.Region, e.Got, e.Want)
}

// Unwrap makes errors.Is(err, ErrTruncated) true.
func (e *TruncatedError) Unwrap() error { return ErrTruncated }

// KDFParamError names the KDF parameter that is outside its bound.
type KDFParamError struct {
	Param string // "iterations", "memoryKiB" or "parallelism"
	Value uint32
	Bound uint32 // the minimum (ErrKDFTooWeak) or maximum (ErrKDFTooCostly) it broke
	Err   error  // ErrKDFTooWeak or ErrKDFTooCostly
}

func (e *KDFParamError) Error() string {
	rel := "above the limit"
	if errors.Is(e.Err, ErrKDFTooWeak) {
		rel = "below the minimum"
	}
	return fmt.Sprintf("Argon2id %s %d is %s %d: %v", e.Param, e.Value, rel, e.Bound, e.Err)
}

// Unwrap returns the sentinel that classifies the refusal.
func (e *KDFParamError) Unwrap() error { return e.Err }
