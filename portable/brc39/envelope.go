package brc39

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"walletsync/wallet"
)

// Encrypter writes one BRC-39 file: the header (already written when Encrypt returns), then
// the ciphertext of everything written to it, then on Close the 16-byte tag. The plaintext
// must be the canonical BRC-38 document; Encrypter does not look at it.
//
// Any error from Write or Close is final and leaves an incomplete file behind, which no
// reader accepts (its tag cannot verify): the caller deletes it.
type Encrypter struct {
	gw      *gcmWriter
	header  Header
	kdfTime time.Duration
}

var _ io.WriteCloser = (*Encrypter)(nil)

// Encrypt starts a BRC-39 file on w with password and params. It refuses params weaker than
// DefaultKDFParams or above DefaultKDFLimits (see KDFParams.CheckExport) before any work,
// reads a 32-byte salt and then a 32-byte nonce from rnd (crypto/rand when nil), runs
// Argon2id once (the password in NFC), and writes the header. ctx is checked before and
// after Argon2, which cannot be interrupted. Write the canonical BRC-38 JSON to the returned
// Encrypter and Close it; Close does not close w.
func Encrypt(ctx context.Context, w io.Writer, password string, params KDFParams, rnd io.Reader) (*Encrypter, error) {
	if err := params.CheckExport(); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	h := NewHeader(params, make([]byte, SaltSize), make([]byte, NonceSize))
	if _, err := io.ReadFull(rnd, h.Salt); err != nil {
		return nil, fmt.Errorf("encrypt: read salt: %w", err)
	}
	if _, err := io.ReadFull(rnd, h.Nonce); err != nil {
		return nil, fmt.Errorf("encrypt: read nonce: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	start := time.Now()
	key := deriveKey(password, h.Salt, params)
	kdfTime := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	e, err := NewEncrypter(w, h, key)
	if err != nil {
		return nil, err
	}
	e.kdfTime = kdfTime
	return e, nil
}

// NewEncrypter writes h to w and starts the GCM stream under key, which must be the key h's
// KDF derives from the password (DeriveKey), or no reader can open the file. It applies none
// of Encrypt's checks on the KDF parameters, so it is the one path that can write a file with
// weak parameters: Encrypt runs through it after its checks, and tests of the import use it
// to write files that open without Argon2's seconds. Anything that writes a backup for a
// person calls Encrypt.
func NewEncrypter(w io.Writer, h Header, key Key) (*Encrypter, error) {
	hb, err := h.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	s, err := newGCMStream(key, h.Nonce)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	if err := writeAll(w, hb); err != nil {
		return nil, fmt.Errorf("encrypt: write header: %w", err)
	}
	return &Encrypter{gw: newGCMWriter(w, s), header: h}, nil
}

// Write encrypts p onto the file. It does not modify or keep p.
func (e *Encrypter) Write(p []byte) (int, error) { return e.gw.Write(p) }

// Close writes the tag and completes the file. It refuses a file with no plaintext, which
// BRC-39 readers reject, and returns ErrClosed when called again.
func (e *Encrypter) Close() error {
	if e.gw.err == nil && e.gw.s.n == 0 {
		return e.gw.fail(fmt.Errorf("encrypt: empty plaintext, which BRC-39 readers refuse: %w", wallet.ErrInvalidArgument))
	}
	return e.gw.Close()
}

// Header returns the header written at the start of the file.
func (e *Encrypter) Header() Header { return e.header }

// KDFTime returns how long Argon2id took in Encrypt, for reports that show the KDF apart from
// the encoding work.
func (e *Encrypter) KDFTime() time.Duration { return e.kdfTime }

// Decrypt reads one BRC-39 file from r to its end and writes the plaintext to dst as it
// decrypts. It parses and validates the header, refuses KDF parameters above limits before
// Argon2 runs, refuses a file too short to hold a ciphertext and a tag before Argon2 runs,
// derives the key, and checks the tag once r is exhausted. It returns the header whenever
// the header itself was valid, also alongside a later error.
//
// UNAUTHENTICATED OUTPUT. Plaintext is written to dst before the tag can be checked (the tag
// is the last 16 bytes of the file). Until Decrypt returns a nil error, what dst received
// is attacker-controlled and must not be parsed, shown or acted on; on any error, discard it
// (delete or quarantine the staging file). dst should be a private staging file, never the
// BRC-38 decoder directly.
//
// Errors: *HeaderError (ErrBadHeader), *TruncatedError (ErrTruncated), *KDFParamError
// (ErrKDFTooCostly), ErrAuthFailed for a wrong password or a tampered file (indistinguishable
// by design), ctx's error, and I/O errors from r and dst.
func Decrypt(ctx context.Context, r io.Reader, password string, limits KDFLimits, dst io.Writer) (Header, error) {
	return DecryptWith(ctx, r, dst, func(h Header) (Key, error) { return DeriveKey(ctx, password, h, limits) })
}

// DecryptWith is Decrypt with the key derivation passed in: derive is called once, with a
// header that passed every format rule, after the file proved long enough to hold a
// ciphertext and a tag, and its error is returned wrapped. It must refuse parameters above
// the caller's limits before Argon2 runs, as DeriveKey does. The import passes one that waits
// for its turn to run Argon2 and times it; tests and fuzzing pass a fixed key, to exercise
// every other step without Argon2's seconds.
func DecryptWith(ctx context.Context, r io.Reader, dst io.Writer, derive func(Header) (Key, error)) (Header, error) {
	h, err := ParseHeader(r)
	if err != nil {
		return Header{}, fmt.Errorf("decrypt: %w", err)
	}
	// Read just enough of the payload to refuse a short file before the costly KDF, as the
	// toolbox does; this is the only read-ahead.
	head := make([]byte, TagSize+1)
	n, err := io.ReadFull(r, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if err := payloadTooShort(int64(n)); err != nil {
			return h, fmt.Errorf("decrypt: %w", err)
		}
	case err != nil:
		return h, fmt.Errorf("decrypt: read ciphertext: %w", err)
	}
	key, err := derive(h)
	if err != nil {
		return h, fmt.Errorf("decrypt: %w", err)
	}
	if err := DecryptPayload(ctx, io.MultiReader(bytes.NewReader(head[:n]), r), h, key, dst); err != nil {
		return h, fmt.Errorf("decrypt: %w", err)
	}
	return h, nil
}

// DecryptPayload decrypts the payload that follows h in a BRC-39 file: everything left in r,
// ciphertext then the 16-byte tag, under key and h's nonce, writing plaintext to dst in
// chunks of at most 32 KiB. It returns nil only when the whole tag verified (compared in
// constant time); ErrAuthFailed otherwise; a *TruncatedError when r holds fewer than 17
// bytes. Memory use is constant.
//
// UNAUTHENTICATED OUTPUT: as for Decrypt, dst receives plaintext before the tag is checked;
// nothing may read it as data unless DecryptPayload returned nil.
func DecryptPayload(ctx context.Context, r io.Reader, h Header, key Key, dst io.Writer) error {
	s, err := newGCMStream(key, h.Nonce)
	if err != nil {
		return fmt.Errorf("decrypt payload: %w", err)
	}
	if err := s.openTo(ctx, r, dst); err != nil {
		return fmt.Errorf("decrypt payload: %w", err)
	}
	return nil
}
