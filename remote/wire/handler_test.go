package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"walletsync/remote/auth"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// TestHandler_BusyOverHTTP: a full quota answers 429 (the identity's) or 503 (the
// server's) with Retry-After, which the Provider turns into a *wallet.BusyError; a Provider
// told to wait retries until the view is free.
func TestHandler_BusyOverHTTP(t *testing.T) {
	ctx := t.Context()
	a, b := fixtureUser(61), fixtureUser(62)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, a, 61)
	srv := startServer(t, store, HandlerOptions{})
	pa := provider(t, srv, a, ProviderOptions{})
	v, err := pa.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(u user) (int, string) {
		t.Helper()
		c := authClient(t, srv, u)
		body, _ := newCodec().encode(EncodingZstd, openViewRequest{}, nil)
		resp, err := c.DoContent(ctx, http.MethodPost, Prefix+pathOpenView, contentTypeZstd, body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status, resp.Header.Get("Retry-After")
	}
	if st, ra := raw(a); st != http.StatusTooManyRequests || ra != "1" {
		t.Fatalf("a second view of one identity: HTTP %d Retry-After %q, want 429 and 1", st, ra)
	}
	// B is within its own quota, but the file's one snapshot view is A's.
	if st, ra := raw(b); st != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("a view while the store's is taken: HTTP %d Retry-After %q, want 503 and 1", st, ra)
	}
	_, err = pa.OpenView(ctx, 0)
	var busy *wallet.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, wallet.ErrServerBusy) || busy.RetryAfter != time.Second {
		t.Fatalf("Provider's error: %v, want a *wallet.BusyError retrying after 1s", err)
	}

	// A waiting Provider gets the view once A lets it go.
	pb := provider(t, srv, b, ProviderOptions{BusyWait: time.Minute})
	go func() {
		time.Sleep(100 * time.Millisecond)
		v.Close()
	}()
	vb, err := pb.OpenView(ctx, 0)
	if err != nil {
		t.Fatalf("waiting for the view: %v", err)
	}
	vb.Close()
}

// TestHandler_ViewsForgotten: views end with the server (a restart forgets them), and with
// their lifetime; a read then fails with the errors that make a session open a new view,
// and a pull whose views keep vanishing still completes, resuming from its checkpoint.
func TestHandler_ViewsForgotten(t *testing.T) {
	ctx := t.Context()
	owner := fixtureUser(71)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, owner, 71)
	srv := startServer(t, store, HandlerOptions{})
	p := provider(t, srv, owner, ProviderOptions{})

	v, err := p.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv.handler.Close() // what a restart does to retained views
	if _, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: owner.id}); !errors.Is(err, wallet.ErrSnapshotClosed) {
		t.Fatalf("read after the server forgot the view: %v", err)
	}
	v.Close()

	// A view whose lifetime ends while it opens (its journal position is one of its reads)
	// is refused as expired; one that opened fails its first read after the lifetime.
	v, err = p.OpenView(ctx, time.Millisecond)
	switch {
	case errors.Is(err, wallet.ErrSnapshotExpired):
	case err != nil:
		t.Fatal(err)
	default:
		time.Sleep(20 * time.Millisecond)
		if _, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: owner.id}); !errors.Is(err, wallet.ErrSnapshotClosed) && !errors.Is(err, wallet.ErrSnapshotExpired) {
			t.Fatalf("read after the lifetime: %v", err)
		}
		v.Close()
	}

	// A pull during which the server forgets its views twice.
	restored := newStore(t, wallet.ChainTest)
	forgets := 0
	res, err := syncer.Run(ctx, p, restored, owner.id, syncer.Options{MaxRows: 3, Active: wallet.KeepDestinationActive,
		Progress: func(pr syncer.Progress) error {
			if pr.State == syncer.StateCommitted && pr.Pages%4 == 0 && forgets < 2 {
				forgets++
				srv.handler.Close()
			}
			return nil
		}})
	if err != nil || res.State != syncer.StateCompleted || forgets != 2 {
		t.Fatalf("pull across forgotten views: %+v, %v (%d forgets)", res, err, forgets)
	}
	compare.SameWallet(t, store, restored, owner.id)
}

// TestHandler_RefusesWhatIsNotTheWire: requests outside the wire's shape are refused
// before any backend work, with walletsync's JSON refusal.
func TestHandler_RefusesWhatIsNotTheWire(t *testing.T) {
	owner := fixtureUser(81)
	srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{})
	c := authClient(t, srv, owner)
	ctx := t.Context()
	cases := []struct {
		name, method, path, contentType string
		body                            []byte
		status                          int
		code                            string
	}{
		{"GET", http.MethodGet, Prefix + pathDescribe, "", nil, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"unknown endpoint", http.MethodPost, Prefix + "nope", contentTypeZstd, []byte("x"), http.StatusNotFound, "not_found"},
		{"other content type", http.MethodPost, Prefix + pathDescribe, "text/plain", []byte("x"), http.StatusUnsupportedMediaType, "unsupported_encoding"},
		{"garbage frame", http.MethodPost, Prefix + pathBegin, contentTypeZstd, []byte("WSF1garbage"), http.StatusBadRequest, "bad_frame"},
		{"garbage JSON", http.MethodPost, Prefix + pathBegin, contentTypeJSON, []byte("{"), http.StatusBadRequest, "bad_frame"},
	}
	for _, tc := range cases {
		resp, err := c.DoContent(ctx, tc.method, tc.path, tc.contentType, tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var m struct{ Error wireError }
		if err := json.Unmarshal(resp.Body, &m); err != nil {
			t.Errorf("%s: HTTP %d %q: not an error body: %v", tc.name, resp.Status, resp.Body, err)
			continue
		}
		if resp.Status != tc.status || m.Error.Code != tc.code {
			t.Errorf("%s: HTTP %d %q, want %d %q", tc.name, resp.Status, m.Error.Code, tc.status, tc.code)
		}
	}
	// Without the authentication middleware there is no identity: nothing is served.
	rec := httptest.NewRecorder()
	srv.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Prefix+pathDescribe, strings.NewReader("")))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("unauthenticated request: HTTP %d", rec.Code)
	}
}

// TestHandler_RowTooLargeKeepsItsCharge: a row over the page's byte limit is refused with
// a *wallet.RowTooLargeError that keeps its charge across the wire, and reading it alone
// with that charge as the limit returns it.
func TestHandler_RowTooLargeKeepsItsCharge(t *testing.T) {
	ctx := t.Context()
	owner := fixtureUser(72)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, owner, 72)
	p := provider(t, startServer(t, store, HandlerOptions{}), owner, ProviderOptions{})
	v, err := p.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	req := wallet.PageRequest{Table: wallet.TableTransactions, IdentityKey: owner.id, Limits: wallet.Limits{Rows: 10, Bytes: 100}}
	_, err = v.ReadPage(ctx, req)
	var big *wallet.RowTooLargeError
	if !errors.As(err, &big) || big.Table != wallet.TableTransactions || big.Charge <= 100 || big.Limit != 100 || len(big.Key) != 1 {
		t.Fatalf("err = %#v, want a *wallet.RowTooLargeError with the row's charge", err)
	}
	req.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
	if page, err := v.ReadPage(ctx, req); err != nil || len(page.Rows) != 1 {
		t.Fatalf("the row alone: %d rows, %v", len(page.Rows), err)
	}
}

// TestHandler_TamperedFrameRefused: a binary frame is signed byte for byte (DoContent), so
// one byte changed in transit makes the server refuse the request before the wire sees it.
func TestHandler_TamperedFrameRefused(t *testing.T) {
	ctx := t.Context()
	owner := fixtureUser(73)
	local := newStore(t, wallet.ChainTest)
	seed(t, local, owner, 73)
	srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{})
	target, _ := url.Parse(srv.URL)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		if r.Out.URL.Path == Prefix+pathCommit {
			b, _ := io.ReadAll(r.Out.Body)
			b[len(b)-1] ^= 1
			r.Out.Body = io.NopCloser(bytes.NewReader(b))
		}
	}}
	px := httptest.NewServer(rp)
	defer px.Close()
	c, err := auth.NewClient(px.URL, auth.NewProtoWallet(owner.key), auth.ClientOptions{MaxResponseBytes: MaxBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewProvider(c, ProviderOptions{})
	_, err = syncer.Run(ctx, local, p, owner.id, syncer.Options{Active: wallet.KeepSourceActive})
	var rej *auth.RejectedError
	if !errors.As(err, &rej) || rej.Status != http.StatusUnauthorized {
		t.Fatalf("push through a tampering proxy: %v, want the server's unsigned 401", err)
	}
	// No page was committed (the session's retries read the checkpoint, which stayed zero).
	v, err := srv.store.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: owner.id}); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("the server holds the user after refused commits: %v", err)
	}
}

// TestView_CloseReportsALostClose: a view's Close that cannot reach the server returns the
// error (the server reaps the view later); a second Close does nothing.
func TestView_CloseReportsALostClose(t *testing.T) {
	tests := []struct {
		name    string
		down    bool
		wantErr bool
	}{
		{"server up", false, false},
		{"server down", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := fixtureUser(73)
			store := newStore(t, wallet.ChainTest)
			seed(t, store, owner, 73)
			srv := startServer(t, store, HandlerOptions{})
			v, err := provider(t, srv, owner, ProviderOptions{}).OpenView(t.Context(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.down {
				srv.Close()
			}
			if err := v.Close(); (err != nil) != tt.wantErr {
				t.Fatalf("Close = %v, want an error: %v", err, tt.wantErr)
			}
			if err := v.Close(); err != nil {
				t.Fatalf("second Close = %v, want nil", err)
			}
		})
	}
}
