package brc39

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"walletsync/wallet"
)

// The reference's known-answer vector (brc38-brc39.md, "Known-answer vector").
const (
	katKeyHex       = "553c836c9bf8f8739d2519c15b0ec6dbe29105f5916d06d946cf9751a51653bf"
	katPlainSHA256  = "1258e00a7c1f54ebfb29cf532367b12a3a5e376bb7897e5767b353e6e3058254"
	katTagHex       = "cc1876a771d87862a0313f0a2383c792"
	katFileSHA256   = "f423616541ef102a252bc92d93b9b64d3490bb2a272c4f52fafa0b23045bea51"
	katFileSize     = 793
	katPlaintextLen = 680
)

// katPlaintext is the reference's minimal BRC-38 document in canonical form: every time
// 2026-04-23T20:00:00.000Z, the short sourceStorage, user 1, the 13 tables empty. The
// envelope never looks inside it; the test checks its length and digest, so an edit to the
// literal fails loudly instead of changing the vector.
const katPlaintext = `{"brc":38,"exportedAt":"2026-04-23T20:00:00.000Z","formatVersion":1,"sourceStorage":{"chain":"test","created_at":"2026-04-23T20:00:00.000Z","storageIdentityKey":"source-storage","storageName":"source-storage","updated_at":"2026-04-23T20:00:00.000Z"},"tables":{"certificateFields":[],"certificates":[],"commissions":[],"outputBaskets":[],"outputTagMaps":[],"outputTags":[],"outputs":[],"provenTxReqs":[],"provenTxs":[],"syncStates":[],"transactions":[],"txLabelMaps":[],"txLabels":[]},"title":"User Wallet Data Format","user":{"activeStorage":"source-storage","created_at":"2026-04-23T20:00:00.000Z","identityKey":"identity-key","updated_at":"2026-04-23T20:00:00.000Z","userId":1}}`

func katKey(t testing.TB) Key {
	var k Key
	copy(k[:], mustHex(t, katKeyHex))
	return k
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkKATFile checks a file against every part of the vector.
func checkKATFile(t *testing.T, file []byte) {
	t.Helper()
	if len(file) != katFileSize {
		t.Fatalf("file is %d bytes, want %d", len(file), katFileSize)
	}
	if got := hex.EncodeToString(file[:HeaderFixedSize]); got != katHeaderHex {
		t.Errorf("header %s\nwant   %s", got, katHeaderHex)
	}
	if !bytes.Equal(file[HeaderFixedSize:HeaderFixedSize+64], append(sequence(0, 32), sequence(0xa0, 32)...)) {
		t.Error("salt and nonce are not 00..1f, a0..bf")
	}
	if got := hex.EncodeToString(file[len(file)-TagSize:]); got != katTagHex {
		t.Errorf("tag %s, want %s", got, katTagHex)
	}
	if got := sha256Hex(file); got != katFileSHA256 {
		t.Errorf("file SHA-256 %s, want %s", got, katFileSHA256)
	}
}

// TestEnvelope_KnownAnswer runs Argon2id at the default cost exactly twice, in parallel:
// once inside Encrypt (with the NFD password) and once in DeriveKey (with the NFC one).
func TestEnvelope_KnownAnswer(t *testing.T) {
	plaintext := []byte(katPlaintext)
	if len(plaintext) != katPlaintextLen || sha256Hex(plaintext) != katPlainSHA256 {
		t.Fatalf("plaintext: %d bytes, SHA-256 %s; want %d bytes, %s\n%s", len(plaintext), sha256Hex(plaintext), katPlaintextLen, katPlainSHA256, plaintext)
	}
	t.Run("Encrypt", func(t *testing.T) {
		t.Parallel()
		var file bytes.Buffer
		rnd := bytes.NewReader(append(sequence(0, 32), sequence(0xa0, 32)...)) // salt, then nonce
		e, err := Encrypt(context.Background(), &file, "Cafe\u0301", DefaultKDFParams, rnd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Write(plaintext); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		checkKATFile(t, file.Bytes())
		if e.KDFTime() <= 0 || e.Header().KDF != DefaultKDFParams {
			t.Errorf("KDFTime %v, header %+v", e.KDFTime(), e.Header())
		}
	})
	t.Run("DeriveKey", func(t *testing.T) {
		t.Parallel()
		key, err := DeriveKey(context.Background(), "Caf\u00e9", katHeader(), KDFLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(key[:]) != katKeyHex {
			t.Fatalf("key %x, want %s", key[:], katKeyHex)
		}
	})
	t.Run("EncryptUnderKey", func(t *testing.T) {
		var file bytes.Buffer
		e, err := NewEncrypter(&file, katHeader(), katKey(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(e, iotest.OneByteReader(bytes.NewReader(plaintext))); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		checkKATFile(t, file.Bytes())
	})
	t.Run("DecryptUnderKey", func(t *testing.T) {
		var file, out bytes.Buffer
		e, _ := NewEncrypter(&file, katHeader(), katKey(t))
		_, _ = e.Write(plaintext)
		_ = e.Close()
		h, err := DecryptWith(context.Background(), bytes.NewReader(file.Bytes()), &out, func(Header) (Key, error) { return katKey(t), nil })
		if err != nil || !bytes.Equal(out.Bytes(), plaintext) || h.KDF != DefaultKDFParams {
			t.Fatalf("decrypt: %v; plaintext equal %v", err, bytes.Equal(out.Bytes(), plaintext))
		}
	})
}

// cheapFile returns a BRC-39 file under password with cheapKDF (which only newEncrypter can
// write) and plaintext.
func cheapFile(t testing.TB, password string, plaintext []byte) []byte {
	t.Helper()
	h := NewHeader(cheapKDF, sequence(0x10, SaltSize), sequence(0x60, NonceSize))
	var file bytes.Buffer
	e, err := NewEncrypter(&file, h, deriveKey(password, h.Salt, h.KDF))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(plaintext); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

func TestDecrypt_RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 41))
	for _, size := range []int{1, 2, 16, 17, streamChunk + TagSize, 200_001} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			plaintext := randomBytes(rng, size)
			file := cheapFile(t, "correct horse", plaintext)
			var out bytes.Buffer
			h, err := Decrypt(context.Background(), iotest.HalfReader(bytes.NewReader(file)), "correct horse", KDFLimits{}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), plaintext) || h.KDF != cheapKDF || !bytes.Equal(h.Nonce, sequence(0x60, NonceSize)) {
				t.Fatalf("round trip of %d bytes: plaintext equal %v, header %+v", size, bytes.Equal(out.Bytes(), plaintext), h)
			}
		})
	}
}

func TestDecrypt_WrongPassword(t *testing.T) {
	file := cheapFile(t, "Caf\u00e9", []byte(`{"brc":38}`))
	_, err := Decrypt(context.Background(), bytes.NewReader(file), "Cafe", KDFLimits{}, io.Discard)
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "wrong password or tampered file") {
		t.Fatalf("Decrypt = %v, want ErrAuthFailed", err)
	}
	if _, err := Decrypt(context.Background(), bytes.NewReader(file), "Cafe\u0301", KDFLimits{}, io.Discard); err != nil {
		t.Fatalf("Decrypt with the NFD spelling: %v", err)
	}
}

// TestDecrypt_TruncatedAtEveryLength cuts a file at every length: the header regions and a
// payload too short for a tag or a ciphertext are *TruncatedError naming the region; a cut
// inside the ciphertext or the tag is ErrAuthFailed, as the toolbox reports it too.
func TestDecrypt_TruncatedAtEveryLength(t *testing.T) {
	file := cheapFile(t, "pw", bytes.Repeat([]byte("x"), 40))
	payloadStart := HeaderFixedSize + SaltSize + NonceSize
	for n := range len(file) {
		var want Region
		switch {
		case n < HeaderFixedSize:
			want = RegionHeader
		case n < HeaderFixedSize+SaltSize:
			want = RegionSalt
		case n < payloadStart:
			want = RegionNonce
		case n < payloadStart+TagSize:
			want = RegionTag
		case n == payloadStart+TagSize:
			want = RegionCiphertext
		}
		_, err := Decrypt(context.Background(), bytes.NewReader(file[:n]), "pw", KDFLimits{}, io.Discard)
		var te *TruncatedError
		switch {
		case want == "" && !errors.Is(err, ErrAuthFailed):
			t.Fatalf("file cut to %d bytes: %v, want ErrAuthFailed", n, err)
		case want != "" && (!errors.As(err, &te) || te.Region != want):
			t.Fatalf("file cut to %d bytes: %v, want truncated in the %s", n, err, want)
		}
	}
}

// TestDecrypt_ShortPayloadRefusedBeforeKDF: like the toolbox, a file without room for a
// ciphertext and a tag is refused before the (costly) key derivation.
func TestDecrypt_ShortPayloadRefusedBeforeKDF(t *testing.T) {
	file := cheapFile(t, "pw", []byte("x"))
	for _, n := range []int{len(file) - 1, len(file) - 17, len(file) - 20} {
		_, err := DecryptWith(context.Background(), bytes.NewReader(file[:n]), io.Discard, func(Header) (Key, error) {
			t.Fatalf("file of %d bytes: the KDF ran", n)
			return Key{}, nil
		})
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("file of %d bytes: %v, want ErrTruncated", n, err)
		}
	}
}

// TestDecrypt_EveryFlippedBitFails flips each bit of a whole file in turn: header, salt,
// nonce, ciphertext and tag. Every variant must fail with one of the typed errors; none
// decrypts. Tight limits keep the Argon2 runs that flipped parameters ask for cheap.
func TestDecrypt_EveryFlippedBitFails(t *testing.T) {
	file := cheapFile(t, "pw", []byte(`{"brc":38,"title":"x"}`))
	limits := KDFLimits{MaxIterations: 2, MaxMemoryKiB: 64, MaxParallelism: 1}
	for bit := range 8 * len(file) {
		bad := bytes.Clone(file)
		bad[bit/8] ^= 1 << (bit % 8)
		_, err := Decrypt(context.Background(), bytes.NewReader(bad), "pw", limits, io.Discard)
		if err == nil {
			t.Fatalf("flipped bit %d (byte %d) decrypted", bit, bit/8)
		}
		if !errors.Is(err, ErrAuthFailed) && !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrKDFTooCostly) {
			t.Fatalf("flipped bit %d: untyped error %v", bit, err)
		}
	}
}

func TestDecrypt_HostileKDFRefused(t *testing.T) {
	file := cheapFile(t, "pw", []byte("x"))
	copy(file[11:20], []byte{0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 1}) // m = 4 TiB
	h, err := Decrypt(context.Background(), bytes.NewReader(file), "pw", KDFLimits{}, io.Discard)
	var pe *KDFParamError
	if !errors.Is(err, ErrKDFTooCostly) || !errors.As(err, &pe) || pe.Param != "memoryKiB" {
		t.Fatalf("Decrypt = %v, want ErrKDFTooCostly on memoryKiB", err)
	}
	if h.KDF.MemoryKiB != 0xffffffff {
		t.Fatalf("Decrypt returned header %+v, want the parsed one for reporting", h)
	}
}

func TestDecrypt_ReadErrorPassesThrough(t *testing.T) {
	errBroken := errors.New("test: broken disk")
	file := cheapFile(t, "pw", bytes.Repeat([]byte("x"), 100))
	r := io.MultiReader(bytes.NewReader(file[:120]), iotest.ErrReader(errBroken))
	if _, err := Decrypt(context.Background(), r, "pw", KDFLimits{}, io.Discard); !errors.Is(err, errBroken) || errors.Is(err, ErrTruncated) {
		t.Fatalf("Decrypt = %v, want the read error", err)
	}
}

func TestEncrypt_RefusesWeakParamsBeforeAnyWork(t *testing.T) {
	var out bytes.Buffer
	rnd := iotest.ErrReader(errors.New("test: randomness read"))
	_, err := Encrypt(context.Background(), &out, "pw", cheapKDF, rnd)
	if !errors.Is(err, ErrKDFTooWeak) || out.Len() != 0 {
		t.Fatalf("Encrypt = %v with %d bytes written, want ErrKDFTooWeak and nothing written", err, out.Len())
	}
}

func TestEncrypt_RandomnessFailure(t *testing.T) {
	errRand := errors.New("test: no entropy")
	for _, n := range []int{0, SaltSize, SaltSize + 5} {
		rnd := io.MultiReader(bytes.NewReader(make([]byte, n)), iotest.ErrReader(errRand))
		if _, err := Encrypt(context.Background(), io.Discard, "pw", DefaultKDFParams, rnd); !errors.Is(err, errRand) {
			t.Fatalf("Encrypt with %d random bytes = %v, want the randomness error", n, err)
		}
	}
}

func TestEncrypt_StopsOnCancelBeforeKDF(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Encrypt(ctx, io.Discard, "pw", DefaultKDFParams, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Encrypt = %v, want context.Canceled", err)
	}
}

func TestEncrypter_RefusesEmptyPlaintext(t *testing.T) {
	e, err := NewEncrypter(io.Discard, NewHeader(cheapKDF, []byte{1}, []byte{2}), Key{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("Close = %v, want ErrInvalidArgument", err)
	}
	if _, err := e.Write([]byte("late")); err == nil {
		t.Fatal("Write after a failed Close succeeded")
	}
}

func TestEncrypter_WriteFailureIsFinal(t *testing.T) {
	w := &failingWriter{limit: katHeader().Size() + 10}
	e, err := NewEncrypter(w, katHeader(), Key{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(make([]byte, 100)); !errors.Is(err, errDiskFull) {
		t.Fatalf("Write = %v, want the disk error", err)
	}
	if err := e.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close = %v, want the disk error again", err)
	}
}

// FuzzDecrypt drives the whole decrypt path except Argon2 (a fixed key) with arbitrary
// files and compares it with the standard library's one-shot GCM: it never panics, refuses
// only with typed errors, and succeeds exactly when cipher.AEAD.Open does, with the same
// plaintext.
func FuzzDecrypt(f *testing.F) {
	var key Key
	copy(key[:], sequence(7, KeySize))
	seal := func(h Header, plaintext []byte) []byte {
		var file bytes.Buffer
		e, err := NewEncrypter(&file, h, key)
		if err != nil {
			f.Fatal(err)
		}
		_, _ = e.Write(plaintext)
		if err := e.Close(); err != nil {
			f.Fatal(err)
		}
		return file.Bytes()
	}
	valid := seal(katHeader(), []byte(`{"brc":38}`))
	f.Add(valid)
	f.Add(seal(NewHeader(cheapKDF, []byte{1}, sequence(3, 12)), []byte("x")))
	f.Add(seal(NewHeader(cheapKDF, []byte{1}, []byte{2}), bytes.Repeat([]byte("y"), 100)))
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:katHeader().Size()+TagSize])
	f.Add(append(bytes.Clone(valid), 0))
	f.Fuzz(func(t *testing.T, file []byte) {
		var out bytes.Buffer
		_, err := DecryptWith(context.Background(), bytes.NewReader(file), &out, func(Header) (Key, error) { return key, nil })
		h, headerErr := ParseHeader(bytes.NewReader(file))
		if headerErr != nil {
			if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("header refused with %v, decrypt said %v", headerErr, err)
			}
			return
		}
		payload := file[h.Size():]
		if len(payload) <= TagSize {
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("payload of %d bytes: %v, want ErrTruncated", len(payload), err)
			}
			return
		}
		want, openErr := stdlibGCM(t, key, len(h.Nonce)).Open(nil, h.Nonce, payload, nil)
		if (err == nil) != (openErr == nil) || (err != nil && !errors.Is(err, ErrAuthFailed)) {
			t.Fatalf("decrypt: %v; stdlib Open: %v", err, openErr)
		}
		if err == nil && !bytes.Equal(out.Bytes(), want) {
			t.Fatal("decrypt and stdlib Open returned different plaintexts")
		}
	})
}
