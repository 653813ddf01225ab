package wallet

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// replacements counts what an honest U+FFFD in JSON text looks like: the character itself
// and its \ufffd escape (a backslash escaping a backslash is skipped, so "\\ufffd" is none).
func replacements(b []byte) int {
	n := bytes.Count(b, []byte("\uFFFD"))
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && strings.EqualFold(string(b[i+2:i+6]), "fffd") {
			n++
		}
		i++
	}
	return n
}

// decodedReplacements counts U+FFFD in every string (keys included) encoding/json reads
// from b.
func decodedReplacements(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if s, ok := tok.(string); ok {
			n += strings.Count(s, "\uFFFD")
		}
	}
}

func TestCheckJSONText_RefusesWhatADecoderWouldAlter(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		ok   bool
	}{
		{"plain", `{"a":"b"}`, true},
		{"a pair", `["\ud83d\ude00"]`, true},
		{"an honest replacement character", `["\ufffd", "` + "\uFFFD" + `"]`, true},
		{"an escaped backslash before u", `["\\ud800"]`, true},
		{"a four-byte character", `["` + "\U0001F600" + `"]`, true},
		{"invalid UTF-8", "[\"\xff\"]", false},
		{"a truncated sequence", "[\"\xe2\x82\"]", false},
		{"an encoded surrogate", "[\"\xed\xa0\x80\"]", false},
		{"a lone high surrogate", `["\ud800"]`, false},
		{"a lone high surrogate at the end", `["x\uD800`, false},
		{"a high surrogate before a letter", `["\ud800\u0041"]`, false},
		{"two high surrogates", `["\ud800\ud800"]`, false},
		{"a lone low surrogate", `["\udc00"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckJSONText([]byte(tc.text))
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
				t.Fatalf("CheckJSONText(%q) = %v, want ok %v", tc.text, err, tc.ok)
			}
		})
	}
}

// CheckJSONText accepts JSON text exactly when encoding/json reads its strings without
// putting a U+FFFD where the text held none.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `["\ud800"]`, `["\ud83d\ude00"]`, "[\"\xff\"]", `["\\ud800"]`, `["\ufffd"]`, `{"\udc00":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		altered := decodedReplacements(t, b) != replacements(b)
		if err := CheckJSONText(b); (err == nil) == altered {
			t.Fatalf("CheckJSONText(%q) = %v, but the decoder altered it: %v", b, err, altered)
		}
	})
}

func TestTable_CheckValues(t *testing.T) {
	now := time.Now().UTC()
	output := func(edit func(Row)) Row {
		r := make(Row, len(Outputs.Columns))
		for i, c := range Outputs.Columns {
			switch c.Kind {
			case KindInt:
				r[i] = int64(1)
			case KindText:
				r[i] = "t"
			case KindBool:
				r[i] = false
			case KindTime:
				r[i] = now
			}
		}
		r[Outputs.Col("vout")] = int64(0)
		r[Outputs.Col("txid")] = strings.Repeat("ab", 32)
		edit(r)
		return r
	}
	setCol := func(col string, v any) func(Row) { return func(r Row) { r[Outputs.Col(col)] = v } }
	for _, tc := range []struct {
		name   string
		row    Row
		column string // "" when the row is fine
	}{
		{"a toolbox output", output(func(Row) {}), ""},
		{"an empty txid (the toolbox's default)", output(setCol("txid", "")), ""},
		{"an upper-case txid", output(setCol("txid", strings.Repeat("AB", 32))), ""},
		{"no basket", output(setCol("basketId", nil)), ""},
		{"zero satoshis", output(setCol("satoshis", int64(0))), ""},
		{"negative satoshis", output(setCol("satoshis", int64(-1))), "satoshis"},
		{"a negative vout", output(setCol("vout", int64(-1))), "vout"},
		{"outputId -1", output(setCol("outputId", int64(-1))), "outputId"},
		{"transactionId 0", output(setCol("transactionId", int64(0))), "transactionId"},
		{"spentBy -5", output(setCol("spentBy", int64(-5))), "spentBy"},
		{"a 3-character txid", output(setCol("txid", "abc")), "txid"},
		{"a txid that is not hex", output(setCol("txid", strings.Repeat("g", 64))), "txid"},
		{"text that is not UTF-8", output(setCol("purpose", "a\xffb")), "purpose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Outputs.CheckValues(tc.row)
			var bad *UnstorableError
			switch {
			case tc.column == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.column != "" && (!errors.As(err, &bad) || bad.Column != tc.column || bad.Table != TableOutputs):
				t.Fatalf("got %v, want an UnstorableError for outputs.%s", err, tc.column)
			}
		})
	}
	// A transaction's satoshis are its net effect on the wallet: negative when it spends.
	tx := make(Row, len(Transactions.Columns))
	for i, c := range Transactions.Columns {
		switch c.Kind {
		case KindInt:
			tx[i] = int64(1)
		case KindText:
			tx[i] = "t"
		case KindBool:
			tx[i] = true
		case KindTime:
			tx[i] = now
		}
	}
	tx[Transactions.Col("txid")], tx[Transactions.Col("satoshis")] = nil, int64(-1200)
	if err := Transactions.CheckValues(tx); err != nil {
		t.Fatalf("an outgoing transaction: %v", err)
	}
}
