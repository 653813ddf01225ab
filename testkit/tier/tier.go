// Package tier sorts walletsync's tests into the two tiers of scripts/test.sh. The quick
// tier (`go test -short`) needs nothing but Go and runs in well under two minutes; the full
// tier, which CI runs, runs every test. The harnesses of what the quick tier cannot count
// on (Node with the toolbox peer, a PostgreSQL server, Chromium, tmpfs mounts, children
// killed at durable boundaries) call Full at their entry points, so that one line covers
// every test that uses them and no test needs its own skip.
//
// It imports nothing of walletsync, so that the tests of any package may use it.
package tier

import "testing"

// Marker starts every skip message of Full, so that scripts/test.sh quick can list what it
// left out.
const Marker = "full tier only:"

// Full skips tb under -short, saying that it needs what (and so runs only in the full tier);
// otherwise it returns and tb runs. It never skips in the full tier: a test whose
// dependency is missing there must fail, not pass silently.
func Full(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s needs %s (scripts/test.sh runs it)", Marker, what)
	}
}
