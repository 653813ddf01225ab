package brc39

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
)

// KeySize is the length of the AES-256 key Argon2id derives.
const KeySize = 32

// The BRC-39 default Argon2id parameters (the toolbox's DEFAULT_ITERATIONS,
// DEFAULT_MEMORY_KIB, DEFAULT_PARALLELISM). Export refuses anything weaker.
const (
	DefaultIterations  = 7
	DefaultMemoryKiB   = 131072 // 128 MiB
	DefaultParallelism = 1
)

// KDFParams are the Argon2id cost parameters a BRC-39 header carries.
type KDFParams struct {
	Iterations  uint32 // t, passes over memory
	MemoryKiB   uint32 // m, in KiB
	Parallelism uint8  // p, lanes
}

// DefaultKDFParams are the parameters export uses unless told otherwise: t 7, m 131072 KiB,
// p 1. One derivation needs 128 MiB and took 1.9 s on the development machine (AMD EPYC,
// 4.9 s under the race detector).
var DefaultKDFParams = KDFParams{Iterations: DefaultIterations, MemoryKiB: DefaultMemoryKiB, Parallelism: DefaultParallelism}

// CheckExport returns a *KDFParamError matching ErrKDFTooWeak when p is weaker than the
// defaults in any parameter (as the toolbox's encryptBRC39 refuses t < 7 and m < 131072),
// and one matching ErrKDFTooCostly when p exceeds DefaultKDFLimits: export never writes a
// file that walletsync's own import refuses under its default limits.
func (p KDFParams) CheckExport() error {
	for _, c := range []struct {
		name       string
		value, min uint32
	}{
		{"iterations", p.Iterations, DefaultIterations},
		{"memoryKiB", p.MemoryKiB, DefaultMemoryKiB},
		{"parallelism", uint32(p.Parallelism), DefaultParallelism},
	} {
		if c.value < c.min {
			return &KDFParamError{Param: c.name, Value: c.value, Bound: c.min, Err: ErrKDFTooWeak}
		}
	}
	return DefaultKDFLimits.Check(p)
}

// KDFLimits caps the Argon2id parameters import accepts from a header. A zero field means
// the default.
type KDFLimits struct {
	MaxIterations  uint32
	MaxMemoryKiB   uint32
	MaxParallelism uint8
}

// DefaultKDFLimits: t <= 16, m <= 256 MiB, p <= 4. A BRC-39 header is not authenticated, so
// these are what a hostile file can make an import spend before its tag fails, per attempt:
// 256 MiB and t·m = 16·256 MiB, 4.6 times the work of the defaults (about 9 s where the
// defaults take 1.9 s), instead of 1 GiB and 70 s under the old caps (t 64, m 1 GiB).
//
// Real files use the toolbox's defaults, t 7, m 128 MiB, p 1, which walletsync writes too;
// nothing we know of writes more. The caps leave headroom for a deliberately stronger file:
// twice the memory and more than twice the passes of the defaults. p is capped at 4 because
// Go's Argon2id runs the lanes on that many cores at once: p 4 admits the RFC 9106
// recommendations' lane count, and keeps one derivation from taking every core.
var DefaultKDFLimits = KDFLimits{MaxIterations: 16, MaxMemoryKiB: 256 << 10, MaxParallelism: 4}

// WithDefaults fills zero fields from DefaultKDFLimits.
func (l KDFLimits) WithDefaults() KDFLimits {
	if l.MaxIterations == 0 {
		l.MaxIterations = DefaultKDFLimits.MaxIterations
	}
	if l.MaxMemoryKiB == 0 {
		l.MaxMemoryKiB = DefaultKDFLimits.MaxMemoryKiB
	}
	if l.MaxParallelism == 0 {
		l.MaxParallelism = DefaultKDFLimits.MaxParallelism
	}
	return l
}

// Check returns a *KDFParamError matching ErrKDFTooCostly for the first parameter of p above
// l (after WithDefaults), or nil. It is pure arithmetic: run it before Argon2.
func (l KDFLimits) Check(p KDFParams) error {
	l = l.WithDefaults()
	for _, c := range []struct {
		name       string
		value, max uint32
	}{
		{"iterations", p.Iterations, l.MaxIterations},
		{"memoryKiB", p.MemoryKiB, l.MaxMemoryKiB},
		{"parallelism", uint32(p.Parallelism), uint32(l.MaxParallelism)},
	} {
		if c.value > c.max {
			return &KDFParamError{Param: c.name, Value: c.value, Bound: c.max, Err: ErrKDFTooCostly}
		}
	}
	return nil
}

// Key is a derived AES-256 key. It formats as "[redacted key]" under every fmt verb and in
// slog, so a key that reaches a log line or an error message by mistake leaks nothing; use
// key[:] for the bytes.
type Key [KeySize]byte

// Format writes "[redacted key]" whatever the verb.
func (Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "[redacted key]") }

// LogValue keeps the key out of structured logs.
func (Key) LogValue() slog.Value { return slog.StringValue("[redacted key]") }

// DeriveKey derives the file key for h from password: the password in Unicode NFC, as
// UTF-8, through Argon2id with h's salt and parameters. It refuses an invalid header and
// parameters above limits before Argon2 runs. Argon2 cannot be interrupted: ctx is checked
// before and after it, and the call lasts as long as the derivation (time it around this
// call to report the KDF time). Argon2 allocates MemoryKiB for the duration.
func DeriveKey(ctx context.Context, password string, h Header, limits KDFLimits) (Key, error) {
	if err := h.Validate(); err != nil {
		return Key{}, fmt.Errorf("derive key: %w", err)
	}
	if err := limits.Check(h.KDF); err != nil {
		return Key{}, fmt.Errorf("derive key: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Key{}, fmt.Errorf("derive key: %w", err)
	}
	key := deriveKey(password, h.Salt, h.KDF)
	if err := ctx.Err(); err != nil {
		return Key{}, fmt.Errorf("derive key: %w", err)
	}
	return key, nil
}

// deriveKey is Argon2id without any check. Callers have validated p: Go's argon2 would
// silently raise a memory below 8 KiB per lane, which the header rules refuse.
func deriveKey(password string, salt []byte, p KDFParams) Key {
	pw := []byte(norm.NFC.String(password))
	out := argon2.IDKey(pw, salt, p.Iterations, p.MemoryKiB, p.Parallelism, KeySize)
	var key Key
	copy(key[:], out)
	clear(pw)
	clear(out)
	return key
}
