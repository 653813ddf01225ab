package brc39

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// katHeaderHex is the 33-byte fixed header of the reference's known-answer file.
const katHeaderHex = "574441540101260100202000000007000200000120000000000000000000000000"

// sequence returns n bytes counting up from first: the KAT salt (00..1f) and nonce (a0..bf).
func sequence(first byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}

func katHeader() Header { return NewHeader(DefaultKDFParams, sequence(0x00, 32), sequence(0xa0, 32)) }

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarshal(t testing.TB, h Header) []byte {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeader_MarshalMatchesReference(t *testing.T) {
	got := mustMarshal(t, katHeader())
	want := append(append(mustHex(t, katHeaderHex), sequence(0x00, 32)...), sequence(0xa0, 32)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("header = %x\nwant     %x", got, want)
	}
	if len(got) != katHeader().Size() {
		t.Fatalf("Size() = %d, encoded %d bytes", katHeader().Size(), len(got))
	}
}

func TestParseHeader_ReadsExactlyTheHeader(t *testing.T) {
	raw := mustMarshal(t, katHeader())
	r := bytes.NewReader(append(bytes.Clone(raw), "payload"...))
	h, err := ParseHeader(iotest.OneByteReader(r))
	if err != nil {
		t.Fatal(err)
	}
	if h.KDF != DefaultKDFParams || !bytes.Equal(h.Salt, sequence(0, 32)) || !bytes.Equal(h.Nonce, sequence(0xa0, 32)) ||
		h.Version != 1 || h.Protector != 1 || h.InnerFormat != 38 || h.KDFType != 1 || h.Flags != 0 || h.HashLength != 32 {
		t.Fatalf("parsed %+v", h)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "payload" {
		t.Fatalf("ParseHeader consumed past the header: %q left", rest)
	}
}

func TestParseHeader_AcceptsShortSaltAndNonce(t *testing.T) {
	for _, n := range []int{1, 12, 255} {
		raw := mustMarshal(t, NewHeader(KDFParams{1, 8, 1}, sequence(1, n), sequence(2, n)))
		h, err := ParseHeader(bytes.NewReader(raw))
		if err != nil || len(h.Salt) != n || len(h.Nonce) != n {
			t.Fatalf("salt and nonce of %d bytes: %v", n, err)
		}
	}
}

func TestParseHeader_RejectsEachRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int
		value  byte
		field  HeaderField
	}{
		{"bad magic", 0, 'w', FieldMagic},
		{"bad magic last byte", 3, 'X', FieldMagic},
		{"format version 0", 4, 0, FieldVersion},
		{"format version 2", 4, 2, FieldVersion},
		{"protector 0", 5, 0, FieldProtector},
		{"protector 2 (reserved)", 5, 2, FieldProtector},
		{"inner format 39", 6, 39, FieldInnerFormat},
		{"KDF 0", 7, 0, FieldKDFType},
		{"KDF 2", 7, 2, FieldKDFType},
		{"flags 1", 8, 1, FieldFlags},
		{"flags 0x80", 8, 0x80, FieldFlags},
		{"salt length 0", 9, 0, FieldSaltLength},
		{"nonce length 0", 10, 0, FieldNonceLength},
		{"hash length 31", 20, 31, FieldHashLength},
		{"hash length 64", 20, 64, FieldHashLength},
		{"hash length 0", 20, 0, FieldHashLength},
		{"first reserved byte", 21, 1, FieldReserved},
		{"last reserved byte", 32, 0xff, FieldReserved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustMarshal(t, katHeader())
			raw[tc.offset] = tc.value
			checkHeaderError(t, raw, tc.field)
		})
	}
	for _, tc := range []struct {
		name  string
		kdf   KDFParams
		field HeaderField
	}{
		{"iterations 0", KDFParams{0, 131072, 1}, FieldIterations},
		{"memory 0", KDFParams{7, 0, 1}, FieldMemory},
		{"parallelism 0", KDFParams{7, 131072, 0}, FieldParallelism},
		{"memory below 8 KiB per lane", KDFParams{1, 8*4 - 1, 4}, FieldMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustMarshal(t, katHeader())
			copy(raw[11:20], []byte{
				byte(tc.kdf.Iterations >> 24), byte(tc.kdf.Iterations >> 16), byte(tc.kdf.Iterations >> 8), byte(tc.kdf.Iterations),
				byte(tc.kdf.MemoryKiB >> 24), byte(tc.kdf.MemoryKiB >> 16), byte(tc.kdf.MemoryKiB >> 8), byte(tc.kdf.MemoryKiB),
				tc.kdf.Parallelism,
			})
			checkHeaderError(t, raw, tc.field)
			if _, err := NewHeader(tc.kdf, []byte{1}, []byte{1}).MarshalBinary(); !errors.Is(err, ErrBadHeader) {
				t.Fatalf("MarshalBinary accepted %+v: %v", tc.kdf, err)
			}
		})
	}
}

func checkHeaderError(t *testing.T, raw []byte, field HeaderField) {
	t.Helper()
	_, err := ParseHeader(bytes.NewReader(raw))
	var he *HeaderError
	if !errors.As(err, &he) || !errors.Is(err, ErrBadHeader) {
		t.Fatalf("ParseHeader = %v, want a *HeaderError", err)
	}
	if he.Field != field {
		t.Fatalf("ParseHeader refused %s (%v), want %s", he.Field, err, field)
	}
}

// TestParseHeader_ReportsFaultsInToolboxOrder: with several faults, the first in
// decryptBRC39's order is named.
func TestParseHeader_ReportsFaultsInToolboxOrder(t *testing.T) {
	raw := mustMarshal(t, katHeader())
	raw[32] = 1 // reserved
	raw[20] = 0 // hash length
	raw[9] = 0  // salt length
	raw[8] = 1  // flags
	checkHeaderError(t, raw, FieldFlags)
	raw[8] = 0
	checkHeaderError(t, raw, FieldReserved)
	raw[32] = 0
	checkHeaderError(t, raw, FieldSaltLength)
}

func TestParseHeader_Truncated(t *testing.T) {
	raw := mustMarshal(t, katHeader())
	for n := range len(raw) {
		want := RegionHeader
		switch {
		case n >= HeaderFixedSize+SaltSize:
			want = RegionNonce
		case n >= HeaderFixedSize:
			want = RegionSalt
		}
		_, err := ParseHeader(bytes.NewReader(raw[:n]))
		var te *TruncatedError
		if !errors.As(err, &te) || !errors.Is(err, ErrTruncated) || te.Region != want {
			t.Fatalf("header cut to %d bytes: %v, want truncated in the %s", n, err, want)
		}
	}
}

func TestParseHeader_ShortNonBRC39InputIsBadMagic(t *testing.T) {
	for _, in := range []string{"{", "{}", "WDA!", `{"brc":38}`} {
		_, err := ParseHeader(bytes.NewReader([]byte(in)))
		var he *HeaderError
		if !errors.As(err, &he) || he.Field != FieldMagic {
			t.Errorf("ParseHeader(%q) = %v, want bad magic", in, err)
		}
	}
}

func TestParseHeader_ReadErrorIsNotTruncation(t *testing.T) {
	errBroken := errors.New("test: broken disk")
	_, err := ParseHeader(iotest.ErrReader(errBroken))
	if !errors.Is(err, errBroken) || errors.Is(err, ErrTruncated) {
		t.Fatalf("ParseHeader = %v, want the read error", err)
	}
}

func TestHeader_AppendBinaryKeepsPrefix(t *testing.T) {
	prefix := []byte("prefix")
	got, err := katHeader().AppendBinary(bytes.Clone(prefix))
	if err != nil || !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], mustMarshal(t, katHeader())) {
		t.Fatalf("AppendBinary = %x, %v", got, err)
	}
	bad := katHeader()
	bad.Salt = make([]byte, 256)
	if got, err := bad.AppendBinary(bytes.Clone(prefix)); !errors.Is(err, ErrBadHeader) || !bytes.Equal(got, prefix) {
		t.Fatalf("AppendBinary of a 256-byte salt = %x, %v; want the prefix unchanged and ErrBadHeader", got, err)
	}
}

// FuzzParseHeader: ParseHeader never panics, refuses only with its typed errors, and an
// accepted header marshals back to exactly the bytes it was read from.
func FuzzParseHeader(f *testing.F) {
	valid := mustMarshal(f, katHeader())
	f.Add(valid)
	f.Add(append(bytes.Clone(valid), 1, 2, 3))
	f.Add(mustMarshal(f, NewHeader(KDFParams{1, 8, 1}, []byte{9}, []byte{8})))
	f.Add(valid[:HeaderFixedSize])
	f.Add([]byte("WDAT"))
	f.Add([]byte{})
	for _, off := range []int{4, 5, 6, 7, 8, 9, 10, 14, 18, 19, 20, 21, 32} {
		bad := bytes.Clone(valid)
		bad[off] ^= 0xff
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := ParseHeader(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		out, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("accepted header does not marshal: %v", err)
		}
		if !bytes.Equal(out, in[:len(out)]) {
			t.Fatalf("round trip changed the header:\n in %x\nout %x", in[:len(out)], out)
		}
	})
}
