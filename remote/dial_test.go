package remote_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/localstore"
	"walletsync/remote"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/testkit/servetest"
	"walletsync/testkit/toolboxpeer"
	"walletsync/wallet"
)

// stubWire is a mount that says it serves walletsync's wire (its Hello) and answers every
// request of it with answer: a paged wire that is misconfigured or of another version.
func stubWire(answer http.HandlerFunc) serve.Mount {
	return serve.Mount{Prefix: wire.Prefix, MaxBodyBytes: wire.MaxBodyBytes, Hello: wire.Hello,
		New: func(wire.Backend, *wire.MemoryBudget) (http.Handler, error) { return answer, nil }}
}

// TestDial_ChoosesTheWire dials each kind of storage server with each choice: auto takes
// walletsync's wire where the server offers it and its probe succeeds, else the toolbox's
// (saying why when the probe failed); toolbox always takes the toolbox's; walletsync takes
// walletsync's or fails with a *DialError matching wire.ErrNotWalletsync or the probe's
// error. Every Provider returned answers a first call on its wire.
func TestDial_ChoosesTheWire(t *testing.T) {
	t.Parallel()
	servers := map[string]string{
		"walletsync serve":               servetest.Start(t, servetest.Paged()).URL,
		"walletsync serve, toolbox only": servetest.Start(t).URL,
		"paged wire down": servetest.Start(t, stubWire(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		})).URL,
		"paged wire of another version": servetest.Start(t, stubWire(func(w http.ResponseWriter, _ *http.Request) {
			if err := json.NewEncoder(w).Encode(wire.Capabilities{Wire: "walletsync", Versions: []int{wire.Version + 1}, Encodings: []wire.Encoding{wire.EncodingZstd}}); err != nil {
				t.Errorf("write the capabilities: %v", err)
			}
		})).URL,
		"toolbox StorageServer": toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(60))).URL,
	}
	signer := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(61)))
	for _, tc := range []struct {
		server       string
		choice       remote.Wire
		want         remote.Wire // "" when Dial fails
		fallback     bool
		wantErr      error
		wantErrAlone bool // wantErr, and not wire.ErrNotWalletsync
	}{
		{server: "walletsync serve", choice: remote.Auto, want: remote.Walletsync},
		{server: "walletsync serve", choice: remote.Toolbox, want: remote.Toolbox},
		{server: "walletsync serve", choice: remote.Walletsync, want: remote.Walletsync},
		{server: "walletsync serve, toolbox only", choice: remote.Auto, want: remote.Toolbox},
		{server: "walletsync serve, toolbox only", choice: remote.Toolbox, want: remote.Toolbox},
		{server: "walletsync serve, toolbox only", choice: remote.Walletsync, wantErr: wire.ErrNotWalletsync},
		{server: "paged wire down", choice: remote.Auto, want: remote.Toolbox, fallback: true},
		{server: "paged wire down", choice: remote.Walletsync, wantErr: wire.ErrNotWalletsync},
		{server: "paged wire of another version", choice: remote.Auto, want: remote.Toolbox, fallback: true},
		{server: "paged wire of another version", choice: remote.Walletsync, wantErr: wire.ErrIncompatible, wantErrAlone: true},
		{server: "toolbox StorageServer", choice: remote.Auto, want: remote.Toolbox},
		{server: "toolbox StorageServer", choice: remote.Toolbox, want: remote.Toolbox},
		{server: "toolbox StorageServer", choice: remote.Walletsync, wantErr: wire.ErrNotWalletsync},
	} {
		t.Run(tc.server+"/"+string(tc.choice), func(t *testing.T) {
			p, err := remote.Dial(t.Context(), servers[tc.server], signer, tc.choice, remote.Options{})
			if tc.wantErr != nil {
				var de *remote.DialError
				if !errors.As(err, &de) || de.Wire != tc.choice || !errors.Is(err, tc.wantErr) || (tc.wantErrAlone && errors.Is(err, wire.ErrNotWalletsync)) {
					t.Fatalf("dial: %+v, %v; want a *DialError matching %v", p, err, tc.wantErr)
				}
				return
			}
			if err != nil || p.Wire != tc.want || (p.Fallback != nil) != tc.fallback {
				t.Fatalf("dial: %+v, %v; want the %s wire (a fallback: %v)", p, err, tc.want, tc.fallback)
			}
			switch p.Wire {
			case remote.Walletsync:
				if p.Chunks != nil {
					t.Fatal("a walletsync Provider with a toolbox client")
				}
				if _, _, err := p.Paged.Describe(t.Context()); err != nil {
					t.Fatalf("describe on walletsync's wire: %v", err)
				}
			case remote.Toolbox:
				if p.Paged != nil {
					t.Fatal("a toolbox Provider with a paged one")
				}
				if _, err := p.Chunks.MakeAvailable(t.Context()); err != nil {
					t.Fatalf("makeAvailable on the toolbox wire: %v", err)
				}
			}
		})
	}
}

// TestDial_RefusesBeforeAnyRequest: a URL that is not an http(s) server's, and a choice
// that is no wire, fail with a *DialError matching wallet.ErrInvalidArgument, and the
// server is not asked anything.
func TestDial_RefusesBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := servetest.Start(t, servetest.Paged())
	signer := auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(62)))
	for _, tc := range []struct {
		name, url string
		choice    remote.Wire
	}{
		{"FilePath", "/tmp/wallet.sqlite", remote.Auto},
		{"NoHost", "http://", remote.Auto},
		{"OtherScheme", "ftp://" + srv.URL[len("http://"):], remote.Toolbox},
		{"UnknownWire", srv.URL, remote.Wire("fastest")},
		{"EmptyWire", srv.URL, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := remote.Dial(t.Context(), tc.url, signer, tc.choice, remote.Options{})
			var de *remote.DialError
			if !errors.As(err, &de) || !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("dial %q on %q: %v, want a *DialError matching wallet.ErrInvalidArgument", tc.url, tc.choice, err)
			}
		})
	}
	if paths := srv.Paths(); len(paths) != 0 {
		t.Errorf("refused dials sent requests: %q", paths)
	}
}

// TestParseWire_Names: the three names parse to themselves; anything else is refused.
func TestParseWire_Names(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want remote.Wire
		ok   bool
	}{
		{"auto", remote.Auto, true},
		{"toolbox", remote.Toolbox, true},
		{"walletsync", remote.Walletsync, true},
		{"", "", false},
		{"Auto", "", false},
		{"paged", "", false},
	} {
		got, err := remote.ParseWire(tc.in)
		if got != tc.want || (err == nil) != tc.ok || (err != nil && !errors.Is(err, wallet.ErrInvalidArgument)) {
			t.Errorf("ParseWire(%q) = %q, %v; want %q (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
