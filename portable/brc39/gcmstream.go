package brc39

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"walletsync/wallet"
)

// streamChunk is the buffer each streaming direction works through: large enough that AES-CTR
// and GHASH run at full speed, small enough that memory stays flat whatever the file size.
const streamChunk = 32 << 10

// gcmMaxBytes is GCM's plaintext limit: 2^32 - 2 blocks (SP 800-38D §5.2.1.1).
const gcmMaxBytes = (1<<32 - 2) * 16

// gcmStream is one AES-GCM message without AAD, processed in pieces. It produces exactly the
// ciphertext and tag of cipher.NewGCMWithNonceSize(block, len(nonce)) for the same key,
// nonce and plaintext, which the standard library can only do in one shot.
//
// J0 is nonce || 0^31 || 1 for a 12-byte nonce and GHASH_H(nonce, padded, || 0^64 ||
// [len(nonce) in bits]64) for any other length (BRC-39 uses 32 bytes). The payload is
// encrypted with AES-CTR from inc32(J0); the tag is E_K(J0) XOR GHASH_H(C, padded, ||
// [0]64 || [len(C) in bits]64).
type gcmStream struct {
	ctr     ctr32
	hash    ghash
	tagMask fieldElement // E_K(J0)
	n       uint64       // payload bytes so far
}

// newGCMStream starts a message under key and nonce (1 or more bytes).
func newGCMStream(key Key, nonce []byte) (*gcmStream, error) {
	if len(nonce) == 0 {
		return nil, fmt.Errorf("gcm: empty nonce: %w", wallet.ErrInvalidArgument)
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	s := &gcmStream{}
	var b [16]byte
	block.Encrypt(b[:], b[:])
	s.hash.init(loadElement(b[:]))
	if len(nonce) == 12 {
		copy(b[:], nonce)
		binary.BigEndian.PutUint32(b[12:], 1)
	} else {
		s.hash.write(nonce)
		s.hash.sum(0, uint64(len(nonce))*8).store(b[:])
		s.hash.reset()
	}
	s.ctr.init(block, b)
	block.Encrypt(b[:], b[:])
	s.tagMask = loadElement(b[:])
	return s, nil
}

// reserve counts n more payload bytes, refusing to pass the GCM limit.
func (s *gcmStream) reserve(n int) error {
	if s.n+uint64(n) > gcmMaxBytes {
		return ErrMessageTooLarge
	}
	s.n += uint64(n)
	return nil
}

// seal encrypts src into dst (which may be src) and hashes the ciphertext.
func (s *gcmStream) seal(dst, src []byte) error {
	if err := s.reserve(len(src)); err != nil {
		return err
	}
	s.ctr.xor(dst, src)
	s.hash.write(dst[:len(src)])
	return nil
}

// open hashes the ciphertext src and decrypts it into dst (which may be src).
func (s *gcmStream) open(dst, src []byte) error {
	if err := s.reserve(len(src)); err != nil {
		return err
	}
	s.hash.write(src)
	s.ctr.xor(dst, src)
	return nil
}

// tag finishes the message and returns its 16-byte tag.
func (s *gcmStream) tag() [TagSize]byte {
	var t [TagSize]byte
	s.hash.sum(0, s.n*8).xor(s.tagMask).store(t[:])
	return t
}

// ctr32 is AES-CTR with GCM's inc32: only the low 32 bits of the counter block count, and
// they wrap without carrying into the nonce-derived upper 96 bits. cipher.NewCTR carries
// across all 128 bits, and with a GHASH-derived J0 the low word can start anywhere (a
// wrap after a few blocks is as likely as any other start), so the stream is restarted at
// counter 0 when the low word wraps; GCM's 2^32-2 block limit means that happens at most
// once per message.
type ctr32 struct {
	block  cipher.Block
	iv     [16]byte
	stream cipher.Stream
	left   uint64 // keystream bytes before the low 32 bits wrap
}

// init starts the keystream at inc32(j0).
func (c *ctr32) init(block cipher.Block, j0 [16]byte) {
	c.block, c.iv = block, j0
	c.start(binary.BigEndian.Uint32(j0[12:]) + 1)
}

func (c *ctr32) start(counter uint32) {
	binary.BigEndian.PutUint32(c.iv[12:], counter)
	c.stream = cipher.NewCTR(c.block, c.iv[:])
	c.left = (1<<32 - uint64(counter)) * 16
}

// xor XORs the keystream into dst from src.
func (c *ctr32) xor(dst, src []byte) {
	for len(src) > 0 {
		if c.left == 0 {
			c.start(0)
		}
		n := int(min(uint64(len(src)), c.left))
		c.stream.XORKeyStream(dst[:n], src[:n])
		dst, src = dst[n:], src[n:]
		c.left -= uint64(n)
	}
}

// gcmWriter encrypts what is written to it onto w and writes the tag on Close. It never
// holds more than streamChunk bytes. Any failure is sticky: later calls return it and Close
// writes no tag, so a failed output can never pass as complete (it fails to verify).
type gcmWriter struct {
	w   io.Writer
	s   *gcmStream
	buf []byte
	err error // the first failure, or ErrClosed after Close
}

func newGCMWriter(w io.Writer, s *gcmStream) *gcmWriter {
	return &gcmWriter{w: w, s: s, buf: make([]byte, streamChunk)}
}

// Write encrypts p onto the underlying writer. It does not modify p.
func (g *gcmWriter) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	done := 0
	for len(p) > done {
		chunk := p[done:min(len(p), done+len(g.buf))]
		out := g.buf[:len(chunk)]
		if err := g.s.seal(out, chunk); err != nil {
			return done, g.fail(fmt.Errorf("encrypt: %w", err))
		}
		if err := writeAll(g.w, out); err != nil {
			return done, g.fail(fmt.Errorf("encrypt: write ciphertext: %w", err))
		}
		done += len(chunk)
	}
	return done, nil
}

// Close writes the tag. It does not close the underlying writer.
func (g *gcmWriter) Close() error {
	if g.err != nil {
		return g.err
	}
	t := g.s.tag()
	if err := writeAll(g.w, t[:]); err != nil {
		return g.fail(fmt.Errorf("encrypt: write tag: %w", err))
	}
	g.err = ErrClosed
	return nil
}

func (g *gcmWriter) fail(err error) error {
	g.err = err
	return err
}

// writeAll writes p to w, turning a short write without an error into io.ErrShortWrite.
func writeAll(w io.Writer, p []byte) error {
	n, err := w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// openTo decrypts the rest of r, ciphertext followed by the 16-byte tag, writing plaintext
// to dst as it goes, and returns nil only when the tag verifies. The tag is the last 16 bytes
// of r, which are unknown until r ends, so the last 16 bytes read are always held back: a
// 16-byte look-behind on a streamChunk buffer, whatever the length of r.
//
// Plaintext reaches dst BEFORE the tag is checked. Until openTo returns nil it is
// unauthenticated and must not be parsed, shown or acted on.
func (s *gcmStream) openTo(ctx context.Context, r io.Reader, dst io.Writer) error {
	buf := make([]byte, streamChunk+TagSize)
	held := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(r, buf[held:])
		held += n
		end := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !end {
			return fmt.Errorf("read ciphertext: %w", err)
		}
		if held > TagSize {
			body := buf[:held-TagSize]
			if err := s.open(body, body); err != nil {
				return err
			}
			if err := writeAll(dst, body); err != nil {
				return fmt.Errorf("write plaintext: %w", err)
			}
			held = copy(buf, buf[held-TagSize:held])
		}
		if end {
			break
		}
	}
	if err := payloadTooShort(int64(s.n) + int64(held)); err != nil {
		return err
	}
	want := s.tag()
	if subtle.ConstantTimeCompare(want[:], buf[:TagSize]) != 1 {
		return ErrAuthFailed
	}
	return nil
}

// payloadTooShort returns the *TruncatedError for a BRC-39 payload (ciphertext and tag) of n
// bytes, or nil. The toolbox refuses an empty ciphertext; its other minimum, a file of at
// least 33 + 16 + 2 bytes, follows from salt and nonce being at least one byte each.
func payloadTooShort(n int64) error {
	switch {
	case n < TagSize:
		return &TruncatedError{Region: RegionTag, Want: TagSize, Got: int(n)}
	case n == TagSize:
		return &TruncatedError{Region: RegionCiphertext, Want: 1, Got: 0}
	}
	return nil
}
