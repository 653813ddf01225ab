package portable

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// oracleRequest and oracleResponse are the protocol of testdata/jsoracle.js (see its header).
type oracleRequest struct {
	Strings []string   `json:"strings,omitempty"`
	Numbers []string   `json:"numbers,omitempty"`
	Ranks   [][]string `json:"ranks,omitempty"`
	KeySort [][]string `json:"keySort,omitempty"`
}

type oracleResponse struct {
	Locale  string     `json:"locale"`
	ICU     string     `json:"icu"`
	Strings []string   `json:"strings"`
	Numbers []string   `json:"numbers"`
	Ranks   [][]int    `json:"ranks"`
	KeySort [][]string `json:"keySort"`
}

// askNode runs testdata/jsoracle.js under Node with LANG=C.UTF-8 (and no other locale
// variable, which would override it). A missing node fails the test: these comparisons are
// the evidence that walletsync's bytes equal the toolbox's, and a skipped test proves
// nothing.
func askNode(t *testing.T, req oracleRequest) oracleResponse {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): the JavaScript comparison tests need Node.js 20, the runtime @bsv/wallet-toolbox runs on; install it, they must not be skipped", err)
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "jsoracle.js"))
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
		t.Fatalf("node testdata/jsoracle.js: %v\n%s", err, stderr.Bytes())
	}
	var resp oracleResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("decode the oracle's answer: %v", err)
	}
	if resp.Locale != "en-US" {
		t.Fatalf("Node's collator locale under LANG=C.UTF-8 is %q, want en-US", resp.Locale)
	}
	return resp
}

// jsString encodes s for the oracle: base64 of its UTF-16LE code units.
func jsString(s string) string { return jsUnits(utf16.Encode([]rune(s))) }

func jsUnits(units []uint16) string {
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(b[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func fromJSString(t *testing.T, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(units))
}

func jsStrings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = jsString(s)
	}
	return out
}

func jsNumber(f float64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(f))
	return hex.EncodeToString(b[:])
}
