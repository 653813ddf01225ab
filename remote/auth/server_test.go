package auth

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// rpcHandler is a tiny toolbox-style JSON-RPC endpoint: errors are HTTP 200 with a WERR
// object, an unknown method is 400, as StorageServer answers.
func rpcHandler(t testing.TB) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
			ID     json.RawMessage   `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		caller, ok := Identity(r.Context())
		if !ok {
			t.Error("handler reached without an identity in the context")
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		status := http.StatusOK
		switch req.Method {
		case "makeAvailable", "getSettings":
			reply["result"] = map[string]any{"storageIdentityKey": "go-test", "storageName": "go", "chain": "test", "dbtype": "SQLite", "maxOutputScript": 1024}
		case "whoAmI":
			reply["result"] = caller
		case "findOrInsertUser":
			var key string
			if len(req.Params) > 0 {
				if err := json.Unmarshal(req.Params[0], &key); err != nil {
					t.Errorf("findOrInsertUser's identity key %s: %v", req.Params[0], err)
				}
			}
			if key != caller {
				reply["error"] = map[string]any{"isError": true, "name": "WERR_UNAUTHORIZED", "message": "access is denied"}
			} else {
				reply["result"] = map[string]any{"user": map[string]any{"userId": 1, "identityKey": key}, "isNew": false}
			}
		case "badParam":
			reply["error"] = map[string]any{"isError": true, "name": "WERR_INVALID_PARAMETER", "message": "The since parameter must be valid.", "parameter": "since"}
		case "echo":
			reply["result"] = req.Params
		default:
			status = http.StatusBadRequest
			reply["error"] = map[string]any{"code": -32601, "message": "Method not found"}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(reply); err != nil {
			t.Errorf("write the %s reply: %v", req.Method, err)
		}
	})
}

// goServer is a walletsync auth server on 127.0.0.1 with the JSON-RPC handler, counting
// handshakes, plus an unauthenticated GET /test/forget that drops every session.
type goServer struct {
	*httptest.Server
	auth       *Server
	wallet     *ProtoWallet
	handshakes atomic.Int64
}

func startGoServer(t testing.TB, opts ServerOptions) *goServer {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	gs := &goServer{wallet: NewProtoWallet(randKey(rng))}
	var err error
	gs.auth, err = NewServer(context.Background(), gs.wallet, opts)
	if err != nil {
		t.Fatal(err)
	}
	authed := gs.auth.Middleware(rpcHandler(t))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /test/forget", func(w http.ResponseWriter, r *http.Request) { gs.auth.ForgetSessions() })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wellKnownAuth {
			gs.handshakes.Add(1)
		}
		authed.ServeHTTP(w, r)
	})
	gs.Server = httptest.NewServer(mux)
	t.Cleanup(gs.Close)
	return gs
}

// tsStep is one step of interop/auth-client.mjs.
type tsStep map[string]any

type tsResult struct {
	Result  json.RawMessage `json:"result"`
	Timeout bool            `json:"timeout"`
	Error   *struct {
		Name, Message, Parameter string
	} `json:"error"`
}

// runTSClient drives a real StorageClient through the steps.
func runTSClient(t *testing.T, url, rootHex string, steps ...tsStep) []tsResult {
	t.Helper()
	var out struct{ Results []tsResult }
	runNode(t, "auth-client.mjs", map[string]any{"url": url, "key": rootHex, "steps": steps}, &out)
	if len(out.Results) != len(steps) {
		t.Fatalf("%d results for %d steps", len(out.Results), len(steps))
	}
	return out.Results
}

func TestServer_TypeScriptStorageClient(t *testing.T) {
	gs := startGoServer(t, ServerOptions{})
	rng := rand.New(rand.NewPCG(21, 22))
	root := randKey(rng)
	me := string(CounterpartyKey(root.PubKey()))
	other := string(CounterpartyKey(randKey(rng).PubKey()))
	res := runTSClient(t, gs.URL, privHex(root),
		tsStep{"rpc": "makeAvailable"},
		tsStep{"rpc": "whoAmI"},
		tsStep{"rpc": "findOrInsertUser", "params": []any{me}},
		tsStep{"rpc": "findOrInsertUser", "params": []any{other}},
		tsStep{"rpc": "badParam"},
		tsStep{"rpc": "echo", "params": []any{"<&>\u2028\U0001F600", map[string]any{"b": 1, "1": 2}, 1.5, []any{}}},
		tsStep{"rpc": "noSuchMethod"},
		tsStep{"get": "/test/forget"},
		tsStep{"rpc": "whoAmI"},
		tsStep{"get": "/test/forget"},
		tsStep{"rpc": "getSettings"},
		tsStep{"rpc": "whoAmI", "concurrent": 8},
	)
	for i, r := range res {
		if r.Timeout {
			t.Fatalf("step %d: the TypeScript client hung (a verification failure on its side)", i)
		}
	}
	want := func(i int, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got, wantV any
		if err := json.Unmarshal(b, &wantV); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res[i].Error != nil || json.Unmarshal(res[i].Result, &got) != nil || !reflect.DeepEqual(got, wantV) {
			t.Errorf("step %d: got %s %+v, want %s", i, res[i].Result, res[i].Error, b)
		}
	}
	wantErr := func(i int, name, parameter string) {
		t.Helper()
		if e := res[i].Error; e == nil || e.Name != name || e.Parameter != parameter {
			t.Errorf("step %d: got %s %+v, want error %s (parameter %q)", i, res[i].Result, res[i].Error, name, parameter)
		}
	}
	want(1, me)
	want(2, map[string]any{"user": map[string]any{"userId": 1, "identityKey": me}, "isNew": false})
	wantErr(3, "WERR_UNAUTHORIZED", "")
	wantErr(4, "WERR_INVALID_PARAMETER", "since")
	want(5, []any{"<&>\u2028\U0001F600", map[string]any{"1": 2, "b": 1}, 1.5, []any{}})
	if e := res[6].Error; e == nil || e.Message == "" {
		t.Errorf("unknown method: got %s, want the client's network error for HTTP 400", res[6].Result)
	}
	want(8, me)
	want(10, map[string]any{"storageIdentityKey": "go-test", "storageName": "go", "chain": "test", "dbtype": "SQLite", "maxOutputScript": 1024})
	want(11, []any{me, me, me, me, me, me, me, me})
	// One handshake at the start, one after each time the server forgot its sessions.
	if n := gs.handshakes.Load(); n != 3 {
		t.Errorf("%d handshakes, want 3", n)
	}
}
