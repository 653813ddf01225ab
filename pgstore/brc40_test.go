package pgstore_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// backends are the stores a walletsync server runs on; the tests below hold for each.
var backends = []struct {
	name string
	open func(t testing.TB) brc40.ChunkStore
}{
	{"sqlite", func(t testing.TB) brc40.ChunkStore { return openSQLite(t) }},
	{"postgres", func(t testing.TB) brc40.ChunkStore { return openPG(t, cluster.NewDatabase(t)) }},
}

// source opens a seeded wallet of the fixture's user.
func source(t testing.TB, f localstore.Fixture) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), testkit.SeededWallet(t, f, 1), localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(t testing.TB, from, to brc40.ChunkStore, active wallet.ActivePolicy, maxItems int64) syncer.Result {
	t.Helper()
	res, err := syncer.RunChunks(t.Context(), from, to, localstore.FixtureIdentity(1), syncer.ChunkOptions{Active: active, MaxItems: maxItems, Settle: -1})
	if err != nil {
		t.Fatalf("sync: %v (%+v)", err, res)
	}
	return res
}

func readWallet(t testing.TB, s *localstore.Store) compare.Wallet {
	t.Helper()
	w, err := compare.Read(t.Context(), s, localstore.FixtureIdentity(1), compare.Options{Ignore: []string{"users.created_at", "output_baskets.created_at", "proven_tx_reqs.notified", "users.activeStorage"}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// chunkJSON is every chunk a consumer with a fresh state would get from s, 25 rows at a
// time, over two cycles (the second one's since is the first one's newest row), as JSON,
// without the creation times of the user and its default basket (each store makes its own)
// and the user's updated_at.
func chunkJSON(t testing.TB, s brc40.ChunkStore) []string {
	t.Helper()
	settings, err := s.MakeAvailable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}
	// The user row's updated_at is each push's own (syncer's settleActive), so it stays out
	// of the since the second cycle uses.
	noUser := func(wallet.Row) (bool, error) { return false, nil }
	noRow := func(*wallet.Table, []wallet.Row) error { return nil }
	var out []string
	for cycles := 0; cycles < 2 && len(out) < 1000; {
		chunk, err := s.GetSyncChunk(t.Context(), st.MakeRequestSyncChunkArgs(localstore.FixtureIdentity(1), "consumer", 0, 25))
		if err != nil {
			t.Fatal(err)
		}
		if chunk.User != nil {
			chunk.User[wallet.Users.Col("created_at")], chunk.User[wallet.Users.Col("updated_at")] = time.Time{}, time.Time{}
		}
		for _, r := range chunk.Rows[wallet.OutputBaskets.Name] {
			if r[wallet.OutputBaskets.Col("name")] == "default" {
				r[wallet.OutputBaskets.Col("created_at")] = time.Time{}
			}
		}
		b, err := chunk.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		res, err := brc40.ConsumeChunk(&st, chunk, noUser, noRow)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			cycles++
		}
	}
	return out
}

// The BRC-40 consumer and producer behave alike on SQLite and PostgreSQL: a push of the
// small fixture in chunks of 37 rows inserts and updates the same counts, a second push
// moves nothing, the stores then produce the very same chunks (rows, order, ids, offsets,
// since), and a pull from each restores the source.
func TestChunks_SameOnBothBackends(t *testing.T) {
	t.Parallel()
	src := source(t, localstore.FixtureSmall)
	var counters []syncer.Counters
	var chunks [][]string
	for _, b := range backends {
		dst := b.open(t)
		first := run(t, src, dst, wallet.KeepSourceActive, 37)
		if again := run(t, src, dst, wallet.KeepSourceActive, 37); again.Inserts != 0 || again.Updates != 0 {
			t.Fatalf("%s: an unchanged push moved rows: %+v", b.name, again.Counters)
		}
		counters = append(counters, first.Counters)
		want := readWallet(t, src) // the push made the source's user row newer (syncer's settleActive)
		chunks = append(chunks, chunkJSON(t, dst))

		restored, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), b.name+"-restored.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		run(t, dst, restored, wallet.KeepDestinationActive, 50)
		if again := run(t, dst, restored, wallet.KeepDestinationActive, 50); again.Inserts != 0 || again.Updates != 0 {
			t.Fatalf("%s: an unchanged pull moved rows: %+v", b.name, again.Counters)
		}
		if d := compare.Diff(want, readWallet(t, restored)); d != "" {
			t.Fatalf("%s: the pulled wallet differs from the source:\n%s", b.name, d)
		}
	}
	if counters[0].Inserts != counters[1].Inserts || counters[0].Updates != counters[1].Updates || counters[0].Rows != counters[1].Rows || counters[0].Inserts == 0 {
		t.Fatalf("the push counted differently: sqlite %+v, postgres %+v", counters[0], counters[1])
	}
	if len(chunks[0]) < 4 || !reflect.DeepEqual(chunks[0], chunks[1]) {
		for i := range min(len(chunks[0]), len(chunks[1])) {
			if chunks[0][i] != chunks[1][i] {
				t.Fatalf("chunk %d differs:\nsqlite:   %.2000s\npostgres: %.2000s", i, chunks[0][i], chunks[1][i])
			}
		}
		t.Fatalf("sqlite produced %d chunks, postgres %d", len(chunks[0]), len(chunks[1]))
	}
}

// Every value the toolbox stores comes back exactly: integers up to 2^53 (and negative
// ones), binary with every byte value, an empty blob, text outside ASCII, times to the
// millisecond.
func TestChunks_ValuesRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 2, 29, 23, 59, 59, 999_000_000, time.UTC)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	proof := wallet.Row{at, at.Add(time.Millisecond), int64(7), "aa" + string(bytes.Repeat([]byte("0"), 62)), int64(1<<53 - 1), int64(-1), all, []byte{}, "blockhash ✓", "root"}
	tx := wallet.Row{at, at, int64(9), int64(1), int64(7), "completed", "ref-ünïcode 🎉", true, int64(1<<53 - 1), int64(-(1<<53 - 1)), int64(0), "d\"e's\\c\n", "bb" + string(bytes.Repeat([]byte("1"), 62)), nil, all}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			id := localstore.FixtureIdentity(3)
			settings, err := s.MakeAvailable(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.FindOrInsertSyncState(t.Context(), id, "03producer", "producer")
			if err != nil {
				t.Fatal(err)
			}
			args := st.MakeRequestSyncChunkArgs(id, settings.StorageIdentityKey, 0, 0)
			chunk := brc40.SyncChunk{FromStorageIdentityKey: "03producer", ToStorageIdentityKey: settings.StorageIdentityKey, UserIdentityKey: id,
				Rows: map[wallet.TableName][]wallet.Row{wallet.TableProvenTxs: {clone(proof)}, wallet.TableTransactions: {clone(tx)}}}
			if _, err := s.ProcessSyncChunk(t.Context(), args, chunk); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetSyncChunk(t.Context(), brc40.SyncState{StorageIdentityKey: settings.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(id, "x", 0, 0))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				table wallet.TableName
				want  wallet.Row
			}{{wallet.TableProvenTxs, proof}, {wallet.TableTransactions, tx}} {
				rows := got.Rows[c.table]
				if len(rows) != 1 {
					t.Fatalf("%s: %d rows", c.table, len(rows))
				}
				tb, _ := wallet.LookupTable(c.table)
				for i, col := range tb.Columns {
					if col.Name == tb.ID || col.Name == "userId" || col.Name == "provenTxId" {
						continue
					}
					if !reflect.DeepEqual(rows[0][i], c.want[i]) {
						t.Errorf("%s.%s = %#v, stored %#v", c.table, col.Name, rows[0][i], c.want[i])
					}
				}
			}
		})
	}
}

func clone(r wallet.Row) wallet.Row { return append(wallet.Row(nil), r...) }

// Two server processes (two stores with their own pools over one database) consume chunks
// for the same identity and producer at once, both made from the same state: one applies,
// the other is refused with wallet.ErrCheckpointConflict having written nothing; it then
// reads the state again and resumes, and the wallet ends exact.
func TestProcessSyncChunk_RacingConsumers(t *testing.T) {
	t.Parallel()
	src := source(t, localstore.FixtureSmall)
	url := cluster.NewDatabase(t)
	a, b := openPG(t, url), openPG(t, url)
	id := localstore.FixtureIdentity(1)
	from, err := src.MakeAvailable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.FindOrInsertSyncState(t.Context(), id, from.StorageIdentityKey, from.StorageName)
	if err != nil {
		t.Fatal(err)
	}
	args := st.MakeRequestSyncChunkArgs(id, serverKey, 0, 40)
	chunks := make([]brc40.SyncChunk, 2)
	for i := range chunks {
		if chunks[i], err = src.GetSyncChunk(t.Context(), args); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []brc40.ChunkStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.ProcessSyncChunk(t.Context(), args, chunks[i])
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, wallet.ErrCheckpointConflict):
			t.Fatalf("the loser got %v, want wallet.ErrCheckpointConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d consumers applied the chunk: %v", won, errs)
	}
	after, err := b.FindOrInsertSyncState(t.Context(), id, from.StorageIdentityKey, from.StorageName)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.SyncMap.Entity(wallet.ProvenTxs).Count + after.SyncMap.Entity(wallet.OutputBaskets).Count + after.SyncMap.Entity(wallet.Transactions).Count; n == 0 || n > 40 {
		t.Fatalf("the state moved by %d rows, want one chunk's", n)
	}
	run(t, src, b, wallet.KeepSourceActive, 40) // the loser resumes from the state
	restored, err := localstore.Create(t.Context(), filepath.Join(t.TempDir(), "restored.sqlite"), localstore.CreateOptions{Chain: wallet.ChainTest}, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	run(t, a, restored, wallet.KeepDestinationActive, 0)
	if d := compare.Diff(readWallet(t, src), readWallet(t, restored)); d != "" {
		t.Fatalf("after the race the wallet differs:\n%s", d)
	}
}
