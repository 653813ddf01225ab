package localstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"walletsync/brc40"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// brc40Ignore are the columns a BRC-40 consumer does not take from its producer: its own
// user row (created now, naming itself active), its own default basket's created_at (the
// other baskets' are compared by sameWallet), and notified, which the toolbox's merge resets
// whenever notify has ids.
var brc40Ignore = []string{"users.created_at", "users.activeStorage", "output_baskets.created_at", "proven_tx_reqs.notified"}

// sameWallet fails the test unless consumer holds the user's wallet as producer does, but for
// brc40Ignore.
func sameWallet(tb testing.TB, producer, consumer *Store, identity string) {
	tb.Helper()
	if d := compare.Diff(mustLogical(tb, producer, identity, brc40Ignore...), mustLogical(tb, consumer, identity, brc40Ignore...)); d != "" {
		tb.Fatalf("the consumer differs from the producer:\n%s", d)
	}
	stamps := func(s *Store) map[string]time.Time {
		m := map[string]time.Time{}
		for _, r := range scanTable(tb, s, wallet.OutputBaskets, identity) {
			if name := r[wallet.OutputBaskets.Col("name")].(string); name != "default" {
				m[name] = r[wallet.OutputBaskets.Col("created_at")].(time.Time)
			}
		}
		return m
	}
	if p, c := stamps(producer), stamps(consumer); !reflect.DeepEqual(p, c) {
		tb.Fatalf("basket created_at: producer %v, consumer %v", p, c)
	}
}

func isoTime(s string) time.Time {
	t, err := wallet.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustInsertRow(tb testing.TB, s *Store, t *wallet.Table, f fields) int64 {
	tb.Helper()
	var id int64
	err := s.writeTx(context.Background(), func(tx *sql.Tx) error {
		w := newRowWriter(tx)
		defer w.close()
		var err error
		id, err = w.insert(context.Background(), t, newRow(t, f), false)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func mustSIK(tb testing.TB, s *Store) string {
	tb.Helper()
	st, err := s.Settings(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return st.StorageIdentityKey
}

// labelStore is a producer with a user (updated 1971, like every toolbox user), its default
// basket (1971) and five labels, two of them sharing one updated_at.
func labelStore(tb testing.TB) (*Store, string, []string) {
	tb.Helper()
	s := mustCreate(tb, Options{})
	id := FixtureIdentity(40)
	userID, _, err := s.EnsureUser(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	names := []string{"l1", "l2", "l3", "l3bis", "l4"}
	stamps := []string{"2026-05-01T10:00:01.000Z", "2026-05-01T10:00:02.000Z", "2026-05-01T10:00:03.000Z", "2026-05-01T10:00:03.000Z", "2026-05-01T10:00:04.000Z"}
	for i, n := range names {
		mustInsertRow(tb, s, wallet.TxLabels, fields{"created_at": isoTime(stamps[i]), "updated_at": isoTime(stamps[i]), "userId": userID, "label": n, "isDeleted": false})
	}
	return s, id, names
}

// chunkShape is what a test expects of a chunk: whether the user came, how many arrays are
// present, and the rows of the two tables with rows, by name.
type chunkShape struct {
	user    bool
	arrays  int
	baskets []string
	labels  []string
}

func shapeOf(c brc40.SyncChunk) chunkShape {
	sh := chunkShape{user: c.User != nil, arrays: len(c.Rows)}
	for _, r := range c.Rows[wallet.TableOutputBaskets] {
		sh.baskets = append(sh.baskets, r[wallet.OutputBaskets.Col("name")].(string))
	}
	for _, r := range c.Rows[wallet.TableTxLabels] {
		sh.labels = append(sh.labels, r[wallet.TxLabels.Col("label")].(string))
	}
	return sh
}

func TestGetSyncChunk_Boundaries(t *testing.T) {
	s, id, _ := labelStore(t)
	sik := mustSIK(t, s)
	base := func() brc40.RequestSyncChunkArgs {
		st := brc40.SyncState{StorageIdentityKey: sik, SyncMap: brc40.NewSyncMap()}
		return st.MakeRequestSyncChunkArgs(id, "02consumer", 0, 0)
	}
	size := func(t *wallet.Table, r wallet.Row) int64 {
		n, err := brc40.RowJSONSize(t, r)
		if err != nil {
			panic(err)
		}
		return n
	}
	full, err := s.GetSyncChunk(t.Context(), base())
	if err != nil {
		t.Fatal(err)
	}
	basketSize := size(wallet.OutputBaskets, full.Rows[wallet.TableOutputBaskets][0])
	l1Size := size(wallet.TxLabels, full.Rows[wallet.TableTxLabels][0])
	userStamp := brc40.UpdatedAt(wallet.Users, full.User)
	ptr := func(t time.Time) *time.Time { return &t }

	for _, tc := range []struct {
		name string
		edit func(a *brc40.RequestSyncChunkArgs)
		want chunkShape
	}{
		{"everything without since", func(a *brc40.RequestSyncChunkArgs) {},
			chunkShape{true, 12, []string{"default"}, []string{"l1", "l2", "l3", "l3bis", "l4"}}},
		{"since is inclusive for rows", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(isoTime("2026-05-01T10:00:03.000Z")) },
			chunkShape{false, 12, nil, []string{"l3", "l3bis", "l4"}}},
		{"since equal to the user's updated_at leaves the user out", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(userStamp) },
			chunkShape{false, 12, []string{"default"}, []string{"l1", "l2", "l3", "l3bis", "l4"}}},
		{"the user comes when strictly newer", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(userStamp.Add(-time.Millisecond)) },
			chunkShape{true, 12, []string{"default"}, []string{"l1", "l2", "l3", "l3bis", "l4"}}},
		{"since after everything gives 12 empty arrays", func(a *brc40.RequestSyncChunkArgs) { a.Since = ptr(isoTime("2027-01-01T00:00:00Z")) },
			chunkShape{false, 12, nil, nil}},
		{"offsets skip matches", func(a *brc40.RequestSyncChunkArgs) { a.Offsets[3].Offset = 2 },
			chunkShape{true, 12, []string{"default"}, []string{"l3", "l3bis", "l4"}}},
		{"offsets count after since", func(a *brc40.RequestSyncChunkArgs) {
			a.Since, a.Offsets[3].Offset = ptr(isoTime("2026-05-01T10:00:03.000Z")), 1
		}, chunkShape{false, 12, nil, []string{"l3bis", "l4"}}},
		{"maxItems ends the chunk inside a type", func(a *brc40.RequestSyncChunkArgs) { a.MaxItems = 3 },
			chunkShape{true, 4, []string{"default"}, []string{"l1", "l2"}}},
		{"maxItems used up by a type's last row omits the rest", func(a *brc40.RequestSyncChunkArgs) { a.MaxItems = 6 },
			chunkShape{true, 4, []string{"default"}, []string{"l1", "l2", "l3", "l3bis", "l4"}}},
		{"the row crossing maxRoughSize is included", func(a *brc40.RequestSyncChunkArgs) { a.MaxRoughSize = basketSize + l1Size - 1 },
			chunkShape{true, 4, []string{"default"}, []string{"l1"}}},
		{"reaching maxRoughSize exactly is not crossing it", func(a *brc40.RequestSyncChunkArgs) { a.MaxRoughSize = basketSize + l1Size },
			chunkShape{true, 4, []string{"default"}, []string{"l1", "l2"}}},
		{"maxRoughSize 0 sends one row", func(a *brc40.RequestSyncChunkArgs) { a.MaxRoughSize = 0 },
			chunkShape{true, 2, []string{"default"}, nil}},
		{"fewer offsets limit the entities", func(a *brc40.RequestSyncChunkArgs) { a.Offsets = a.Offsets[:3] },
			chunkShape{true, 3, []string{"default"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base()
			tc.edit(&a)
			c, err := s.GetSyncChunk(t.Context(), a)
			if err != nil {
				t.Fatal(err)
			}
			if got := shapeOf(c); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			// Present arrays are always a prefix of Entities.
			for i, tb := range wallet.Entities {
				if _, ok := c.Rows[tb.Name]; ok != (i < tc.want.arrays) {
					t.Fatalf("%s present=%v with %d arrays", tb.Plural, ok, tc.want.arrays)
				}
			}
		})
	}
}

func TestGetSyncChunk_Refusals(t *testing.T) {
	s, id, _ := labelStore(t)
	sik := mustSIK(t, s)
	base := func() brc40.RequestSyncChunkArgs {
		st := brc40.SyncState{StorageIdentityKey: sik, SyncMap: brc40.NewSyncMap()}
		return st.MakeRequestSyncChunkArgs(id, "02consumer", 0, 0)
	}
	for _, tc := range []struct {
		name string
		edit func(a *brc40.RequestSyncChunkArgs)
		want error
		path string
	}{
		{"offset named out of order", func(a *brc40.RequestSyncChunkArgs) { a.Offsets[4].Name = "output" }, wallet.ErrBadSyncMessage, "offsets[4].name"},
		{"13 offsets", func(a *brc40.RequestSyncChunkArgs) { a.Offsets = append(a.Offsets, a.Offsets[0]) }, wallet.ErrBadSyncMessage, "offsets"},
		{"no items", func(a *brc40.RequestSyncChunkArgs) { a.MaxItems = 0 }, wallet.ErrBadSyncMessage, "maxItems"},
		{"unknown user", func(a *brc40.RequestSyncChunkArgs) { a.IdentityKey = FixtureIdentity(41) }, wallet.ErrNotFound, ""},
		{"another producer", func(a *brc40.RequestSyncChunkArgs) { a.FromStorageIdentityKey = "02other" }, wallet.ErrInvalidArgument, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base()
			tc.edit(&a)
			_, err := s.GetSyncChunk(t.Context(), a)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var me *wallet.SyncMessageError
			if tc.path != "" && (!errors.As(err, &me) || me.Path != tc.path) {
				t.Fatalf("got %v, want a *SyncMessageError at %s", err, tc.path)
			}
		})
	}
}

func TestGetSyncChunk_PagesInKeyOrder(t *testing.T) {
	s := mustCreate(t, Options{})
	id := mustSeed(t, s, FixtureSmall, 7)
	wantOut := scanTable(t, s, wallet.Outputs, id)
	if len(wantOut) <= 10 {
		t.Fatalf("the small fixture has %d outputs; the test needs more than one page of 10", len(wantOut))
	}
	st := brc40.SyncState{StorageIdentityKey: mustSIK(t, s), SyncMap: brc40.NewSyncMap()}
	// maxItems 12: pages of max(10, 12/25) = 10 outputs; the chunk needs two of them.
	for _, offset := range []int64{0, 1, 11} {
		a := st.MakeRequestSyncChunkArgs(id, "02consumer", 0, 12)
		for i := range 5 {
			a.Offsets[i].Offset = 1000 // past every row: the outputs get the whole budget
		}
		a.Offsets[5].Offset = offset
		c, err := s.GetSyncChunk(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Rows[wallet.TableOutputs]
		end := min(len(wantOut), int(offset)+12)
		if !reflect.DeepEqual(got, wantOut[offset:end]) {
			t.Fatalf("offset %d: %d outputs, want rows %d..%d in key order", offset, len(got), offset, end)
		}
	}
}

// pullBRC40 runs the toolbox's raw sync loop (syncToWriter) from producer to consumer, with
// every request and chunk through its JSON form, until a chunk completes a cycle.
func pullBRC40(tb testing.TB, producer, consumer *Store, identity string, maxRoughSize, maxItems int64) []brc40.ProcessSyncChunkResult {
	tb.Helper()
	return pullBRC40Between(tb, producer, consumer, identity, maxRoughSize, maxItems, nil)
}

// pullBRC40Between is pullBRC40 that calls between (when not nil) after each chunk that does
// not complete the cycle, with the number of chunks processed: writes made there race the
// cycle.
func pullBRC40Between(tb testing.TB, producer, consumer *Store, identity string, maxRoughSize, maxItems int64, between func(chunks int)) []brc40.ProcessSyncChunkResult {
	tb.Helper()
	ctx := context.Background()
	ps, err := producer.Settings(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	var out []brc40.ProcessSyncChunkResult
	for range 10_000 {
		st, err := consumer.FindOrInsertSyncState(ctx, identity, ps.StorageIdentityKey, ps.StorageName)
		if err != nil {
			tb.Fatal(err)
		}
		args := wireRoundTrip(tb, st.MakeRequestSyncChunkArgs(identity, mustSIK(tb, consumer), maxRoughSize, maxItems))
		chunk, err := producer.GetSyncChunk(ctx, args)
		if err != nil {
			tb.Fatal(err)
		}
		res, err := consumer.ProcessSyncChunk(ctx, args, wireRoundTrip(tb, chunk))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, res)
		if res.Done {
			return out
		}
		if between != nil {
			between(len(out))
		}
	}
	tb.Fatal("the BRC-40 loop did not complete")
	return nil
}

func wireRoundTrip[T any](tb testing.TB, v T) T {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		tb.Fatal(err)
	}
	return back
}

func mustLogical(tb testing.TB, s *Store, identity string, ignore ...string) compare.Wallet {
	tb.Helper()
	w, err := compare.Read(context.Background(), s, identity, compare.Options{Ignore: ignore})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func mustSyncState(tb testing.TB, s *Store, identity string, producer *Store) brc40.SyncState {
	tb.Helper()
	ps, err := producer.Settings(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	st, err := s.FindOrInsertSyncState(context.Background(), identity, ps.StorageIdentityKey, ps.StorageName)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

func TestProcessSyncChunk_CycleStateLikeTheToolbox(t *testing.T) {
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := mustSeed(t, p, FixtureSmall, 3)

	results := pullBRC40(t, p, c, id, 0, 7)
	if len(results) < 3 {
		t.Fatalf("%d chunks with 7 items each", len(results))
	}
	sameWallet(t, p, c, id)
	// When is the newest updated_at the producer holds for the user's entities, every count
	// is back at zero, and every entity's maxUpdated_at is its own newest row.
	st := mustSyncState(t, c, id, p)
	var newest time.Time
	for _, tb := range wallet.Entities {
		var mine time.Time
		for _, r := range scanTable(t, p, tb, id) {
			if u := brc40.UpdatedAt(tb, r); u.After(mine) {
				mine = u
			}
		}
		e := st.SyncMap.Entity(tb)
		if e.Count != 0 || e.MaxUpdatedAt == nil || !e.MaxUpdatedAt.Equal(mine) {
			t.Errorf("%s: count %d, maxUpdated_at %v, want 0 and %v", tb.Entity, e.Count, e.MaxUpdatedAt, mine)
		}
		if mine.After(newest) {
			newest = mine
		}
	}
	last := results[len(results)-1]
	if st.When == nil || !st.When.Equal(newest) || last.MaxUpdatedAt == nil || !last.MaxUpdatedAt.Equal(newest) {
		t.Fatalf("when %v, result maxUpdated_at %v, want %v", st.When, last.MaxUpdatedAt, newest)
	}
	var inserts int64
	for _, r := range results {
		inserts += r.Inserts
	}
	if inserts == 0 || last.Inserts != 0 || last.Updates != 0 {
		t.Fatalf("inserts %d over the cycle, last chunk %+v", inserts, last)
	}
	// Counts are the offsets of the next request within a cycle.
	st.SyncMap.Entity(wallet.TxLabels).Count = 2
	if a := st.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0); a.Offsets[3] != (brc40.SyncOffset{Name: "txLabel", Offset: 2}) || a.Since == nil || !a.Since.Equal(newest) {
		t.Fatalf("next request %+v", a)
	}

	// The next cycle re-sends the rows at the watermark (since is inclusive), merges nothing,
	// and completes in the following round trip.
	again := pullBRC40(t, p, c, id, 0, 7)
	if len(again) != 2 || again[0].Done || again[0].Inserts != 0 || again[0].Updates != 0 || again[1].Inserts != 0 {
		t.Fatalf("an unchanged cycle: %+v", again)
	}
}

// A chunk merged already (a duplicate the network delivered, a repeat after a lost answer)
// no longer answers the state, and is refused whole. The toolbox merges it again and counts
// its rows twice: the next chunk's offsets then skip as many rows, which the cycle's
// watermark never brings back (a row that referred to one of them then stops the sync).
func TestProcessSyncChunk_ReplayRefused(t *testing.T) {
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := mustSeed(t, p, FixtureSmall, 4)
	st := mustSyncState(t, c, id, p)
	args := st.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0)
	chunk, err := p.GetSyncChunk(t.Context(), args)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.ProcessSyncChunk(t.Context(), args, chunk)
	if err != nil {
		t.Fatal(err)
	}
	before := mustLogical(t, c, id)
	second, err := c.ProcessSyncChunk(t.Context(), args, chunk)
	if !errors.Is(err, wallet.ErrCheckpointConflict) {
		t.Fatalf("replay: %+v, %v; want a checkpoint conflict", second, err)
	}
	if first.Inserts == 0 {
		t.Fatalf("first %+v", first)
	}
	if d := compare.Diff(before, mustLogical(t, c, id)); d != "" {
		t.Fatalf("the replay changed rows:\n%s", d)
	}
	after := mustSyncState(t, c, id, p)
	if got, want := after.SyncMap.Entity(wallet.TxLabels).Count, int64(len(chunk.Rows[wallet.TableTxLabels])); got != want {
		t.Fatalf("txLabel count %d after the replay, want %d", got, want)
	}
	// The request the moved state makes is merged.
	next := after.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0)
	chunk, err = p.GetSyncChunk(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ProcessSyncChunk(t.Context(), next, chunk); err != nil {
		t.Fatalf("the next chunk: %v", err)
	}
}

func TestProcessSyncChunk_IDRemapConflict(t *testing.T) {
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := FixtureIdentity(42)
	for _, s := range []*Store{p, c} {
		if _, _, err := s.EnsureUser(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	st := mustSyncState(t, c, id, p)
	args := st.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0)
	// label is a row the producer calls txLabel 10.
	label := func(name string) brc40.SyncChunk {
		r := newRow(wallet.TxLabels, fields{"created_at": isoTime("2026-05-01T10:00:00Z"), "updated_at": isoTime("2026-05-01T10:00:00Z"),
			"txLabelId": 10, "userId": 99, "label": name, "isDeleted": false})
		return brc40.SyncChunk{FromStorageIdentityKey: args.FromStorageIdentityKey, ToStorageIdentityKey: args.ToStorageIdentityKey,
			UserIdentityKey: id, Rows: map[wallet.TableName][]wallet.Row{wallet.TableTxLabels: {r}}}
	}
	if _, err := c.ProcessSyncChunk(t.Context(), args, label("a")); err != nil {
		t.Fatal(err)
	}
	mustInsertRow(t, c, wallet.TxLabels, fields{"created_at": isoTime("2026-05-01T10:00:00Z"), "updated_at": isoTime("2026-05-01T10:00:00Z"),
		"userId": int64(1), "label": "b", "isDeleted": false})
	for _, tc := range []struct{ name, label string }{
		{"id 10 arrives for another existing row", "b"},
		{"id 10 arrives for a new row", "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels, before := scanTable(t, c, wallet.TxLabels, id), mustSyncState(t, c, id, p)
			next := before.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0) // the request that answers the state
			_, err := c.ProcessSyncChunk(t.Context(), next, label(tc.label))
			var conflict *wallet.IDMapConflictError
			if !errors.As(err, &conflict) || !errors.Is(err, wallet.ErrIDMapConflict) || conflict.Entity != "txLabel" || conflict.SourceID != 10 {
				t.Fatalf("got %v, want an id map conflict for txLabel 10", err)
			}
			// Nothing of the chunk stayed: no row, no state change.
			if got := scanTable(t, c, wallet.TxLabels, id); !reflect.DeepEqual(got, labels) {
				t.Fatalf("%d labels after a refused chunk, want %d", len(got), len(labels))
			}
			if after := mustSyncState(t, c, id, p); !reflect.DeepEqual(after, before) {
				t.Fatalf("the state moved:\n%+v\n%+v", after, before)
			}
		})
	}
}

func TestProcessSyncChunk_Refusals(t *testing.T) {
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := mustSeed(t, p, FixtureSmall, 5)
	ps, err := p.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.EnsureUser(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	stateless := brc40.SyncState{StorageIdentityKey: ps.StorageIdentityKey, SyncMap: brc40.NewSyncMap()}
	args := stateless.MakeRequestSyncChunkArgs(id, mustSIK(t, c), 0, 0)
	chunk, err := p.GetSyncChunk(t.Context(), args)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ProcessSyncChunk(t.Context(), args, chunk); !errors.Is(err, wallet.ErrNotFound) {
		t.Fatalf("without a sync state: %v", err)
	}
	mustSyncState(t, c, id, p)
	for _, tc := range []struct {
		name string
		edit func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk)
		want error
	}{
		{"chunk for another user", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) { c.UserIdentityKey = FixtureIdentity(9) }, wallet.ErrInvalidArgument},
		{"user row of another user", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) {
			c.User = slices.Clone(c.User)
			c.User[wallet.Users.Col("identityKey")] = FixtureIdentity(9)
		}, wallet.ErrInvalidArgument},
		{"chunk from another producer", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) { c.FromStorageIdentityKey = "02other" }, wallet.ErrInvalidArgument},
		{"request for another consumer", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) {
			a.ToStorageIdentityKey, c.ToStorageIdentityKey = "02other", "02other"
		}, wallet.ErrInvalidArgument},
		{"unknown user", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) {
			a.IdentityKey, c.UserIdentityKey, c.User = FixtureIdentity(9), FixtureIdentity(9), nil
		}, wallet.ErrNotFound},
		{"a row that is not a row", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) {
			c.Rows = map[wallet.TableName][]wallet.Row{wallet.TableTxLabels: {{int64(1)}}}
		}, wallet.ErrInvalidArgument},
		{"an array that is no entity", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) {
			c.Rows = map[wallet.TableName][]wallet.Row{wallet.TableSyncStates: {}}
		}, wallet.ErrInvalidArgument},
		{"a bad offset", func(a *brc40.RequestSyncChunkArgs, c *brc40.SyncChunk) { a.Offsets[0].Name = "user" }, wallet.ErrBadSyncMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ch := args, chunk
			a.Offsets = slices.Clone(args.Offsets)
			tc.edit(&a, &ch)
			before := mustLogical(t, c, id)
			if _, err := c.ProcessSyncChunk(t.Context(), a, ch); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if d := compare.Diff(before, mustLogical(t, c, id)); d != "" {
				t.Fatalf("a refused chunk changed rows:\n%s", d)
			}
		})
	}
	t.Run("two states for one producer", func(t *testing.T) {
		if _, err := c.FindOrInsertSyncState(t.Context(), id, ps.StorageIdentityKey, "another name"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ProcessSyncChunk(t.Context(), args, chunk); !errors.Is(err, wallet.ErrAmbiguousSyncState) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestFindOrInsertSyncState_LikeTheToolbox(t *testing.T) {
	c := mustCreate(t, Options{})
	id := FixtureIdentity(43)
	st, err := c.FindOrInsertSyncState(t.Context(), id, "02producer", "producer")
	if err != nil {
		t.Fatal(err)
	}
	// The user and its default basket came first, as fromStorage's findOrInsertUser does.
	if n := len(scanTable(t, c, wallet.OutputBaskets, id)); n != 1 {
		t.Fatalf("%d baskets for a new user", n)
	}
	var syncMap, status, refNum string
	var init int
	var when sql.NullString
	err = c.readDB.QueryRow(`SELECT syncMap, status, init, refNum, "when" FROM sync_states WHERE syncStateId = ?`, st.SyncStateID).Scan(&syncMap, &status, &init, &refNum, &when)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := json.Marshal(brc40.NewSyncMap())
	if err != nil {
		t.Fatal(err)
	}
	if syncMap != string(fresh) || status != "unknown" || init != 0 || len(refNum) != 16 || when.Valid || !st.CreatedAt.Equal(st.UpdatedAt) {
		t.Fatalf("new state: syncMap %s status %q init %d refNum %q when %v", syncMap, status, init, refNum, when)
	}
	again, err := c.FindOrInsertSyncState(t.Context(), id, "02producer", "producer")
	if err != nil || !reflect.DeepEqual(again, st) {
		t.Fatalf("second call: %+v, %v", again, err)
	}
	other, err := c.FindOrInsertSyncState(t.Context(), id, "02producer", "renamed")
	if err != nil || other.SyncStateID == st.SyncStateID || other.RefNum == st.RefNum {
		t.Fatalf("a second name: %+v, %v", other, err)
	}
	if _, err := c.FindOrInsertSyncState(t.Context(), id, "", "x"); !errors.Is(err, wallet.ErrInvalidArgument) {
		t.Fatalf("no producer key: %v", err)
	}
}

func TestProcessSyncChunk_NewerUserRow(t *testing.T) {
	p, c := mustCreate(t, Options{}), mustCreate(t, Options{})
	id := mustSeed(t, p, FixtureSmall, 6)
	newest := isoTime("2027-01-01T00:00:00Z") // later than every row of the fixture
	mustExec(t, rawDB(t, p.Path()), "UPDATE users SET updated_at = ? WHERE identityKey = ?", wallet.FormatTime(newest), id)

	results := pullBRC40(t, p, c, id, 0, 0)
	last := results[len(results)-1]
	st := mustSyncState(t, c, id, p)
	// The user counts in maxUpdated_at (and so in when) only in the chunk that merged it:
	// the first; the completing chunk carries it again, no longer newer.
	if results[0].Updates != 1 || results[0].MaxUpdatedAt == nil || !results[0].MaxUpdatedAt.Equal(newest) {
		t.Fatalf("first chunk %+v", results[0])
	}
	if st.When == nil || st.When.Equal(newest) || !last.MaxUpdatedAt.Equal(*st.When) {
		t.Fatalf("when %v after the cycle, last result %+v", st.When, last)
	}
	// The zero ActivePolicy is BRC-40's: the newer row's activeStorage wins.
	users := scanTable(t, c, wallet.Users, id)
	if got := users[0][wallet.Users.Col("activeStorage")]; got != mustSIK(t, p) {
		t.Fatalf("consumer's activeStorage %v, want the producer's %s", got, mustSIK(t, p))
	}
}
