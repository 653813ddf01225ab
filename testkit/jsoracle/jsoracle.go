// Package jsoracle asks Node.js how JavaScript itself writes strings and numbers as JSON,
// sorts object keys and compares strings with localeCompare, so that tests can compare
// walletsync's bytes with the toolbox's. It runs jsoracle.js (next to this file) as a
// subprocess; see that file's header for the protocol.
//
// It is a test helper shared by the tests of wallet and portable, and so imports nothing of
// walletsync but testkit/tier (which imports nothing): wallet's own tests could not import a
// package that imports wallet. A test that needs Node and finds it missing fails; only the
// quick tier (-short) skips it.
package jsoracle

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

	"walletsync/testkit/tier"
)

// Request and Response are the protocol of jsoracle.js (see its header). Strings are given
// as String encodes them, numbers as Number encodes them.
type Request struct {
	Strings []string   `json:"strings,omitempty"`
	Numbers []string   `json:"numbers,omitempty"`
	Ranks   [][]string `json:"ranks,omitempty"`
	KeySort [][]string `json:"keySort,omitempty"`
}

// Response holds JSON.stringify of each string (base64 of its UTF-8 bytes) and number, the
// dense localeCompare ranks of each Ranks list, each KeySort list in default sort order
// (encoded as String encodes), and the collator's locale and ICU version.
type Response struct {
	Locale  string     `json:"locale"`
	ICU     string     `json:"icu"`
	Strings []string   `json:"strings"`
	Numbers []string   `json:"numbers"`
	Ranks   [][]int    `json:"ranks"`
	KeySort [][]string `json:"keySort"`
}

// script is jsoracle.js, found from this file's location.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "jsoracle.js")
}

// Ask runs jsoracle.js under Node with LANG=C.UTF-8 (and no other locale variable, which
// would override it). A missing node fails the test: these comparisons are the evidence
// that walletsync's bytes equal the toolbox's, and a skipped test proves nothing.
func Ask(tb testing.TB, req Request) Response {
	tb.Helper()
	tier.Full(tb, "Node (the JavaScript oracle)")
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node is not on PATH (%v): the JavaScript comparison tests need Node.js 20, the runtime @bsv/wallet-toolbox runs on; install it, they must not be skipped", err)
	}
	in, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(node, script())
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "LANG" && name != "LANGUAGE" && !strings.HasPrefix(name, "LC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LANG=C.UTF-8")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node jsoracle.js: %v\n%s", err, stderr.Bytes())
	}
	var resp Response
	if err := json.Unmarshal(out, &resp); err != nil {
		tb.Fatalf("decode the oracle's answer: %v", err)
	}
	if resp.Locale != "en-US" {
		tb.Fatalf("Node's collator locale under LANG=C.UTF-8 is %q, want en-US", resp.Locale)
	}
	return resp
}

// String encodes s for the oracle: base64 of its UTF-16LE code units.
func String(s string) string { return Units(utf16.Encode([]rune(s))) }

// Strings encodes each of ss as String does.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Units encodes UTF-16 code units for the oracle, so that a lone surrogate, which no Go
// string holds, can be asked about.
func Units(units []uint16) string {
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(b[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// FromString decodes a string the oracle returned in String's encoding.
func FromString(tb testing.TB, b64 string) string {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		tb.Fatal(err)
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(units))
}

// Number encodes f for the oracle: the hex of its 64 bits, so that every float64 arrives
// exactly.
func Number(f float64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(f))
	return hex.EncodeToString(b[:])
}

// RandomText returns a valid UTF-8 string of up to maxLen characters mixing ASCII (control
// characters included), BMP and astral characters, never a surrogate.
func RandomText(rng *rand.Rand, maxLen int) string {
	var b strings.Builder
	for range rng.IntN(maxLen + 1) {
		var r rune
		switch rng.IntN(5) {
		case 0:
			r = rune(rng.IntN(0x80))
		case 1:
			r = rune(0x20 + rng.IntN(0x5f))
		case 2:
			r = rune(0x80 + rng.IntN(0x800-0x80))
		case 3:
			r = rune(0x800 + rng.IntN(0x10000-0x800))
		default:
			r = rune(0x10000 + rng.IntN(0x110000-0x10000))
		}
		if r >= 0xD800 && r <= 0xDFFF {
			r -= 0x800
		}
		b.WriteRune(r)
	}
	return b.String()
}
