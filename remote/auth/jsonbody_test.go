package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"walletsync/testkit/jsoracle"
)

func TestCanonicalJSON_Cases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{ "a" : 1 , "b" : [ true , null ] }`, `{"a":1,"b":[true,null]}`},
		{`{"s":"<&>"}`, `{"s":"<&>"}`},
		{`{"s":"\u003c\u2028\u2029\/"}`, "{\"s\":\"<\u2028\u2029/\"}"},
		{`{"s":"\u0000\u001f\u007f\b\f\n\r\t\"\\"}`, "{\"s\":\"\\u0000\\u001f\u007f\\b\\f\\n\\r\\t\\\"\\\\\"}"},
		{`{"s":"\ud83d\ude00"}`, "{\"s\":\"\U0001F600\"}"},
		{`[1.0, 1e2, -0, 0.1e-6, 1E21, 123.4560, -1.5e-7, 1e-400]`, `[1,100,0,1e-7,1e+21,123.456,-1.5e-7,0]`},
		{`[9007199254740992, -9007199254740992, 1e300]`, `[9007199254740992,-9007199254740992,1e+300]`},
		{`{"b":1,"1":2,"a":3,"0":4,"01":5,"4294967294":6,"4294967295":7}`, `{"0":4,"1":2,"4294967294":6,"b":1,"a":3,"01":5,"4294967295":7}`},
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{` [] `, `[]`},
		{`{"__proto__":{"x":1}}`, `{"__proto__":{"x":1}}`},
	} {
		got, err := CanonicalJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalJSON_Refuses(t *testing.T) {
	for _, in := range []string{
		``, `1`, `"s"`, `null`, `{`, `{"a":1,}`, `[1 2]`, `{'a':1}`, `[01]`, `[1.]`, `[.5]`, `[+1]`, `[1e]`,
		`["\ud800"]`, `["\udc00\ud800"]`, `["\x"]`, "[\"\x01\"]", "[\"\xff\"]", `[NaN]`, `[1e400]`,
		`[9007199254740993]`, `[-9007199254740993]`, `{} x`, strings.Repeat("[", 600) + strings.Repeat("]", 600),
	} {
		if out, err := CanonicalJSON([]byte(in)); !errors.Is(err, ErrBadBody) {
			t.Errorf("CanonicalJSON(%.40q) = %s, %v; want ErrBadBody", in, out, err)
		}
	}
}

// randJSON writes a random JSON text in non-canonical spellings: spaces, escapes, number
// forms, integer-like and repeated keys.
func randJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		for range rng.IntN(3) {
			b.WriteByte(" \t\n\r"[rng.IntN(4)])
		}
	}
	ws()
	k := rng.IntN(9)
	if depth == 0 {
		k = 7 + rng.IntN(2)
	} else if depth > 4 {
		k = rng.IntN(7)
	}
	switch k {
	case 0:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 1, 2:
		b.WriteString([]string{"0", "-0", "1.0", "1e2", "1E+2", "0.000001", "1e-7", "123456789012345678901", "-3.25", "5e-324", "1.7976931348623157e308", "9007199254740992", "100", "0.1", "2.50e3"}[rng.IntN(15)])
	case 3:
		fmt.Fprintf(b, "%d.%d", rng.IntN(1000), rng.IntN(1000))
	case 4, 5, 6:
		randJSONString(rng, b)
	case 7:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			if rng.IntN(3) == 0 {
				fmt.Fprintf(b, `"%s"`, []string{"0", "1", "10", "01", "-1", "4294967294", "4294967295", "a", "b", "1.5"}[rng.IntN(10)])
			} else {
				randJSONString(rng, b)
			}
			ws()
			b.WriteByte(':')
			randJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte('}')
	}
	ws()
}

func randJSONString(rng *rand.Rand, b *strings.Builder) {
	b.WriteByte('"')
	for _, r := range jsoracle.RandomText(rng, 8) {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || rng.IntN(6) == 0:
			if r > 0xFFFF {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04X\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	if rng.IntN(10) == 0 {
		b.WriteString(`\/\b\u2028`)
	}
	b.WriteByte('"')
}

// TestCanonicalJSON_MatchesJSONStringify compares with Node's
// JSON.stringify(JSON.parse(body)) on random bodies in non-canonical spellings, and checks
// that each output is a fixed point.
func TestCanonicalJSON_MatchesJSONStringify(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var bodies []string
	var cases []vcase
	for range 400 {
		var b strings.Builder
		randJSON(rng, &b, 0)
		bodies = append(bodies, b.String())
		cases = append(cases, vcase{"op": "json", "body": hex.EncodeToString([]byte(b.String()))})
	}
	refused := 0
	for i, r := range askSDK(t, cases) {
		got, err := CanonicalJSON([]byte(bodies[i]))
		if err != nil {
			// Only an integer JavaScript would round may be refused in these bodies.
			if r.Error != "" || !strings.Contains(err.Error(), "2^53") {
				t.Fatalf("CanonicalJSON(%s): %v; JavaScript gives %s %s", bodies[i], err, r.Payload, r.Error)
			}
			refused++
			continue
		}
		if hex.EncodeToString(got) != r.Payload {
			want, _ := hex.DecodeString(r.Payload)
			t.Fatalf("CanonicalJSON(%s)\n = %s\nJavaScript %s", bodies[i], got, want)
		}
		again, err := CanonicalJSON(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", got, again, err)
		}
	}
	if refused > 40 {
		t.Fatalf("%d of 400 bodies refused: the generator tests too little", refused)
	}
}

// FuzzCanonicalJSON: whatever the input, an accepted body's output is a fixed point and
// valid JSON, and a refusal is a *BodyError.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.50,"x\u2028"],"1":null}`, `[1e2,-0,{"b":1,"b":2}]`, `["\ud83d\ude00<>"]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalJSON(in)
		if err != nil {
			var be *BodyError
			if !errors.As(err, &be) {
				t.Fatalf("refusal %v is not a *BodyError", err)
			}
			return
		}
		again, err := CanonicalJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", in, out, again, err)
		}
	})
}
