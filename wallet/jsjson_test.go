package wallet

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"walletsync/testkit/jsoracle"
)

func TestAppendJSString_MatchesNode(t *testing.T) {
	var cases []string
	for c := range 0x80 {
		cases = append(cases, string(rune(c)), "a"+string(rune(c))+"b")
	}
	cases = append(cases, "", "\u2028", "\u2029", "a\u2028b\u2029c", "<script>&amp;</script>", `"quoted" \back\slash\\ \"`,
		"\u007f\u0080\u009f\u00a0", "Caf\u00e9", "Cafe\u0301", "\U0001F600", "\U0001D538", "\U0010FFFF", "\uFFFD", "\uFEFF",
		"\uE000", "\uFFFF", "\u200b\u200d", "日本語", "ṩ", "\x00\x1f\x20", strings.Repeat("\\\"\n", 100))
	rng := rand.New(rand.NewPCG(20, 21))
	for range 300 {
		cases = append(cases, jsoracle.RandomText(rng, 40))
	}
	resp := jsoracle.Ask(t, jsoracle.Request{Strings: jsoracle.Strings(cases)})
	for i, s := range cases {
		want, err := base64.StdEncoding.DecodeString(resp.Strings[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendJSString(nil, s)
		if err != nil {
			t.Fatalf("AppendJSString(%+q): %v", s, err)
		}
		if string(got) != string(want) {
			t.Errorf("AppendJSString(%+q) = %s, JSON.stringify = %s", s, got, want)
		}
	}
}

func TestAppendJSString_RefusesWhatUTF8CannotHold(t *testing.T) {
	for _, tc := range []struct {
		in        string
		offset    int
		surrogate bool
	}{
		{"\xed\xa0\x80", 0, true},             // U+D800 in generalised UTF-8 (WTF-8)
		{"ab\xed\xbf\xbfc", 2, true},          // U+DFFF
		{"\xed\xa0\xbd\xed\xb8\x80", 0, true}, // a surrogate pair spelled as two surrogates (CESU-8)
		{"\xff", 0, false},
		{"ok\xc3", 2, false},           // truncated sequence
		{"\xc0\xaf", 0, false},         // overlong '/'
		{"\xf4\x90\x80\x80", 0, false}, // above U+10FFFF
	} {
		dst := []byte("prefix")
		got, err := AppendJSString(dst, tc.in)
		var je *JSValueError
		if !errors.Is(err, ErrNotJSValue) || !errors.As(err, &je) || je.Offset != tc.offset {
			t.Errorf("AppendJSString(%+q) = %v, want a *JSValueError at byte %d", tc.in, err, tc.offset)
			continue
		}
		if strings.Contains(je.Reason, "surrogate") != tc.surrogate {
			t.Errorf("AppendJSString(%+q) reason %q: surrogate = %v", tc.in, je.Reason, tc.surrogate)
		}
		if string(got) != "prefix" {
			t.Errorf("AppendJSString(%+q) changed dst to %q", tc.in, got)
		}
	}
	// JavaScript itself writes a lone surrogate as an escape (well-formed JSON.stringify,
	// ES2019); walletsync never produces one, because it cannot hold one in a string.
	resp := jsoracle.Ask(t, jsoracle.Request{Strings: []string{jsoracle.Units([]uint16{0xD800}), jsoracle.Units([]uint16{'a', 0xDFFF})}})
	for i, want := range []string{`"\ud800"`, `"a\udfff"`} {
		if got, _ := base64.StdEncoding.DecodeString(resp.Strings[i]); string(got) != want {
			t.Errorf("JSON.stringify of a lone surrogate = %s, want %s", got, want)
		}
	}
}

func TestAppendJSNumber_MatchesNode(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 100, 1234.5678, 0.1 + 0.2, 1e21, 1e-7, 1e-6, 1.5e-7, 0.0000012345,
		123456789012345680000, 1e20, 999999999999999900000, 9.999999999999999e20, 123e-20, 1e100, -1e-100,
		5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, math.MaxFloat64, -math.MaxFloat64,
		1 << 53, 1<<53 + 2, -(1 << 53), 1 << 60, 1 << 63, 4.35, 0.000001, 0.0000001, 1.7976931348623157e308}
	for e := -30; e <= 30; e++ {
		p := math.Pow(10, float64(e))
		values = append(values, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), 1.5*p, -7*p)
	}
	rng := rand.New(rand.NewPCG(22, 23))
	for len(values) < 4000 {
		switch f := math.Float64frombits(rng.Uint64()); {
		case math.IsNaN(f) || math.IsInf(f, 0):
		case len(values)%2 == 0:
			values = append(values, f)
		default: // short decimals, as amounts and fractions look
			values = append(values, float64(rng.Int64N(1e12))/math.Pow(10, float64(rng.IntN(15))))
		}
	}
	ints := []int64{0, 1, -1, 42, 2100000000000000, MaxJSInt, -MaxJSInt, MaxJSInt - 1}
	for range 500 {
		ints = append(ints, rng.Int64N(MaxJSInt+1)*(1-2*rng.Int64N(2)))
	}
	req := jsoracle.Request{}
	for _, f := range values {
		req.Numbers = append(req.Numbers, jsoracle.Number(f))
	}
	for _, i := range ints {
		req.Numbers = append(req.Numbers, jsoracle.Number(float64(i)))
	}
	resp := jsoracle.Ask(t, req)
	for i, f := range values {
		got, err := AppendJSNumber(nil, f)
		if err != nil || string(got) != resp.Numbers[i] {
			t.Errorf("AppendJSNumber(%b) = %s, %v; JSON.stringify = %s", f, got, err, resp.Numbers[i])
		}
	}
	for i, n := range ints {
		got, err := AppendJSInt(nil, n)
		if want := resp.Numbers[len(values)+i]; err != nil || string(got) != want {
			t.Errorf("AppendJSInt(%d) = %s, %v; JSON.stringify = %s", n, got, err, want)
		}
	}
}

func TestAppendJSNumber_RefusesNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		got, err := AppendJSNumber([]byte("x"), f)
		if !errors.Is(err, ErrNotJSValue) || string(got) != "x" {
			t.Errorf("AppendJSNumber(%v) = %q, %v; want ErrNotJSValue and dst unchanged", f, got, err)
		}
	}
}

func TestAppendJSInt_RefusesBeyond2To53(t *testing.T) {
	for _, i := range []int64{MaxJSInt + 1, -MaxJSInt - 1, math.MaxInt64, math.MinInt64} {
		got, err := AppendJSInt([]byte("x"), i)
		if !errors.Is(err, ErrNotJSValue) || string(got) != "x" {
			t.Errorf("AppendJSInt(%d) = %q, %v; want ErrNotJSValue and dst unchanged", i, got, err)
		}
	}
}

// FuzzAppendJSString: valid UTF-8 is always accepted and reads back unchanged through a
// standard JSON parser; anything else is refused with a typed error.
func FuzzAppendJSString(f *testing.F) {
	f.Add("plain")
	f.Add("\u2028<&>\"\\\x00\x1f\x7f")
	f.Add("\xed\xa0\x80")
	f.Fuzz(func(t *testing.T, s string) {
		out, err := AppendJSString(nil, s)
		if !utf8.ValidString(s) {
			if !errors.Is(err, ErrNotJSValue) {
				t.Fatalf("AppendJSString(%+q) = %s, %v; want ErrNotJSValue", s, out, err)
			}
			return
		}
		var back string
		if err != nil || json.Unmarshal(out, &back) != nil || back != s {
			t.Fatalf("AppendJSString(%+q) = %s, %v; reads back as %+q", s, out, err, back)
		}
	})
}

// FuzzAppendJSNumber: every finite float64 is written in a form that parses back to exactly
// the same value (both zeros to 0).
func FuzzAppendJSNumber(f *testing.F) {
	for _, v := range []float64{0, 1e21, 1e-7, 5e-324, math.MaxFloat64, 123456789012345680000} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		out, err := AppendJSNumber(nil, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if !errors.Is(err, ErrNotJSValue) {
				t.Fatalf("AppendJSNumber(%v) = %s, %v", v, out, err)
			}
			return
		}
		back, perr := strconv.ParseFloat(string(out), 64)
		if err != nil || perr != nil || back != v {
			t.Fatalf("AppendJSNumber(%b) = %s (%v, %v), reads back as %b", v, out, err, perr, back)
		}
	})
}
