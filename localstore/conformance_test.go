package localstore

import (
	"testing"

	"walletsync/testkit/providertest"
	"walletsync/wallet"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		NewSource: func(t *testing.T) (wallet.Source, string) {
			s := mustCreate(t, Options{})
			return s, mustSeed(t, s, FixtureSmall, 21)
		},
		NewDestination: func(t *testing.T, chain wallet.Chain) (wallet.Destination, wallet.Source) {
			s := mustCreateOn(t, chain)
			return s, s
		},
	})
}
