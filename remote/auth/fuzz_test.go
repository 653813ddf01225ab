package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for every decoder of bytes from outside: handshake messages, the auth
// headers a server and a client read, session nonces, key files, and the WHATWG decoder
// that turns nonce bytes into key ids. (FuzzCanonicalJSON is in jsonbody_test.go.)

func FuzzParseHandshake(f *testing.F) {
	f.Add([]byte(`{"version":"0.1","messageType":"initialRequest","identityKey":"0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798","initialNonce":"` + strings.Repeat("A", 64) + `","requestedCertificates":{"certifiers":[],"types":{}}}`))
	f.Add([]byte(`{"version":"0.1","messageType":"initialResponse","identityKey":"02","initialNonce":"AAAA","yourNonce":"x","signature":[48,69,2,256]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, mt := range []string{"initialRequest", "initialResponse"} {
			m, err := parseHandshake(body, mt)
			if err != nil {
				if !errors.Is(err, ErrBadMessage) {
					t.Fatalf("refusal %v is not ErrBadMessage", err)
				}
				continue
			}
			if m.Version != Version || m.MessageType != mt {
				t.Fatalf("accepted %+v", m)
			}
			if _, err := ParsePublicKey(m.IdentityKey); err != nil {
				t.Fatalf("accepted identity %q: %v", m.IdentityKey, err)
			}
			if _, _, err := handshakeData(m.InitialNonce, m.InitialNonce); err != nil {
				t.Fatalf("accepted nonce %q: %v", m.InitialNonce, err)
			}
		}
	})
}

// fuzzServer is a Server with one live session, and whether its handler was reached.
type fuzzServer struct {
	h           http.Handler
	serverNonce string
	clientKey   string
	reached     bool
}

func newFuzzServer(tb testing.TB) *fuzzServer {
	rng := rand.New(rand.NewPCG(71, 72))
	srv, err := NewServer(context.Background(), NewProtoWallet(randKey(rng)), ServerOptions{MaxBodyBytes: 1 << 12})
	if err != nil {
		tb.Fatal(err)
	}
	fs := &fuzzServer{}
	fs.h = srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fs.reached = true }))
	client := NewProtoWallet(randKey(rng))
	fs.clientKey = string(CounterpartyKey(client.Deriver().IdentityKey()))
	nonce, _ := CreateNonce(context.Background(), client)
	body, _ := json.Marshal(handshakeMessage{Version: Version, MessageType: "initialRequest", IdentityKey: fs.clientKey, InitialNonce: nonce})
	rec := httptest.NewRecorder()
	fs.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, wellKnownAuth, bytes.NewReader(body)))
	var resp handshakeMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != 200 {
		tb.Fatalf("handshake: %d %s", rec.Code, rec.Body)
	}
	fs.serverNonce = resp.InitialNonce
	return fs
}

// FuzzServerRequest: whatever auth headers and body arrive on a live session, nobody
// without the client's key reaches the handler, and the refusal is unsigned.
func FuzzServerRequest(f *testing.F) {
	fs := newFuzzServer(f)
	f.Add(true, true, "0.1", "AAAA", "3045022100", strings.Repeat("A", 44), "application/json", []byte(`{}`))
	f.Add(false, true, "0.1", "", "zz", "!!", "text/plain", []byte(nil))
	f.Add(true, false, "1.0", "n", "", "AAAA", "", []byte(`[1]`))
	f.Fuzz(func(t *testing.T, realSession, realIdentity bool, version, nonce, sig, requestID, contentType string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		set := func(k, v string) {
			if v != "" && !strings.ContainsAny(v, "\r\n\x00") {
				req.Header.Set(k, v)
			}
		}
		set(hVersion, version)
		set(hNonce, nonce)
		set(hSignature, sig)
		set(hRequestID, requestID)
		set("Content-Type", contentType)
		if realSession {
			set(hYourNonce, fs.serverNonce)
		} else {
			set(hYourNonce, nonce)
		}
		if realIdentity {
			set(hIdentityKey, fs.clientKey)
		} else {
			set(hIdentityKey, sig)
		}
		fs.reached = false
		rec := httptest.NewRecorder()
		fs.h.ServeHTTP(rec, req)
		if fs.reached {
			t.Fatal("a request nobody signed reached the handler")
		}
		if rec.Code < 400 || hasAuthHeaders(rec.Header()) {
			t.Fatalf("answered %d with headers %v", rec.Code, rec.Header())
		}
	})
}

// FuzzClientVerify: whatever a response carries, the client accepts none it cannot verify.
func FuzzClientVerify(f *testing.F) {
	rng := rand.New(rand.NewPCG(73, 74))
	server := NewProtoWallet(randKey(rng))
	c, err := NewClient("http://127.0.0.1:1", NewProtoWallet(randKey(rng)), ClientOptions{})
	if err != nil {
		f.Fatal(err)
	}
	clientNonce, _ := CreateNonce(context.Background(), c.signer)
	serverNonce, _ := CreateNonce(context.Background(), server)
	sess := &clientSession{clientNonce: clientNonce, serverNonce: serverNonce, serverKey: string(CounterpartyKey(server.Deriver().IdentityKey()))}
	rid := randBytes(rng, 32)
	ridB64 := base64.StdEncoding.EncodeToString(rid)
	f.Add(200, true, true, true, "0.1", "AAAA", "304402", "x-bsv-a", "b", []byte(`{}`))
	f.Add(401, false, false, false, "", "", "", "", "", []byte(`{"code":"ERR_AUTH_FAILED"}`))
	f.Fuzz(func(t *testing.T, status int, ourNonce, ourRequest, serverIdentity bool, version, nonce, sig, extraKey, extraValue string, body []byte) {
		h := http.Header{}
		set := func(k, v string) {
			if k != "" && v != "" && !strings.ContainsAny(k+v, "\r\n\x00") {
				h.Set(k, v)
			}
		}
		set(hVersion, version)
		set(hNonce, nonce)
		set(hSignature, sig)
		set(extraKey, extraValue)
		if ourNonce {
			set(hYourNonce, clientNonce)
		}
		if ourRequest {
			set(hRequestID, ridB64)
		}
		if serverIdentity {
			set(hIdentityKey, sess.serverKey)
		} else {
			set(hIdentityKey, nonce)
		}
		resp := &http.Response{StatusCode: status, Header: h}
		if err := c.verify(context.Background(), sess, resp, rid, ridB64, body); err == nil {
			t.Fatalf("accepted an unsigned response: %d %v %q", status, h, body)
		}
	})
}

func FuzzVerifyNonce(f *testing.F) {
	w := NewProtoWallet(randKey(rand.New(rand.NewPCG(75, 76))))
	good, _ := CreateNonce(context.Background(), w)
	f.Add(good)
	f.Add(strings.Repeat("A", 64))
	f.Add("")
	f.Fuzz(func(t *testing.T, nonce string) {
		err := VerifyNonce(context.Background(), w, nonce)
		if err == nil && nonce != good {
			// Only nonces this wallet made verify; the fuzzer cannot forge an HMAC.
			b, _ := base64.StdEncoding.DecodeString(nonce)
			if again, _ := nonceFrom(context.Background(), w, b[:16]); again != nonce {
				t.Fatalf("verified %q", nonce)
			}
		}
		if err != nil && !errors.Is(err, ErrBadNonce) {
			t.Fatalf("refusal %v is not ErrBadNonce", err)
		}
	})
}

func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte(strings.Repeat("1", 64) + "\n"))
	f.Add([]byte("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParseKeyFile(data)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("refusal %v is not ErrKeyFile", err)
			}
			return
		}
		b := key.Key.Bytes()
		if string(data) != hex.EncodeToString(b[:])+"\n" {
			t.Fatalf("accepted %q, which is not the canonical form of its key", data)
		}
	})
}

// FuzzDecodeUTF8: the output is valid UTF-8; valid input comes back unchanged (less a
// leading BOM); each ill-formed byte yields at most one U+FFFD.
func FuzzDecodeUTF8(f *testing.F) {
	f.Add([]byte{0xE2, 0x82, 0x41})
	f.Add([]byte{0xEF, 0xBB, 0xBF, 'a'})
	f.Add([]byte{0xF0, 0x9F, 0x98})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := DecodeUTF8(b)
		if !utf8.ValidString(s) {
			t.Fatalf("DecodeUTF8(% x) = %+q is not valid UTF-8", b, s)
		}
		if utf8.Valid(b) && s != strings.TrimPrefix(string(b), "\uFEFF") {
			t.Fatalf("DecodeUTF8 changed valid input % x to %+q", b, s)
		}
		if n := strings.Count(s, "\uFFFD") - strings.Count(string(b), "\uFFFD"); n > len(b) {
			t.Fatalf("%d replacement characters for %d bytes", n, len(b))
		}
	})
}
