package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"walletsync/localstore"
	"walletsync/wallet"
)

// SeededWallet returns the path of a new test-chain wallet file (source.sqlite in a new
// tb.TempDir()) holding fixture f for the user of seed, as localstore.Create and
// localstore.Seed with SeedOptions{Seed: seed} would make it, but copied from a template
// seeded once per test process: seeding the small fixture writes a few hundred rows through
// the store's journal triggers, the toolbox fixture 10,000 labels and 4 MiB of
// transactions, and a package's tests ask for the same few fixtures again and again.
//
// Each call returns a file of its own: what a test writes to it no other test sees. But
// every copy of one template is the same store: the same storage identity key and storage
// name, the same user identity key (FixtureIdentity(seed)) and the same row ids. A test
// that needs two stores with distinct storage identity keys (a sync between two seeded
// wallets, a server that tells stores apart by key) seeds at least one of them itself, or
// uses another seed. FixtureLarge (1 GB) is refused: a template of it would live in memory.
func SeededWallet(tb testing.TB, f localstore.Fixture, seed uint64) string {
	tb.Helper()
	if f == localstore.FixtureLarge {
		tb.Fatalf("testkit: no template of the %s fixture: seed it in the test", f)
	}
	t := templates.get(templateKey{fixture: f, seed: seed})
	t.once.Do(func() { t.files, t.err = seedTemplate(f, seed) })
	if t.err != nil {
		tb.Fatalf("testkit: seed the %s template of seed %d: %v", f, seed, t.err)
	}
	path := filepath.Join(tb.TempDir(), "source.sqlite")
	for suffix, b := range t.files {
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			tb.Fatalf("testkit: copy the %s template: %v", f, err)
		}
	}
	return path
}

// templates is the one piece of state a test process's tests share: the seeded wallets
// they copy. It is a package variable because what it saves is across tests (and across
// the packages' own helpers), and only tests import testkit; it holds nothing a test can
// change, as every caller gets a copy.
var templates = &templateCache{byKey: map[templateKey]*template{}}

type templateKey struct {
	fixture localstore.Fixture
	seed    uint64
}

// template is a seeded wallet's files, by suffix of the wallet's path ("" for the main
// file, "-wal" for a write-ahead log that was not checkpointed); once seeds it.
type template struct {
	once  sync.Once
	files map[string][]byte
	err   error
}

type templateCache struct {
	mu    sync.Mutex
	byKey map[templateKey]*template
}

// get returns the template of k, not yet seeded when it is new. Seeding happens outside mu
// (under the template's once), so that two fixtures seed at the same time.
func (c *templateCache) get(k templateKey) *template {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.byKey[k]
	if !ok {
		t = &template{}
		c.byKey[k] = t
	}
	return t
}

// seedTemplate seeds a wallet in a temp folder of its own, closes it and returns its files,
// then removes the folder. It uses no test's context: the template outlives the test that
// happens to ask for it first.
func seedTemplate(f localstore.Fixture, seed uint64) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "walletsync-template-")
	if err != nil {
		return nil, fmt.Errorf("make template folder: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.sqlite")
	ctx := context.Background()
	s, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		return nil, err
	}
	_, err = localstore.Seed(ctx, s, f, localstore.SeedOptions{Seed: seed})
	if err = errors.Join(err, s.Close()); err != nil {
		return nil, err
	}
	// A closed store has checkpointed its WAL; a -wal left anyway is copied with the file,
	// as SQLite would replay it. The -shm index is rebuilt by the next open; the lock file
	// belongs to no copy.
	files := map[string][]byte{}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if suffix != "" && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read template: %w", err)
		}
		files[suffix] = b
	}
	return files, nil
}
