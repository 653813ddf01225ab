package wire

import (
	"context"
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// BenchmarkPush_Toolbox is a full push of the toolbox fixture (10,000 labels, 64 proven
// transactions of 32 KiB) with bulk pages: to a local wallet file (the baseline, what
// `walletsync bench sync` copies), and to a walletsync server over loopback, behind the
// BRC-104 middleware, in each encoding (a fresh server and client each time, so the
// handshake and the negotiation count). Compare the lines of one run: machines are noisy.
//
//	go test ./remote/wire -run '^$' -bench BenchmarkPush_Toolbox -benchtime 3x
func BenchmarkPush_Toolbox(b *testing.B) {
	owner := fixtureUser(101)
	ctx := context.Background()
	src := newStore(b, wallet.ChainTest)
	if _, err := localstore.Seed(ctx, src, localstore.FixtureToolbox, localstore.SeedOptions{Seed: 101, IdentityKey: owner.id}); err != nil {
		b.Fatal(err)
	}
	opts := syncer.Options{Active: wallet.KeepSourceActive, Bulk: true}
	push := func(b *testing.B, dst func() wallet.Destination) {
		for b.Loop() {
			b.StopTimer()
			d := dst()
			b.StartTimer()
			if _, err := syncer.Run(ctx, src, d, owner.id, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("local", func(b *testing.B) {
		push(b, func() wallet.Destination { return newStore(b, wallet.ChainTest) })
	})
	for _, enc := range []Encoding{EncodingZstd, EncodingJSON} {
		b.Run("wire-"+string(enc), func(b *testing.B) {
			push(b, func() wallet.Destination {
				return provider(b, startServer(b, newStore(b, wallet.ChainTest), HandlerOptions{}), owner, ProviderOptions{Encoding: enc})
			})
		})
	}
}
