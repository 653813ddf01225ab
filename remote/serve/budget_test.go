package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"walletsync/remote/auth"
	"walletsync/remote/wire"
)

// TestServe_MemoryBudgetRefusesBodiesBusy: with the memory budget all but full, a request
// body that does not fit is refused 503 with Retry-After and a server_busy body before a
// byte of it is read, signed or not, and does nothing (the sync state the refused call
// would have made is made only by the same call once the budget is free); /metrics shows the budget,
// its use and the refusals.
func TestServe_MemoryBudgetRefusesBodiesBusy(t *testing.T) {
	srv := startServer(t, Options{MetricsListen: "127.0.0.1:0", MemoryBudget: wire.MinMemoryBudget, MemoryWait: 50 * time.Millisecond,
		Mounts: []Mount{WireMount(wire.ViewOptions{}, nil)}})
	key := randomKey(t)
	caller := newCaller(t, srv.URL, key)
	if status, body := caller.mustCall("makeAvailable"); status != http.StatusOK || errorName(t, body) != "" {
		t.Fatalf("makeAvailable: %d %s", status, body)
	}
	if srv.budget.Size() != wire.MinMemoryBudget {
		t.Fatalf("budget %d, want %d", srv.budget.Size(), wire.MinMemoryBudget)
	}
	held, err := srv.budget.Charge(t.Context(), srv.budget.Size()-16, "held by the test")
	if err != nil {
		t.Fatal(err)
	}
	// An unsigned request: the refusal comes before the middleware reads anything.
	for _, path := range []string{"/", wire.Prefix + "capabilities"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"makeAvailable","params":[],"id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var refusal struct {
			Code  string
			Error struct {
				Code         string
				RetryAfterMs int64
			}
		}
		if err := json.Unmarshal(body, &refusal); err != nil {
			t.Fatalf("%s: %s: %v", path, body, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			refusal.Code != "ERR_SERVER_BUSY" || refusal.Error.Code != "server_busy" || refusal.Error.RetryAfterMs != 1000 {
			t.Fatalf("%s with the budget full: %d Retry-After %q %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	// A signed call is refused alike (the client sees an unsigned 503: the server
	// unavailable for now) and makes nothing.
	identity := pubHex(key)
	args := []any{map[string]string{"identityKey": identity}, "02aa", "a producer"}
	_, _, err = caller.call(t.Context(), "findOrInsertSyncStateAuth", args...)
	var rejected *auth.RejectedError
	if !errors.As(err, &rejected) || rejected.Status != http.StatusServiceUnavailable {
		t.Fatalf("findOrInsertSyncStateAuth with the budget full: %v", err)
	}
	held()
	if srv.budget.InUse() != 0 {
		t.Fatalf("%d bytes still charged after every request ended", srv.budget.InUse())
	}
	status, body := caller.mustCall("findOrInsertSyncStateAuth", args...)
	var made struct {
		Result struct{ IsNew bool } `json:"result"`
	}
	if err := json.Unmarshal(body, &made); status != http.StatusOK || err != nil || !made.Result.IsNew {
		t.Fatalf("findOrInsertSyncStateAuth with the budget free: %d %s (want the state made now, not by the refused call)", status, body)
	}
	resp, err := http.Get(srv.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"walletsync_serve_memory_budget_bytes 135266304",
		"walletsync_serve_memory_in_use_bytes 0",
	} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !bytes.Contains(text, []byte(`walletsync_serve_refused_total{reason="memory_budget"} `)) ||
		bytes.Contains(text, []byte(`walletsync_serve_refused_total{reason="memory_budget"} 0`)) {
		t.Errorf("/metrics counts no memory_budget refusal:\n%s", text)
	}
}
