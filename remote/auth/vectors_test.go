package auth

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"walletsync/testkit/jsoracle"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// vcase is one question to interop/auth-vectors.mjs (see its header), vresult its answer.
type vcase map[string]any

type vresult struct {
	Error   string   `json:"error"`
	Invoice string   `json:"invoice"`
	Priv    string   `json:"priv"`
	Pub     string   `json:"pub"`
	Sym     string   `json:"sym"`
	HMAC    string   `json:"hmac"`
	Sig     string   `json:"sig"`
	Valid   bool     `json:"valid"`
	KeyID   string   `json:"keyID"`
	Nonce   string   `json:"nonce"`
	Nonces  []string `json:"nonces"`
	Payload string   `json:"payload"`
}

// askSDK runs the cases through @bsv/sdk 2.1.0.
func askSDK(t *testing.T, cases []vcase) []vresult {
	t.Helper()
	var out struct{ Results []vresult }
	runNode(t, "auth-vectors.mjs", map[string]any{"cases": cases}, &out)
	if len(out.Results) != len(cases) {
		t.Fatalf("got %d results for %d cases", len(out.Results), len(cases))
	}
	return out.Results
}

func randKey(rng *rand.Rand) *secp256k1.PrivateKey {
	var b [32]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return secp256k1.PrivKeyFromBytes(b[:])
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func privHex(k *secp256k1.PrivateKey) string { b := k.Key.Bytes(); return hex.EncodeToString(b[:]) }

func randCounterparty(rng *rand.Rand) Counterparty {
	switch rng.IntN(3) {
	case 0:
		return Self
	case 1:
		return Anyone
	}
	return CounterpartyKey(randKey(rng).PubKey())
}

// randProtocol mostly returns valid protocol ids, sometimes ones KeyDeriver refuses or
// normalises (case, blanks, the Kelvin sign, " protocol", lengths at the limits).
func randProtocol(rng *rand.Rand) Protocol {
	valid := []string{"auth message signature", "server hmac", "tests one", "Hello World", "  padded name \t", "abcde"}
	level := rng.IntN(3)
	if rng.IntN(10) == 0 {
		level = []int{-1, 3}[rng.IntN(2)]
	}
	switch rng.IntN(6) {
	case 0, 1, 2:
		return Protocol{level, valid[rng.IntN(len(valid))]}
	case 3:
		const alphabet = "abcXYZ019  -_\u212a\u0130\u00e9\u3000\ufeff"
		rs := []rune(alphabet)
		var b strings.Builder
		for range 3 + rng.IntN(10) {
			b.WriteRune(rs[rng.IntN(len(rs))])
		}
		return Protocol{level, b.String()}
	case 4:
		return Protocol{level, strings.Repeat("a", 398+rng.IntN(5))}
	}
	return Protocol{level, []string{"my protocol", "x protocols", "specific linkage revelation " + strings.Repeat("b", 390+rng.IntN(20)), "a  b c"}[rng.IntN(4)]}
}

func randKeyID(rng *rand.Rand) string {
	switch rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("k", 799+rng.IntN(3))
	case 2:
		return strings.Repeat("\U0001F600", 399+rng.IntN(3)) // 2 UTF-16 units each
	}
	s := jsoracle.RandomText(rng, 20)
	if s == "" {
		s = "1"
	}
	return s
}

func protoCase(op string, root *secp256k1.PrivateKey, cp Counterparty, p Protocol, keyID string) vcase {
	return vcase{"op": op, "root": privHex(root), "cp": string(cp), "level": p.Level, "name": jsoracle.String(p.Name), "keyID": jsoracle.String(keyID)}
}

func TestInvoiceNumber_MatchesSDK(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ps []Protocol
	var ids []string
	var cases []vcase
	for range 200 {
		p, id := randProtocol(rng), randKeyID(rng)
		ps, ids = append(ps, p), append(ids, id)
		cases = append(cases, vcase{"op": "invoice", "level": p.Level, "name": jsoracle.String(p.Name), "keyID": jsoracle.String(id)})
	}
	valid := 0
	for i, r := range askSDK(t, cases) {
		got, err := InvoiceNumber(ps[i], ids[i])
		if (err != nil) != (r.Error != "") {
			t.Fatalf("InvoiceNumber(%+v, %q): Go error %v, SDK error %q", ps[i], ids[i], err, r.Error)
		}
		if err != nil {
			continue
		}
		valid++
		if want := jsoracle.FromString(t, r.Invoice); got != want {
			t.Fatalf("InvoiceNumber(%+v, %q) = %q, SDK %q", ps[i], ids[i], got, want)
		}
	}
	if valid < 50 || valid > 180 {
		t.Fatalf("%d of 200 cases valid: the generator no longer covers both outcomes", valid)
	}
}

// shortKeyCase finds a root, counterparty and key id whose HMAC key has a leading zero
// byte in S.x (about 1 in 256), the case where keeping the zero would give another MAC.
func shortKeyCase(t *testing.T, rng *rand.Rand) (*secp256k1.PrivateKey, Counterparty, string) {
	for range 100000 {
		root, cp := randKey(rng), randCounterparty(rng)
		keyID := fmt.Sprint(rng.Uint64())
		k, err := NewKeyDeriver(root).DeriveSymmetricKey(ProtocolNonce, keyID, cp)
		if err != nil {
			t.Fatal(err)
		}
		if len(k) < 32 {
			return root, cp, keyID
		}
	}
	t.Fatal("no symmetric key with a leading zero byte found")
	return nil, "", ""
}

func TestProtoWallet_MatchesSDK(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	type input struct {
		root *secp256k1.PrivateKey
		cp   Counterparty
		p    Protocol
		id   string
		data []byte
	}
	var ins []input
	var cases []vcase
	add := func(in input) {
		ins = append(ins, in)
		for _, op := range []string{"derive", "hmac", "sign"} {
			c := protoCase(op, in.root, in.cp, in.p, in.id)
			c["data"] = hex.EncodeToString(in.data)
			cases = append(cases, c)
		}
	}
	for range 40 {
		add(input{randKey(rng), randCounterparty(rng), randProtocol(rng), randKeyID(rng), randBytes(rng, rng.IntN(100))})
	}
	shortKeys := 0
	for range 3 {
		root, cp, id := shortKeyCase(t, rng)
		add(input{root, cp, ProtocolNonce, id, randBytes(rng, 16)})
		shortKeys++
	}
	res := askSDK(t, cases)
	for i, in := range ins {
		w := NewProtoWallet(in.root)
		derive, hm, sg := res[3*i], res[3*i+1], res[3*i+2]
		name := fmt.Sprintf("case %d (%+v %q cp=%.10s)", i, in.p, in.id, in.cp)
		priv, err := w.Deriver().DerivePrivateKey(in.p, in.id, in.cp)
		if (err != nil) != (derive.Error != "") || (err != nil) != (hm.Error != "") || (err != nil) != (sg.Error != "") {
			t.Fatalf("%s: Go error %v, SDK errors %q %q %q", name, err, derive.Error, hm.Error, sg.Error)
		}
		if err != nil {
			continue
		}
		pub, _ := w.Deriver().DerivePublicKey(in.p, in.id, in.cp)
		sym, _ := w.Deriver().DeriveSymmetricKey(in.p, in.id, in.cp)
		mac, _ := w.CreateHMAC(ctx, in.data, in.p, in.id, in.cp)
		sig, _ := w.CreateSignature(ctx, in.data, in.p, in.id, in.cp)
		for _, cmp := range []struct{ what, got, want string }{
			{"private key", privHex(priv), derive.Priv},
			{"public key", hex.EncodeToString(pub.SerializeCompressed()), derive.Pub},
			{"symmetric key", hex.EncodeToString(sym), derive.Sym},
			{"hmac", hex.EncodeToString(mac), hm.HMAC},
			{"signature", hex.EncodeToString(sig), sg.Sig},
		} {
			if cmp.got != cmp.want {
				t.Fatalf("%s: %s %s, SDK %s", name, cmp.what, cmp.got, cmp.want)
			}
		}
		if err := w.VerifyHMAC(ctx, in.data, mac, in.p, in.id, in.cp); err != nil {
			t.Fatalf("%s: VerifyHMAC of its own MAC: %v", name, err)
		}
	}
	if shortKeys == 0 {
		t.Fatal("no short-key case")
	}
}

// TestVerifySignature_BothWays: a signature one side makes for a counterparty, the other
// side verifies as that counterparty; a flipped bit fails on both sides.
func TestVerifySignature_BothWays(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []vcase
	type pair struct {
		a, b   *secp256k1.PrivateKey
		id     string
		data   []byte
		sig    []byte
		tamper bool
	}
	var ps []pair
	for i := range 40 {
		a, b := randKey(rng), randKey(rng)
		id, data := fmt.Sprint("k", i), randBytes(rng, 1+rng.IntN(64))
		sig, err := NewProtoWallet(a).CreateSignature(ctx, data, ProtocolSignature, id, CounterpartyKey(b.PubKey()))
		if err != nil {
			t.Fatal(err)
		}
		tamper := i%4 == 0
		if tamper {
			data = append([]byte{data[0] ^ 1}, data[1:]...)
		}
		ps = append(ps, pair{a, b, id, data, sig, tamper})
		c := protoCase("verify", b, CounterpartyKey(a.PubKey()), ProtocolSignature, id)
		c["data"], c["sig"] = hex.EncodeToString(data), hex.EncodeToString(sig)
		cases = append(cases, c)
	}
	for i, r := range askSDK(t, cases) {
		p := ps[i]
		if r.Valid == p.tamper {
			t.Fatalf("case %d: SDK says valid=%v, tampered=%v", i, r.Valid, p.tamper)
		}
		err := NewProtoWallet(p.b).VerifySignature(ctx, p.data, p.sig, ProtocolSignature, p.id, CounterpartyKey(p.a.PubKey()))
		if (err == nil) == p.tamper {
			t.Fatalf("case %d: Go VerifySignature %v, tampered=%v", i, err, p.tamper)
		}
	}
}

// nonceBytes returns 16 bytes that are often ill-formed UTF-8 in the ways WHATWG and Go
// decoders disagree on, sometimes with a byte order mark in front.
func nonceBytes(rng *rand.Rand) []byte {
	r := randBytes(rng, 16)
	frags := [][]byte{{0xE2, 0x82, 0x41}, {0xF0, 0x9F, 0x98}, {0xED, 0xA0, 0x80}, {0xC0, 0xAF}, {0xE0, 0x80}, {0xF4, 0x90, 0x80, 0x80}, {0xEF, 0xBB, 0xBF}, {0xC3, 0xA9}, {0xF0, 0x9F, 0x98, 0x80}}
	for at := 0; at < 16; at += 1 + rng.IntN(4) {
		copy(r[at:], frags[rng.IntN(len(frags))])
	}
	if rng.IntN(5) == 0 {
		copy(r, []byte{0xEF, 0xBB, 0xBF})
	}
	if rng.IntN(4) == 0 {
		copy(r[16-3:], []byte{0xF0, 0x9F, 0x98}) // truncated at the end
	}
	return r[:16]
}

func TestNonce_MatchesSDK(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	root := randKey(rng)
	w := NewProtoWallet(root)
	var rs [][]byte
	var cases []vcase
	for range 48 {
		r := nonceBytes(rng)
		rs = append(rs, r)
		cases = append(cases, vcase{"op": "nonce", "root": privHex(root), "r": hex.EncodeToString(r)})
	}
	cases = append(cases, vcase{"op": "nonces", "root": privHex(root), "n": 20})
	res := askSDK(t, cases)
	for i, r := range rs {
		if !res[i].Valid {
			t.Fatalf("case %d: the SDK does not verify its own nonce", i)
		}
		if got, want := DecodeUTF8(r), jsoracle.FromString(t, res[i].KeyID); got != want {
			t.Fatalf("DecodeUTF8(% x) = %+q, TextDecoder %+q", r, got, want)
		}
		got, err := nonceFrom(ctx, w, r)
		if err != nil || got != res[i].Nonce {
			t.Fatalf("nonce of % x = %q (%v), SDK %q", r, got, err, res[i].Nonce)
		}
		if err := VerifyNonce(ctx, w, got); err != nil {
			t.Fatalf("VerifyNonce(%q): %v", got, err)
		}
	}
	for _, n := range res[len(rs)].Nonces {
		if err := VerifyNonce(ctx, w, n); err != nil {
			t.Fatalf("VerifyNonce of the SDK's createNonce %q: %v", n, err)
		}
		if err := VerifyNonce(ctx, NewProtoWallet(randKey(rng)), n); err == nil {
			t.Fatalf("another key verified nonce %q", n)
		}
	}
	own, err := CreateNonce(ctx, w)
	if err != nil || len(own) != 64 || strings.Contains(own, "=") {
		t.Fatalf("CreateNonce = %q, %v: want 64 base64 characters without padding", own, err)
	}
}

func TestPayloads_MatchSDK(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type req struct {
		rid               []byte
		method, url, body string
		hasBody           bool
		h                 http.Header
	}
	type resp struct {
		rid    []byte
		status int
		h      http.Header
		body   []byte
	}
	var reqs []req
	var resps []resp
	var cases []vcase
	paths := []string{"/", "/a/b", "/x%20y", "/.well-known/auth", ""}
	queries := []string{"", "?a=1", "?q=hello&z=%C3%A9"}
	for range 60 {
		r := req{rid: randBytes(rng, 32), method: []string{"POST", "GET", "PUT"}[rng.IntN(3)], h: http.Header{}}
		r.url = "http://127.0.0.1:3000" + paths[rng.IntN(len(paths))] + queries[rng.IntN(len(queries))]
		hs := map[string]string{}
		if rng.IntN(4) > 0 {
			hs["content-type"] = []string{"application/json", "application/json; charset=utf-8", "text/plain ;x=1"}[rng.IntN(3)]
		}
		if rng.IntN(3) == 0 {
			hs["x-bsv-topic"] = jsoracle.RandomText(rng, 8)
		}
		if rng.IntN(3) == 0 {
			hs["authorization"] = "Bearer " + fmt.Sprint(rng.Uint32())
		}
		if rng.IntN(4) == 0 {
			hs["x-bsv-a-b"] = "v"
		}
		c := vcase{"op": "request", "requestId": hex.EncodeToString(r.rid), "method": r.method, "url": r.url, "headers": hs}
		if r.method == "POST" || rng.IntN(2) == 0 {
			r.body, r.hasBody = `{"jsonrpc":"2.0","method":"m","params":["`+jsoracle.RandomText(rng, 30)+`"],"id":1}`, true
			if rng.IntN(6) == 0 {
				r.body = ""
			}
			c["body"] = jsoracle.String(r.body)
		}
		for k, v := range hs {
			r.h.Set(k, v)
		}
		r.h.Set("User-Agent", "ignored")
		r.h.Set("X-Bsv-Auth-Nonce", "ignored")
		reqs = append(reqs, r)
		cases = append(cases, c)
	}
	for range 40 {
		s := resp{rid: randBytes(rng, 32), status: []int{200, 400, 401, 500, 599}[rng.IntN(5)], h: http.Header{}, body: randBytes(rng, rng.IntN(300))}
		hs := map[string]string{}
		if rng.IntN(2) == 0 {
			hs["x-bsv-extra"] = fmt.Sprint(rng.Uint32())
			hs["authorization"] = "a"
		}
		for k, v := range hs {
			s.h.Set(k, v)
		}
		s.h.Set("Content-Type", "application/octet-stream")
		resps = append(resps, s)
		cases = append(cases, vcase{"op": "response", "requestId": hex.EncodeToString(s.rid), "status": s.status, "headers": hs, "body": hex.EncodeToString(s.body)})
	}
	res := askSDK(t, cases)
	for i, r := range reqs {
		path, query, _ := strings.Cut(strings.TrimPrefix(r.url, "http://127.0.0.1:3000"), "?")
		if path == "" {
			path = "/" // as URL.pathname gives it
		}
		body := []byte(r.body)
		if !r.hasBody && (r.method == "POST" || r.method == "PUT") {
			if strings.Contains(r.h.Get("Content-Type"), "application/json") {
				body = []byte("{}") // AuthFetch's default for a body-carrying method
			}
		}
		got := hex.EncodeToString(requestPayload(r.rid, r.method, path, query, signedHeaders(r.h, true), body))
		if got != res[i].Payload {
			t.Fatalf("request %d (%s %s %v body %q):\n got %s\nwant %s", i, r.method, r.url, r.h, r.body, got, res[i].Payload)
		}
	}
	for i, s := range resps {
		want := res[len(reqs)+i].Payload
		got := hex.EncodeToString(responsePayload(s.rid, s.status, signedHeaders(s.h, false), s.body, true))
		if got != want {
			t.Fatalf("response %d (%d %v, %d bytes):\n got %s\nwant %s", i, s.status, s.h, len(s.body), got, want)
		}
	}
}
