package brc39

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"pgregory.net/rapid"
)

// gfMul is SP 800-38D Algorithm 1, bit by bit: the reference the table method is checked
// against.
func gfMul(x, y fieldElement) fieldElement {
	var z fieldElement
	for i := range 128 {
		word, shift := x.hi, 63-i
		if i >= 64 {
			word, shift = x.lo, 127-i
		}
		bit := word >> shift & 1
		if bit == 1 {
			z = z.xor(y)
		}
		y = y.mulX()
	}
	return z
}

// gfInverse returns x^(2^128-2), the inverse of a non-zero x.
func gfInverse(x fieldElement) fieldElement {
	inv := fieldElement{hi: 1 << 63} // the polynomial 1
	for range 127 {
		x = gfMul(x, x)
		inv = gfMul(inv, x)
	}
	return inv
}

func randomElement(rng *rand.Rand) fieldElement { return fieldElement{rng.Uint64(), rng.Uint64()} }

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func randomKey(rng *rand.Rand) Key {
	var k Key
	copy(k[:], randomBytes(rng, KeySize))
	return k
}

// tester is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// stdlibGCM is the one-shot reference: cipher.NewGCMWithNonceSize with the nonce's length.
func stdlibGCM(t tester, key Key, nonceLen int) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceLen)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

// sealInPieces encrypts plaintext through a gcmWriter, writing it in pieces cut at the given
// lengths (cycled), and returns ciphertext || tag.
func sealInPieces(t tester, key Key, nonce, plaintext []byte, pieces []int) []byte {
	t.Helper()
	s, err := newGCMStream(key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := newGCMWriter(&out, s)
	for i, p := 0, plaintext; len(p) > 0; i++ {
		n := min(len(p), pieces[i%len(pieces)])
		if m, err := w.Write(p[:n]); err != nil || m != n {
			t.Fatalf("write %d bytes: wrote %d, %v", n, m, err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return out.Bytes()
}

// chunkReader returns at most the next size (cycled) bytes per Read, to exercise the
// look-behind across every kind of short read.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), max(1, r.sizes[r.i%len(r.sizes)]))
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func openInPieces(key Key, nonce, sealed []byte, sizes []int) ([]byte, error) {
	s, err := newGCMStream(key, nonce)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = s.openTo(context.Background(), &chunkReader{data: sealed, sizes: sizes}, &out)
	return out.Bytes(), err
}

// checkAgainstStdlib seals and opens plaintext in pieces and compares both directions with
// the standard library's one-shot GCM.
func checkAgainstStdlib(t tester, key Key, nonce, plaintext []byte, writes, reads []int) {
	t.Helper()
	want := stdlibGCM(t, key, len(nonce)).Seal(nil, nonce, plaintext, nil)
	got := sealInPieces(t, key, nonce, plaintext, writes)
	if !bytes.Equal(got, want) {
		t.Fatalf("seal of %d bytes (nonce %d bytes, writes %v) differs from stdlib", len(plaintext), len(nonce), writes)
	}
	if len(plaintext) == 0 {
		return // BRC-39 refuses an empty ciphertext; TestDecryptPayload_Truncated covers it
	}
	opened, err := openInPieces(key, nonce, want, reads)
	if err != nil {
		t.Fatalf("open of %d bytes (reads %v): %v", len(plaintext), reads, err)
	}
	if !bytes.Equal(opened, plaintext) {
		t.Fatalf("open of %d bytes (reads %v) returned different plaintext", len(plaintext), reads)
	}
}

func TestGHash_MatchesBitwiseMultiply(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		h, x := randomElement(rng), randomElement(rng)
		var g ghash
		g.init(h)
		if got, want := g.mulH(x), gfMul(x, h); got != want {
			t.Fatalf("mulH(%x) with H=%x = %x, want %x", x, h, got, want)
		}
	}
}

func TestGCMStream_MatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, 2, 15, 16, 17, 31, 32, 33, 255, 4095, 4096, 4097, streamChunk - 1, streamChunk, streamChunk + 1, 3*streamChunk + 17, 100_003}
	splits := map[string][]int{
		"one write":  {1 << 30},
		"bytewise":   {1},
		"odd pieces": {7, 1, 33, 16, 5000},
		"random":     {1 + rng.IntN(40000), 1 + rng.IntN(17), 1 + rng.IntN(100000)},
	}
	for _, nonceLen := range []int{NonceSize, 12, 1, 16, 255} {
		for _, size := range sizes {
			for name, pieces := range splits {
				if (name == "bytewise") && size > 5000 {
					continue // byte-at-a-time over 100 KB adds time, not coverage
				}
				t.Run(fmt.Sprintf("nonce%d/size%d/%s", nonceLen, size, name), func(t *testing.T) {
					key, nonce := randomKey(rng), randomBytes(rng, nonceLen)
					checkAgainstStdlib(t, key, nonce, randomBytes(rng, size), pieces, pieces)
				})
			}
		}
	}
}

func TestGCMStream_MatchesStdlibRandomSplits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(0, 3*streamChunk+100).Draw(rt, "size")
		nonceLen := rapid.SampledFrom([]int{NonceSize, NonceSize, 12, 1, 64}).Draw(rt, "nonceLen")
		writes := rapid.SliceOfN(rapid.IntRange(1, 2*streamChunk), 1, 8).Draw(rt, "writes")
		reads := rapid.SliceOfN(rapid.IntRange(1, 2*streamChunk), 1, 8).Draw(rt, "reads")
		seed := rapid.Uint64().Draw(rt, "seed")
		rng := rand.New(rand.NewPCG(seed, 5))
		checkAgainstStdlib(rt, randomKey(rng), randomBytes(rng, nonceLen), randomBytes(rng, size), writes, reads)
	})
}

func TestGCMStream_MatchesStdlibMultiMegabyte(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	for _, size := range []int{1<<20 + 3, 3<<20 + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			writes := []int{1 + rng.IntN(200_000), 1 + rng.IntN(70_000), 1 + rng.IntN(1000)}
			reads := []int{1 + rng.IntN(100_000), 1 + rng.IntN(5000)}
			checkAgainstStdlib(t, randomKey(rng), randomBytes(rng, NonceSize), randomBytes(rng, size), writes, reads)
		})
	}
}

// nonceForJ0 returns a 32-byte nonce whose GCM pre-counter block J0 under key is j0, by
// solving J0 = N1·H^3 + N2·H^2 + L·H for the second nonce block N2.
func nonceForJ0(key Key, n1 []byte, j0 fieldElement) []byte {
	block, _ := aes.NewCipher(key[:])
	var hb [16]byte
	block.Encrypt(hb[:], hb[:])
	h := loadElement(hb[:])
	h2 := gfMul(h, h)
	lengths := fieldElement{0, NonceSize * 8}
	sum := j0.xor(gfMul(loadElement(n1), gfMul(h2, h))).xor(gfMul(lengths, h))
	nonce := make([]byte, NonceSize)
	copy(nonce, n1)
	gfMul(sum, gfInverse(h2)).store(nonce[16:])
	return nonce
}

// TestGCMStream_CounterWrapsInLow32Bits pins GCM's inc32: with a GHASH-derived J0 the low
// counter word can start just below 2^32, and must wrap to 0 without carrying into the upper
// 96 bits, which a plain cipher.NewCTR would do.
func TestGCMStream_CounterWrapsInLow32Bits(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	key := randomKey(rng)
	j0 := fieldElement{rng.Uint64(), rng.Uint64()&^0xffffffff | 0xfffffffd}
	nonce := nonceForJ0(key, randomBytes(rng, 16), j0)

	s, err := newGCMStream(key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	if s.ctr.left != 2*16 {
		t.Fatalf("keystream before the wrap = %d bytes, want 32: the nonce does not give the J0 asked for", s.ctr.left)
	}
	plaintext := randomBytes(rng, 200)
	for _, pieces := range [][]int{{200}, {1}, {31, 2, 40}, {32, 32}} {
		checkAgainstStdlib(t, key, nonce, plaintext, pieces, pieces)
	}

	block, _ := aes.NewCipher(key[:])
	var iv [16]byte
	j0.store(iv[:])
	iv[15]++ // inc32(J0) = ...fffffffe
	naive := make([]byte, len(plaintext))
	cipher.NewCTR(block, iv[:]).XORKeyStream(naive, plaintext)
	if want := stdlibGCM(t, key, NonceSize).Seal(nil, nonce, plaintext, nil); bytes.Equal(naive, want[:len(plaintext)]) {
		t.Fatal("a carrying 128-bit counter matched GCM: this test no longer exercises the wrap")
	}
}

func TestGCMStream_RefusesPastTheGCMLimit(t *testing.T) {
	s, err := newGCMStream(Key{}, make([]byte, NonceSize))
	if err != nil {
		t.Fatal(err)
	}
	s.n = gcmMaxBytes - 16
	buf := make([]byte, 17)
	if err := s.seal(buf, buf); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("seal past the limit: %v, want ErrMessageTooLarge", err)
	}
	if err := s.open(buf[:16], buf[:16]); err != nil {
		t.Fatalf("open up to the limit: %v", err)
	}
}

func TestDecryptPayload_TamperingFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	key, nonce := randomKey(rng), randomBytes(rng, NonceSize)
	plaintext := randomBytes(rng, 3*streamChunk+5)
	sealed := stdlibGCM(t, key, NonceSize).Seal(nil, nonce, plaintext, nil)
	ct := len(sealed) - TagSize
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"first ciphertext bit", func(b []byte) []byte { b[0] ^= 1; return b }},
		{"ciphertext bit at a chunk boundary", func(b []byte) []byte { b[streamChunk] ^= 0x80; return b }},
		{"last ciphertext bit", func(b []byte) []byte { b[ct-1] ^= 0x80; return b }},
		{"first tag bit", func(b []byte) []byte { b[ct] ^= 1; return b }},
		{"last tag bit", func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }},
		{"last byte cut", func(b []byte) []byte { return b[:len(b)-1] }},
		{"byte appended", func(b []byte) []byte { return append(b, 0) }},
		{"tag swapped for zeros", func(b []byte) []byte { clear(b[ct:]); return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.mutate(bytes.Clone(sealed))
			h := NewHeader(DefaultKDFParams, nil, nonce)
			err := DecryptPayload(context.Background(), bytes.NewReader(bad), h, key, io.Discard)
			if !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("DecryptPayload = %v, want ErrAuthFailed", err)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		h := NewHeader(DefaultKDFParams, nil, nonce)
		if err := DecryptPayload(context.Background(), bytes.NewReader(sealed), h, randomKey(rng), io.Discard); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("DecryptPayload = %v, want ErrAuthFailed", err)
		}
	})
}

func TestDecryptPayload_Truncated(t *testing.T) {
	nonce := make([]byte, NonceSize)
	h := NewHeader(DefaultKDFParams, nil, nonce)
	for _, tc := range []struct {
		n      int
		region Region
	}{{0, RegionTag}, {1, RegionTag}, {15, RegionTag}, {16, RegionCiphertext}} {
		err := DecryptPayload(context.Background(), bytes.NewReader(make([]byte, tc.n)), h, Key{}, io.Discard)
		var te *TruncatedError
		if !errors.As(err, &te) || te.Region != tc.region || !errors.Is(err, ErrTruncated) {
			t.Errorf("payload of %d bytes: %v, want a truncated %s", tc.n, err, tc.region)
		}
	}
}

func TestDecryptPayload_StopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := NewHeader(DefaultKDFParams, nil, make([]byte, NonceSize))
	err := DecryptPayload(ctx, bytes.NewReader(make([]byte, 100)), h, Key{}, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("DecryptPayload = %v, want context.Canceled", err)
	}
}

// failingWriter accepts limit bytes, then fails or writes short.
type failingWriter struct {
	limit int
	short bool
}

var errDiskFull = errors.New("test: disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.limit {
		w.limit -= len(p)
		return len(p), nil
	}
	n := w.limit
	w.limit = 0
	if w.short {
		return n, nil
	}
	return n, errDiskFull
}

func TestGCMWriter_FailuresAreFinal(t *testing.T) {
	newWriter := func(w io.Writer) *gcmWriter {
		s, err := newGCMStream(Key{}, make([]byte, NonceSize))
		if err != nil {
			t.Fatal(err)
		}
		return newGCMWriter(w, s)
	}
	t.Run("ErrWriter", func(t *testing.T) {
		g := newWriter(&failingWriter{limit: 10})
		if _, err := g.Write(make([]byte, 100)); !errors.Is(err, errDiskFull) {
			t.Fatalf("write: %v, want the writer's error", err)
		}
		if _, err := g.Write([]byte{1}); !errors.Is(err, errDiskFull) {
			t.Fatalf("write after failure: %v, want the first error again", err)
		}
		if err := g.Close(); !errors.Is(err, errDiskFull) {
			t.Fatalf("close after failure: %v, want the first error again (and no tag)", err)
		}
	})
	t.Run("ShortWrite", func(t *testing.T) {
		g := newWriter(&failingWriter{limit: 10, short: true})
		if _, err := g.Write(make([]byte, 100)); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("write: %v, want io.ErrShortWrite", err)
		}
	})
	t.Run("ErrClosed", func(t *testing.T) {
		g := newWriter(io.Discard)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Write([]byte{1}); !errors.Is(err, ErrClosed) {
			t.Fatalf("write after close: %v, want ErrClosed", err)
		}
		if err := g.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second close: %v, want ErrClosed", err)
		}
	})
	t.Run("InputUnmodified", func(t *testing.T) {
		p := bytes.Repeat([]byte{0xaa}, 2*streamChunk+3)
		if _, err := newWriter(io.Discard).Write(p); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, bytes.Repeat([]byte{0xaa}, len(p))) {
			t.Fatal("Write modified its argument")
		}
	})
}

// zeroReader yields n zero bytes.
type zeroReader struct{ n int }

func (r *zeroReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	clear(p[:n])
	r.n -= n
	return n, nil
}

// TestGCMStream_MemoryIsBounded checks the streaming contract: 4 MiB through either
// direction allocates a fixed amount, not a multiple of the input.
func TestGCMStream_MemoryIsBounded(t *testing.T) {
	const size, budget = 4 << 20, 256 << 10
	measure := func(name string, f func()) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > budget {
			t.Errorf("%s of %d MiB allocated %d bytes, want at most %d", name, size>>20, got, budget)
		}
	}
	measure("seal", func() {
		s, _ := newGCMStream(Key{}, make([]byte, NonceSize))
		w := newGCMWriter(io.Discard, s)
		if _, err := io.Copy(w, &zeroReader{n: size}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	})
	measure("open", func() {
		s, _ := newGCMStream(Key{}, make([]byte, NonceSize))
		if err := s.openTo(context.Background(), &zeroReader{n: size}, io.Discard); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("open of zeros: %v, want ErrAuthFailed", err)
		}
	})
}

// BenchmarkGCMStream compares the streaming GCM with the standard library's one-shot GCM
// (AES-NI and carry-less multiply on amd64) on the same 1 MiB message.
func BenchmarkGCMStream(b *testing.B) {
	const size = 1 << 20
	rng := rand.New(rand.NewPCG(12, 13))
	key, nonce, plaintext := randomKey(rng), randomBytes(rng, NonceSize), randomBytes(rng, size)
	aead := stdlibGCM(b, key, NonceSize)
	sealed := aead.Seal(nil, nonce, plaintext, nil)
	b.Run("seal/stream", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			s, _ := newGCMStream(key, nonce)
			w := newGCMWriter(io.Discard, s)
			_, _ = w.Write(plaintext)
			_ = w.Close()
		}
	})
	b.Run("seal/stdlib", func(b *testing.B) {
		b.SetBytes(size)
		dst := make([]byte, 0, len(sealed))
		for b.Loop() {
			dst = aead.Seal(dst[:0], nonce, plaintext, nil)
		}
	})
	b.Run("open/stream", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			s, _ := newGCMStream(key, nonce)
			if err := s.openTo(context.Background(), bytes.NewReader(sealed), io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open/stdlib", func(b *testing.B) {
		b.SetBytes(size)
		dst := make([]byte, 0, size)
		for b.Loop() {
			var err error
			if dst, err = aead.Open(dst[:0], nonce, sealed, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
