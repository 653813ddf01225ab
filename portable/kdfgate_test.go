package portable

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"walletsync/localstore"
	"walletsync/portable/brc39"
	"walletsync/testkit/backuptest"
	"walletsync/wallet"
)

// countingGate is a KDFGate that counts admissions and releases, or refuses with err.
type countingGate struct {
	admitted, released int
	err                error
}

func (g *countingGate) gate(ctx context.Context) (func(), error) {
	if g.err != nil {
		return nil, g.err
	}
	g.admitted++
	return func() { g.released++ }, nil
}

// TestKDFGate_AdmitsEveryDerivation: Verify and ExportBRC39 derive their key only once the
// gate admits them, and let the next one in after; a gate that gives up (its task was
// cancelled while it waited) fails the call before Argon2 runs, writing nothing.
func TestKDFGate_AdmitsEveryDerivation(t *testing.T) {
	src, id := fixtures.Store(t, localstore.FixtureSmall, backuptest.SmallSeed)
	file, _ := backupFile(t, src, id)
	g := &countingGate{}
	opts := importOptions(t)
	opts.KDFGate = g.gate
	if _, err := Verify(context.Background(), file, importPassword, opts, nil); err != nil {
		t.Fatal(err)
	}
	if g.admitted != 1 || g.released != 1 {
		t.Fatalf("verify: %d admitted, %d released; want 1 and 1", g.admitted, g.released)
	}
	stop := &countingGate{err: context.Canceled}
	opts.KDFGate = stop.gate
	if _, err := Verify(context.Background(), file, importPassword, opts, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("verify with a gate that gave up: %v", err)
	}
	dir := t.TempDir()
	_, err := backuptest.WithView(t, src, false, func(v wallet.View, settings wallet.Settings) (ExportResult, error) {
		return ExportBRC39(context.Background(), v, settings, id, "pw", brc39.DefaultKDFParams, filepath.Join(dir, "w.brc39"), ExportOptions{KDFGate: stop.gate})
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("export with a gate that gave up: %v", err)
	}
	requireOnlyFiles(t, dir)
}
