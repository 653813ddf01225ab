package wire

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	"walletsync/testkit/toolboxpeer"

	"walletsync/remote/auth"
	"walletsync/syncer"
	"walletsync/wallet"
)

func TestProbe_WalletsyncServer(t *testing.T) {
	srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{Views: ViewOptions{MaxLifetime: 10 * time.Minute}})
	caps, err := Probe(t.Context(), srv.URL, authClient(t, srv, fixtureUser(91)))
	if err != nil {
		t.Fatal(err)
	}
	if caps.Wire != "walletsync" || len(caps.Versions) != 1 || caps.Versions[0] != Version || len(caps.Encodings) != 2 ||
		caps.Limits.MaxFrameBytes != wallet.MaxFrameBytes || caps.Limits.MaxLifetime != (10*time.Minute).Milliseconds() {
		t.Fatalf("capabilities %+v", caps)
	}
}

// TestProbe_ProviderReusesCapabilities: a Provider given the capabilities Probe returned
// through the same client does not ask for them again: a push after the probe is the
// probe's handshake and capabilities request, begin, then one commit per page.
func TestProbe_ProviderReusesCapabilities(t *testing.T) {
	owner := fixtureUser(94)
	local := newStore(t, wallet.ChainTest)
	seed(t, local, owner, 94)
	srv := startServer(t, newStore(t, wallet.ChainTest), HandlerOptions{})
	client := authClient(t, srv, owner)
	caps, err := Probe(t.Context(), srv.URL, client)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProvider(client, ProviderOptions{Capabilities: &caps})
	if err != nil {
		t.Fatal(err)
	}
	res, err := syncer.Run(t.Context(), local, p, owner.id, syncer.Options{MaxRows: 7, Active: wallet.KeepSourceActive})
	if err != nil || res.State != syncer.StateCompleted {
		t.Fatalf("push: %+v, %v", res, err)
	}
	if n := srv.requests.Load(); n != 3+res.Pages {
		t.Errorf("probe and push of %d pages took %d HTTP requests, want %d", res.Pages, n, 3+res.Pages)
	}
	if _, enc := p.Negotiated(); enc != EncodingZstd {
		t.Errorf("the provider chose %q from the probe's capabilities, want %q", enc, EncodingZstd)
	}
}

// TestProbe_OtherServers: a BRC-104 server without the wire, and the real toolbox
// StorageServer, are told apart from a walletsync server with ErrNotWalletsync; a Provider
// against one fails the same way on its first request.
func TestProbe_OtherServers(t *testing.T) {
	u := fixtureUser(92)
	t.Run("AuthenticatedWithoutTheWire", func(t *testing.T) {
		as, err := auth.NewServer(context.Background(), auth.NewProtoWallet(fixtureUser(93).key), auth.ServerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(as.Middleware(http.NotFoundHandler()))
		defer hs.Close()
		c, err := auth.NewClient(hs.URL, auth.NewProtoWallet(u.key), auth.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Probe(t.Context(), hs.URL, c); !errors.Is(err, ErrNotWalletsync) {
			t.Fatalf("probe: %v, want ErrNotWalletsync", err)
		}
		p, _ := NewProvider(c, ProviderOptions{})
		if _, _, err := p.Describe(t.Context()); !errors.Is(err, ErrNotWalletsync) {
			t.Fatalf("provider: %v, want ErrNotWalletsync", err)
		}
	})
	t.Run("ToolboxStorageServer", func(t *testing.T) {
		url := toolboxpeer.StartServer(t, hex.EncodeToString(fixtureUser(94).key.Serialize())).URL
		c, err := auth.NewClient(url, auth.NewProtoWallet(u.key), auth.ClientOptions{Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Probe(t.Context(), url, c); !errors.Is(err, ErrNotWalletsync) {
			t.Fatalf("probe: %v, want ErrNotWalletsync", err)
		}
	})
	t.Run("NoServer", func(t *testing.T) {
		hs := httptest.NewServer(http.NotFoundHandler())
		hs.Close()
		c, _ := auth.NewClient(hs.URL, auth.NewProtoWallet(u.key), auth.ClientOptions{Timeout: 5 * time.Second})
		if _, err := Probe(t.Context(), hs.URL, c); err == nil || errors.Is(err, ErrNotWalletsync) {
			t.Fatalf("probe of a closed port: %v, want a failure that says nothing about the wire", err)
		}
	})
}

// TestProvider_Negotiates: a Provider uses what the server advertises: the other encoding
// when its preferred one is not offered (an older or smaller server), and nothing at all
// when no version or encoding is shared; given the capabilities, NewProvider decides the
// same before any request.
func TestProvider_Negotiates(t *testing.T) {
	owner := fixtureUser(95)
	store := newStore(t, wallet.ChainTest)
	seed(t, store, owner, 95)
	for _, tc := range []struct {
		name    string
		caps    Capabilities
		want    Encoding
		wantErr error
	}{
		{"JSONOnlyServer", Capabilities{Wire: "walletsync", Versions: []int{Version}, Encodings: []Encoding{EncodingJSON}}, EncodingJSON, nil},
		{"NewerServer", Capabilities{Wire: "walletsync", Versions: []int{Version, Version + 1}, Encodings: []Encoding{"brotli", EncodingZstd}}, EncodingZstd, nil},
		{"NoSharedVersion", Capabilities{Wire: "walletsync", Versions: []int{Version + 1}, Encodings: []Encoding{EncodingZstd}}, "", ErrIncompatible},
		{"NoSharedEncoding", Capabilities{Wire: "walletsync", Versions: []int{Version}, Encodings: []Encoding{"brotli"}}, "", ErrIncompatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, store, HandlerOptions{})
			real := srv.handler
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == Prefix+pathCapabilities {
					if err := json.NewEncoder(w).Encode(tc.caps); err != nil {
						t.Errorf("write the capabilities: %v", err)
					}
					return
				}
				real.ServeHTTP(w, r)
			})
			as, _ := auth.NewServer(context.Background(), auth.NewProtoWallet(fixtureUser(96).key), auth.ServerOptions{MaxBodyBytes: MaxBodyBytes})
			hs := httptest.NewServer(as.Middleware(inner))
			defer hs.Close()
			c, _ := auth.NewClient(hs.URL, auth.NewProtoWallet(owner.key), auth.ClientOptions{MaxResponseBytes: MaxBodyBytes})
			p, _ := NewProvider(c, ProviderOptions{Encoding: EncodingZstd})
			_, _, err := p.Describe(t.Context())
			if _, enc := p.Negotiated(); !errors.Is(err, tc.wantErr) || enc != tc.want {
				t.Fatalf("negotiated %q, %v; want %q, %v", enc, err, tc.want, tc.wantErr)
			}
			// Given the capabilities, the Provider negotiates before its first request.
			given, err := NewProvider(c, ProviderOptions{Encoding: EncodingZstd, Capabilities: &tc.caps})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("new provider given %+v: %v, want %v", tc.caps, err, tc.wantErr)
			}
			if err == nil {
				if _, enc := given.Negotiated(); enc != tc.want {
					t.Fatalf("given the capabilities, negotiated %q, want %q", enc, tc.want)
				}
			}
		})
	}
}
