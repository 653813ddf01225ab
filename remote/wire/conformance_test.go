package wire

import (
	"testing"

	"walletsync/testkit/providertest"
	"walletsync/wallet"
)

// TestConformance runs the Provider suite against the HTTP provider over real loopback
// HTTP, behind the real BRC-104 middleware, in both frame encodings.
func TestConformance(t *testing.T) {
	owner := fixtureUser(21)
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		t.Run(string(enc), func(t *testing.T) {
			opts := ProviderOptions{Encoding: enc}
			providertest.Run(t, providertest.Harness{
				NewSource: func(t *testing.T) (wallet.Source, string) {
					s := newStore(t, wallet.ChainTest)
					seed(t, s, owner, 21)
					p := provider(t, startServer(t, s, HandlerOptions{}), owner, opts)
					return p, owner.id
				},
				NewDestination: func(t *testing.T, chain wallet.Chain) (wallet.Destination, wallet.Source) {
					p := provider(t, startServer(t, newStore(t, chain), HandlerOptions{}), owner, opts)
					if _, e := p.negotiate(t.Context()); e != nil || p.enc != enc {
						t.Fatalf("negotiated %q, %v; want %q", p.enc, e, enc)
					}
					return p, p
				},
			})
		})
	}
}
