package toolbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"walletsync/brc40"
	"walletsync/remote/auth"
	"walletsync/wallet"
)

func TestAppendRequest_IsJavaScriptFixedPoint(t *testing.T) {
	args, err := json.Marshal(brc40.RequestSyncChunkArgs{
		FromStorageIdentityKey: "02aa", ToStorageIdentityKey: "03bb", IdentityKey: "02cc",
		MaxRoughSize: 1000, MaxItems: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := wallet.AppendJSString(nil, "02cc\u2028<&>")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		params []json.RawMessage
		want   string
	}{
		{"no params", nil, `{"jsonrpc":"2.0","method":"makeAvailable","params":[],"id":7}`},
		{"string param", []json.RawMessage{key}, "{\"jsonrpc\":\"2.0\",\"method\":\"makeAvailable\",\"params\":[\"02cc\u2028<&>\"],\"id\":7}"},
		{"object param", []json.RawMessage{args}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := AppendRequest(nil, "makeAvailable", 7, tc.params...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(body) != tc.want {
				t.Fatalf("body %s, want %s", body, tc.want)
			}
			canon, err := auth.CanonicalJSON(body)
			if err != nil {
				t.Fatal(err)
			}
			if string(canon) != string(body) {
				t.Fatalf("not a fixed point of JSON.stringify(JSON.parse):\n%s\n%s", body, canon)
			}
			req, err := ParseRequest(body)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != "makeAvailable" || string(req.ID) != "7" || len(req.Params) != len(tc.params) {
				t.Fatalf("parsed %+v", req)
			}
		})
	}
}

func TestParseRequest_RefusesWhatTheStorageServerRefuses(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `{}`, `{"jsonrpc":"1.0","method":"x"}`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","method":""}`, `{"jsonrpc":"2.0","method":7}`,
		`{"jsonrpc":"2.0","method":"x","params":{"a":1}}`, `{"jsonrpc":"2.0","method":"x"`,
	} {
		_, err := ParseRequest([]byte(body))
		var re *RPCError
		if !errors.As(err, &re) || re.Code != CodeInvalidRequest || !errors.Is(err, wallet.ErrInvalidArgument) {
			t.Errorf("ParseRequest(%q) = %v, want an invalid request error", body, err)
		}
	}
}

func TestParseResponse_Errors(t *testing.T) {
	for _, tc := range []struct {
		body     string
		sentinel error
		name     string
	}{
		{`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_UNAUTHORIZED","message":"function may only access authenticated user."},"id":1}`, wallet.ErrUnauthorized, "WERR_UNAUTHORIZED"},
		{`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_INVALID_PARAMETER","message":"The args parameter must be valid.","parameter":"args"},"id":1}`, wallet.ErrInvalidArgument, "WERR_INVALID_PARAMETER"},
		{`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_NETWORK_CHAIN","message":"x"},"id":1}`, wallet.ErrWrongChain, "WERR_NETWORK_CHAIN"},
		{`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_INTERNAL","message":"x"},"id":1}`, wallet.ErrRemote, "WERR_INTERNAL"},
		{`{"jsonrpc":"2.0","error":{"isError":true,"message":"x"},"id":1}`, wallet.ErrRemote, "WERR_UNKNOWN"},
		{`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: frob"},"id":1}`, wallet.ErrNotImplemented, ""},
		{`{"error":{"code":-32600,"message":"Invalid Request"}}`, wallet.ErrInvalidArgument, ""},
		{`not json`, wallet.ErrRemote, ""},
	} {
		_, err := ParseResponse([]byte(tc.body))
		if !errors.Is(err, tc.sentinel) || !errors.Is(err, wallet.ErrRemote) {
			t.Errorf("ParseResponse(%s) = %v, want %v", tc.body, err, tc.sentinel)
		}
		var we *WalletError
		if tc.name != "" && (!errors.As(err, &we) || we.Name != tc.name) {
			t.Errorf("ParseResponse(%s): name %v, want %s", tc.body, err, tc.name)
		}
	}
}

func TestWalletErrorFor_RoundTripsAndHidesInternals(t *testing.T) {
	for _, tc := range []struct {
		err      error
		name     string
		sentinel error
	}{
		{fmt.Errorf("find user: %w", wallet.ErrUnauthorized), "WERR_UNAUTHORIZED", wallet.ErrUnauthorized},
		{fmt.Errorf("args: %w", wallet.ErrInvalidArgument), "WERR_INVALID_PARAMETER", wallet.ErrInvalidArgument},
		{fmt.Errorf("chain: %w", wallet.ErrWrongChain), "WERR_NETWORK_CHAIN", wallet.ErrWrongChain},
		{errors.New("open /srv/secret/wallet.sqlite: disk I/O error"), "WERR_INTERNAL", wallet.ErrRemote},
	} {
		we := WalletErrorFor(tc.err, "args")
		body := AppendWalletError(nil, json.RawMessage("3"), we)
		res, err := ParseResponse(body)
		if res != nil || !errors.Is(err, tc.sentinel) {
			t.Fatalf("%s: round trip gave %v", body, err)
		}
		var got *WalletError
		if !errors.As(err, &got) || got.Name != tc.name {
			t.Fatalf("%s: name %v, want %s", body, err, tc.name)
		}
		if tc.name == "WERR_INTERNAL" && got.Message != "An internal error has occurred." {
			t.Fatalf("internal detail reached the wire: %s", body)
		}
	}
}

func TestAppendResult_UndefinedIsLeftOut(t *testing.T) {
	if got := string(AppendResult(nil, json.RawMessage("1"), nil)); got != `{"jsonrpc":"2.0","id":1}` {
		t.Fatalf("got %s", got)
	}
	res, err := ParseResponse(AppendResult(nil, json.RawMessage(`"a"`), json.RawMessage(`{"x":1}`)))
	if err != nil || string(res) != `{"x":1}` {
		t.Fatalf("got %s, %v", res, err)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"getSyncChunk","params":[{"identityKey":"02"}],"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"x","params":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if err != nil {
			return
		}
		if req.Method == "" {
			t.Fatal("accepted an empty method")
		}
		// The params and id it keeps as slices of body are what copies would hold.
		var env struct {
			Params []json.RawMessage `json:"params"`
			ID     json.RawMessage   `json:"id"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		if fmt.Sprint(env.Params) != fmt.Sprint(req.Params) || string(env.ID) != string(req.ID) {
			t.Fatalf("%q: params %q id %q, want %q %q", body, req.Params, req.ID, env.Params, env.ID)
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"a":[1,2]},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"isError":true,"name":"WERR_UNAUTHORIZED","message":"m"},"id":1}`))
	f.Add([]byte(`{"error":{"code":-32600,"message":"Invalid Request"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := ParseResponse(body)
		if err != nil && res != nil {
			t.Fatal("both a result and an error")
		}
		if err != nil && !errors.Is(err, wallet.ErrRemote) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

// TestParseRequest_HoldsTheBodyOnce: the params of a parsed call are slices of its body,
// not copies: parsing an 8 MiB call allocates a few hundred bytes, where the envelope's
// params and each param were copied before (16 MiB more).
func TestParseRequest_HoldsTheBodyOnce(t *testing.T) {
	chunk := `{"rows":"` + strings.Repeat("x", 8<<20) + `"}`
	body := []byte(`{"jsonrpc":"2.0","method":"processSyncChunk","params":[{"identityKey":"k"},` + chunk + `],"id":7}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, err := ParseRequest(body)
	runtime.ReadMemStats(&after)
	if err != nil || len(req.Params) != 2 || string(req.Params[1]) != chunk || string(req.ID) != "7" {
		t.Fatalf("ParseRequest: %d params, id %s, %v", len(req.Params), req.ID, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Fatalf("parsing an %d-byte call allocated %d bytes: the params were copied", len(body), alloc)
	}
}
