package localstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"walletsync/internal/safefile"
	"walletsync/wallet"
)

// TestRecoverReplace_Outcomes sets up what a crash leaves at each point of a Replace and
// checks what the next Open does with it. (bundle/crash_test.go kills real processes at
// each step; these are the cases a kill cannot reach: a staged file that is not the one the
// marker names, a target that is neither, a marker that is not ours.)
func TestRecoverReplace_Outcomes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, target, newFile string)
		outcome string
		want    error // from RecoverReplace
		wantNew bool  // the target afterwards holds the new wallet
	}{
		{"nothing interrupted", func(t *testing.T, target, newFile string) {}, RecoveredNothing, nil, false},
		{"staged, no marker", func(t *testing.T, target, newFile string) {
			copyFile(t, newFile, stagedPath(target))
		}, RecoveredNothing, nil, false},
		{"marked, staged file whole", func(t *testing.T, target, newFile string) {
			copyFile(t, newFile, stagedPath(target))
			writeMarker(t, target, newFile)
		}, RecoveredFinished, nil, true},
		{"marked, staged file differs", func(t *testing.T, target, newFile string) {
			copyFile(t, newFile, stagedPath(target))
			writeMarker(t, target, target) // names another digest
		}, RecoveredRolledBack, nil, false},
		{"swapped, old kept", func(t *testing.T, target, newFile string) {
			writeMarker(t, target, newFile)
			if err := os.Link(target, oldPath(target)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(newFile, target); err != nil {
				t.Fatal(err)
			}
		}, RecoveredFinished, nil, true},
		{"marker but the target is neither", func(t *testing.T, target, newFile string) {
			writeMarker(t, target, newFile)
		}, RecoveredNothing, wallet.ErrCorrupt, false},
		{"marker not ours", func(t *testing.T, target, newFile string) {
			if err := os.WriteFile(markerPath(target), []byte(`{"format":9}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, RecoveredNothing, wallet.ErrCorrupt, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			oldStore := mustCreate(t, Options{})
			oldID := mustSeed(t, oldStore, FixtureSmall, 1)
			target := oldStore.Path()
			oldStore.Close()
			newStore := mustCreate(t, Options{})
			mustSeed(t, newStore, FixtureSmall, 2)
			newStore.Close() // folds its WAL: the copy is the whole wallet
			newFile := filepath.Join(filepath.Dir(target), "new.sqlite")
			copyFile(t, newStore.Path(), newFile)

			c.setup(t, target, newFile)
			got, err := RecoverReplace(ctx, target, 0)
			if !errors.Is(err, c.want) || got != c.outcome {
				t.Fatalf("RecoverReplace: %q, %v; want %q, %v", got, err, c.outcome, c.want)
			}
			if c.want != nil {
				if _, err := Open(ctx, target, Options{}); !errors.Is(err, c.want) {
					t.Fatalf("open with an unrecoverable marker: %v, want %v", err, c.want)
				}
				return
			}
			for _, p := range []string{markerPath(target), stagedPath(target), oldPath(target)} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s remains", filepath.Base(p))
				}
			}
			s, err := Open(ctx, target, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if isOld := info.Identities[0].IdentityKey == oldID; isOld == c.wantNew {
				t.Fatalf("after recovery the target is the old wallet: %v, want the new one: %v", isOld, c.wantNew)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := safefile.CopyNew(from, to); err != nil {
		t.Fatal(err)
	}
}

// writeMarker writes the recovery marker of a Replace of target that swaps in digestOf.
func writeMarker(t *testing.T, target, digestOf string) {
	t.Helper()
	sum, err := fileSHA256(digestOf)
	if err != nil {
		t.Fatal(err)
	}
	m := `{"format":1,"sha256":"` + sum + `","hadOld":true}`
	if err := os.WriteFile(markerPath(target), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
}
