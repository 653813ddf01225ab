package auth

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPWallet_MatchesProtoWallet: the BRC-100 signer, talking to a wallet built on the
// SDK's ProtoWallet, gives the same bytes as the in-process ProtoWallet of the same key, and
// reports failed checks as ErrBadSignature / ErrBadHMAC.
func TestHTTPWallet_MatchesProtoWallet(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	root := randKey(rng)
	ws := startNodeServer(t, "brc100-wallet.mjs", "--key", privHex(root))
	hw, err := NewHTTPWallet(ws.URL, HTTPWalletOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pw := NewProtoWallet(root)
	ctx := t.Context()
	id, err := hw.IdentityKey(ctx)
	if err != nil || string(CounterpartyKey(id)) != ws.IdentityKey {
		t.Fatalf("IdentityKey = %v, %v; want %s", id, err, ws.IdentityKey)
	}
	peer := randKey(rng)
	cp := CounterpartyKey(peer.PubKey())
	for i, data := range [][]byte{{}, randBytes(rng, 300)} {
		keyID := strings.Repeat("k", i+1) + " \U0001F600"
		sigH, err := hw.CreateSignature(ctx, data, ProtocolSignature, keyID, cp)
		if err != nil {
			t.Fatal(err)
		}
		sigP, _ := pw.CreateSignature(ctx, data, ProtocolSignature, keyID, cp)
		if string(sigH) != string(sigP) {
			t.Fatalf("signature differs: %x vs %x", sigH, sigP)
		}
		// The peer's signature for us verifies through the wallet; a changed one does not.
		peerSig, _ := NewProtoWallet(peer).CreateSignature(ctx, data, ProtocolSignature, keyID, CounterpartyKey(root.PubKey()))
		if err := hw.VerifySignature(ctx, data, peerSig, ProtocolSignature, keyID, cp); err != nil {
			t.Fatal(err)
		}
		if err := hw.VerifySignature(ctx, append(data, 1), peerSig, ProtocolSignature, keyID, cp); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("changed data: %v, want ErrBadSignature", err)
		}
		for _, c := range []Counterparty{Self, Anyone, cp} {
			macH, err := hw.CreateHMAC(ctx, data, ProtocolNonce, keyID, c)
			if err != nil {
				t.Fatal(err)
			}
			macP, _ := pw.CreateHMAC(ctx, data, ProtocolNonce, keyID, c)
			if string(macH) != string(macP) {
				t.Fatalf("hmac differs for %s", c)
			}
			if err := hw.VerifyHMAC(ctx, data, macH, ProtocolNonce, keyID, c); err != nil {
				t.Fatal(err)
			}
			macH[0] ^= 1
			if err := hw.VerifyHMAC(ctx, data, macH, ProtocolNonce, keyID, c); !errors.Is(err, ErrBadHMAC) {
				t.Fatalf("changed hmac: %v, want ErrBadHMAC", err)
			}
		}
	}
	// A wallet refusal that is not a failed check is ErrSigner, not a verdict.
	if _, err := hw.CreateSignature(ctx, []byte("x"), Protocol{2, "no"}, "k", cp); !errors.Is(err, ErrSigner) || errors.Is(err, ErrBadSignature) {
		t.Fatalf("invalid protocol: %v, want ErrSigner", err)
	}
}

// TestHTTPWallet_Authenticates: a client and a server each signing through a BRC-100
// wallet complete a handshake and calls.
func TestHTTPWallet_Authenticates(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	clientRoot, serverRoot := randKey(rng), randKey(rng)
	cw := startNodeServer(t, "brc100-wallet.mjs", "--key", privHex(clientRoot))
	sw := startNodeServer(t, "brc100-wallet.mjs", "--key", privHex(serverRoot))
	serverSigner, _ := NewHTTPWallet(sw.URL, HTTPWalletOptions{})
	srv, err := NewServer(t.Context(), serverSigner, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Middleware(rpcHandler(t)))
	t.Cleanup(hs.Close)
	clientSigner, _ := NewHTTPWallet(cw.URL, HTTPWalletOptions{})
	c, err := NewClient(hs.URL, clientSigner, ClientOptions{Timeout: 20 * time.Second, ServerKey: sw.IdentityKey})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		reply, err := rpc(t.Context(), c, "whoAmI")
		if err != nil || reply["result"] != cw.IdentityKey {
			t.Fatalf("whoAmI = %v, %v; want %s", reply, err, cw.IdentityKey)
		}
	}
}

func TestHTTPWallet_Unreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	hw, _ := NewHTTPWallet(url, HTTPWalletOptions{Timeout: 5 * time.Second})
	if _, err := hw.IdentityKey(context.Background()); !errors.Is(err, ErrSigner) {
		t.Fatalf("got %v, want ErrSigner", err)
	}
}

func TestKeyFile_CreateLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "identity.key")
	key, err := CreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 65 {
		t.Fatalf("stat %v %v", st.Mode(), err)
	}
	loaded, err := LoadKeyFile(path)
	if err != nil || !loaded.PubKey().IsEqual(key.PubKey()) {
		t.Fatalf("LoadKeyFile = %v, %v", loaded, err)
	}
	before, _ := os.ReadFile(path)
	if _, err := CreateKeyFile(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateKeyFile over an existing file: %v, want fs.ErrExist", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("CreateKeyFile changed an existing file")
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		var kfe *KeyFileError
		if _, err := LoadKeyFile(path); !errors.Is(err, ErrKeyFileMode) || !errors.As(err, &kfe) || kfe.Mode != mode {
			t.Fatalf("mode %04o: %v, want ErrKeyFileMode", mode, err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(path); err != nil {
		t.Fatalf("mode 0400: %v", err)
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestParseKeyFile_Refuses(t *testing.T) {
	good := strings.Repeat("1", 64) + "\n"
	if _, err := ParseKeyFile([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"", strings.Repeat("1", 64), strings.Repeat("1", 64) + "\r\n", strings.Repeat("A", 64) + "\n",
		strings.Repeat("g", 64) + "\n", strings.Repeat("0", 64) + "\n", strings.Repeat("f", 64) + "\n",
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141\n", " " + strings.Repeat("1", 63) + "\n",
	} {
		if _, err := ParseKeyFile([]byte(in)); !errors.Is(err, ErrKeyFile) {
			t.Errorf("ParseKeyFile(%q) = %v, want ErrKeyFile", in, err)
		}
	}
}
