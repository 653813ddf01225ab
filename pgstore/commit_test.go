package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/providertest"
	"walletsync/wallet"
)

// readBack is a wallet.Source over a PostgreSQL store for the conformance suite, which reads
// what landed at a destination through a Source: each view is a fresh SQLite copy of every
// user the store holds, pulled through the store's own BRC-40 producer (GetSyncChunk), so a
// wallet compares exact only if both the page commits and that producer kept every row.
type readBack struct {
	t   *testing.T
	s   *pgstore.Store
	url string
}

func (r readBack) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	st, err := r.s.Settings(ctx)
	return st, wallet.Capabilities{Snapshots: true}, err
}

func (r readBack) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	st, err := r.s.Settings(ctx)
	if err != nil {
		return nil, err
	}
	c, err := localstore.Create(ctx, filepath.Join(r.t.TempDir(), "readback.sqlite"), localstore.CreateOptions{Chain: st.Chain}, localstore.Options{})
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(func() { c.Close() })
	for _, id := range identities(r.t, r.url) {
		if _, err := syncer.RunChunks(ctx, r.s, c, id, syncer.ChunkOptions{Active: wallet.KeepDestinationActive, Settle: -1}); err != nil {
			return nil, err
		}
	}
	return c.OpenView(ctx, lifetime)
}

// identities lists the users of the database at url.
func identities(t testing.TB, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(t.Context(), `SELECT "identityKey" FROM users ORDER BY "userId"`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// openOn opens a store on chain over a database of its own.
func openOn(t *testing.T, chain wallet.Chain) (*pgstore.Store, string) {
	t.Helper()
	url := cluster.NewDatabase(t)
	o := newOptions()
	o.Chain = chain
	s, err := pgstore.Open(t.Context(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, url
}

// The Provider conformance suite, PostgreSQL as the destination (the source is a seeded
// SQLite wallet).
func TestConformance_Destination(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.Harness{
		NewSource: func(t *testing.T) (wallet.Source, string) {
			return source(t, localstore.FixtureSmall), localstore.FixtureIdentity(1)
		},
		NewDestination: func(t *testing.T, chain wallet.Chain) (wallet.Destination, wallet.Source) {
			s, url := openOn(t, chain)
			return s, readBack{t: t, s: s, url: url}
		},
	})
}

// pageBatch reads the first page of table (up to rows rows) from a view of src and makes the
// batch that commits it at seq.
func pageBatch(t *testing.T, src *localstore.Store, table wallet.TableName, seq int64, rows int) wallet.Batch {
	t.Helper()
	settings, err := src.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	v, err := src.OpenView(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	id := localstore.FixtureIdentity(1)
	p, err := v.ReadPage(t.Context(), wallet.PageRequest{Table: table, IdentityKey: id, Limits: wallet.Limits{Rows: rows}})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := wallet.LookupTable(table)
	return wallet.Batch{Chain: settings.Chain, Expect: seq - 1, Active: wallet.KeepSourceActive, Page: p,
		Checkpoint: wallet.Checkpoint{Session: wallet.SessionKey{SourceStorage: settings.StorageIdentityKey, IdentityKey: id},
			Seq: seq, Mode: wallet.ModeFull, Table: slices.Index(wallet.SyncOrder, tb), Cursor: p.Next, View: v.ID()}}
}

// Two server processes (two stores, two pools, one database) commit the same batch of one
// session at once, many times over: exactly one applies it, the other is acknowledged as
// the duplicate or refused with wallet.ErrCheckpointConflict, and the rows are there once.
// Two different batches expecting the same sequence: one applies, the other is refused.
func TestCommit_RacingStores(t *testing.T) {
	t.Parallel()
	src := source(t, localstore.FixtureSmall)
	url := cluster.NewDatabase(t)
	stores := []*pgstore.Store{openPG(t, url), openPG(t, url)}
	users := pageBatch(t, src, wallet.TableUsers, 1, 1)
	if _, err := stores[0].Commit(t.Context(), users); err != nil {
		t.Fatal(err)
	}
	labels := pageBatch(t, src, wallet.TableTxLabels, 2, 40)
	n := int64(len(labels.Page.Rows))
	if n < 2 {
		t.Fatalf("%d labels", n)
	}
	race := func(batches [2]wallet.Batch) (acks [2]wallet.Ack, errs [2]error) {
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				acks[i], errs[i] = stores[i].Commit(t.Context(), batches[i])
			}()
		}
		wg.Wait()
		return acks, errs
	}
	const rounds = 8
	b := labels
	for round := range rounds {
		b.Expect, b.Checkpoint.Seq = int64(1+round), int64(2+round)
		acks, errs := race([2]wallet.Batch{b, b})
		applied := 0
		for i := range 2 {
			switch {
			case errs[i] == nil && !acks[i].Duplicate:
				applied++
			case errs[i] == nil && acks[i].Duplicate:
				if acks[i].Inserts != 0 || acks[i].Updates != 0 || acks[i].Match(b) != nil {
					t.Fatalf("round %d: duplicate ack %+v", round, acks[i])
				}
			case !errors.Is(errs[i], wallet.ErrCheckpointConflict):
				t.Fatalf("round %d: the loser got %v", round, errs[i])
			}
		}
		if applied != 1 {
			t.Fatalf("round %d: %d stores applied the batch (%+v, %v)", round, applied, acks, errs)
		}
		if round == 0 && acks[0].Inserts+acks[1].Inserts != n {
			t.Fatalf("the first round inserted %d labels", acks[0].Inserts+acks[1].Inserts)
		}
	}
	if got := count(t, url, "SELECT count(*) FROM tx_labels"); int64(got) != n {
		t.Fatalf("%d labels stored, want %d", got, n)
	}
	// Two different batches expecting one sequence.
	one, other := b, b
	one.Expect, one.Checkpoint.Seq, one.Checkpoint.Cursor = rounds+1, rounds+2, "one"
	other.Expect, other.Checkpoint.Seq, other.Checkpoint.Cursor = rounds+1, rounds+2, "other"
	acks, errs := race([2]wallet.Batch{one, other})
	won := -1
	for i := range 2 {
		switch {
		case errs[i] == nil && !acks[i].Duplicate:
			won = i
		case !errors.Is(errs[i], wallet.ErrCheckpointConflict):
			t.Fatalf("different batches: %v, %+v", errs[i], acks[i])
		}
	}
	if won < 0 || errs[1-won] == nil {
		t.Fatalf("different batches: %+v, %v", acks, errs)
	}
	cp, err := stores[1-won].Checkpoint(t.Context(), one.Checkpoint.Session)
	if err != nil || string(cp.Cursor) != []string{"one", "other"}[won] || cp.Seq != rounds+2 {
		t.Fatalf("durable checkpoint %+v, %v; want the winner's", cp, err)
	}
}

// dropAcks is a destination that dies after its n-th commit: that commit is durable, its
// acknowledgement is lost, and every later call fails (a server process killed between its
// commit and its answer).
type dropAcks struct {
	wallet.Destination
	n, commits int
}

var errAckLost = errors.New("server process gone")

func (d *dropAcks) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	if d.commits >= d.n {
		return wallet.Ack{}, errAckLost
	}
	ack, err := d.Destination.Commit(ctx, b)
	if d.commits++; err == nil && d.commits == d.n {
		return wallet.Ack{}, errAckLost
	}
	return ack, err
}

func (d *dropAcks) Checkpoint(ctx context.Context, k wallet.SessionKey) (wallet.Checkpoint, error) {
	if d.commits >= d.n {
		return wallet.Checkpoint{}, errAckLost
	}
	return d.Destination.Checkpoint(ctx, k)
}

// A session whose server process dies after a commit, before its acknowledgement, resumes
// at another store opened on the same database (a new pool: nothing of the first survives
// but the database): the durable checkpoint holds the unacknowledged page, the id maps map
// every row the first process inserted (later pages point at them), and the wallet ends
// exact. Sending the unacknowledged batch again is a duplicate that applies nothing.
func TestCommit_ResumesAfterReopen(t *testing.T) {
	t.Parallel()
	src := source(t, localstore.FixtureSmall)
	url := cluster.NewDatabase(t)
	first := openPG(t, url)
	var last wallet.Batch
	lossy := &dropAcks{Destination: recordLast{first, &last}, n: 12}
	opts := syncer.Options{MaxRows: 2, Active: wallet.KeepSourceActive}
	if _, err := syncer.Run(t.Context(), src, lossy, localstore.FixtureIdentity(1), opts); !errors.Is(err, errAckLost) {
		t.Fatalf("first run: %v, want the lost acknowledgement", err)
	}
	first.Close()

	second := openPG(t, url)
	cp, err := second.Checkpoint(t.Context(), last.Checkpoint.Session)
	if err != nil || cp.Seq != 12 || !cp.SamePosition(last.Checkpoint) {
		t.Fatalf("durable checkpoint %+v, %v; want the unacknowledged batch's %+v", cp, err, last.Checkpoint)
	}
	ack, err := second.Commit(t.Context(), last)
	if err != nil || !ack.Duplicate || ack.Inserts != 0 || ack.Updates != 0 || ack.Match(last) != nil {
		t.Fatalf("the unacknowledged batch again: %+v, %v; want a duplicate", ack, err)
	}
	res, err := syncer.Run(t.Context(), src, second, localstore.FixtureIdentity(1), opts)
	if err != nil || res.Resumed != syncer.ResumeCheckpoint || !res.Checkpoint.Done {
		t.Fatalf("resumed run: %+v, %v", res, err)
	}
	compare.SameWallet(t, src, readBack{t: t, s: second, url: url}, localstore.FixtureIdentity(1))
}

// recordLast remembers the last batch it commits.
type recordLast struct {
	wallet.Destination
	last *wallet.Batch
}

func (r recordLast) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	*r.last = b
	return r.Destination.Commit(ctx, b)
}

// Values reach PostgreSQL exactly through page commits: ±(2^53-1), every byte value in
// bytea, an empty bytea, text outside ASCII, millisecond times; a later page's foreign key
// finds the earlier page's row through the id map.
func TestCommit_ValuesRoundTrip(t *testing.T) {
	t.Parallel()
	s := openPG(t, cluster.NewDatabase(t))
	at := time.Date(2024, 2, 29, 23, 59, 59, 999_000_000, time.UTC)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	proof := wallet.Row{at, at.Add(time.Millisecond), int64(7), "aa" + string(bytes.Repeat([]byte("0"), 62)), int64(1<<53 - 1), int64(-(1<<53 - 1)), all, []byte{}, "blockhash ✓", "root"}
	tx := wallet.Row{at, at, int64(9), int64(1), int64(7), "completed", "ref-ünïcode 🎉", true, int64(1<<53 - 1), int64(-(1<<53 - 1)), int64(0), "d\"e's\\c\n", "bb" + string(bytes.Repeat([]byte("1"), 62)), nil, all}
	id := localstore.FixtureIdentity(3)
	key := wallet.SessionKey{SourceStorage: "03producer", IdentityKey: id}
	for seq, p := range []struct {
		table wallet.TableName
		row   wallet.Row
	}{{wallet.TableProvenTxs, proof}, {wallet.TableTransactions, tx}} {
		tb, _ := wallet.LookupTable(p.table)
		b := wallet.Batch{Chain: wallet.ChainTest, Expect: int64(seq), Page: wallet.Page{Table: p.table, Rows: []wallet.Row{clone(p.row)}},
			Checkpoint: wallet.Checkpoint{Session: key, Seq: int64(seq + 1), Mode: wallet.ModeFull, Table: slices.Index(wallet.SyncOrder, tb), Cursor: "c", View: "v"}}
		if ack, err := s.Commit(t.Context(), b); err != nil || ack.Inserts != 1 {
			t.Fatalf("commit %s: %+v, %v", p.table, ack, err)
		}
	}
	got, err := s.GetSyncChunk(t.Context(), brc40.SyncState{StorageIdentityKey: serverKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(id, "x", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	proofs, txs := got.Rows[wallet.TableProvenTxs], got.Rows[wallet.TableTransactions]
	if len(proofs) != 1 || len(txs) != 1 {
		t.Fatalf("%d proofs, %d transactions", len(proofs), len(txs))
	}
	if txs[0][wallet.Transactions.Col("provenTxId")] != proofs[0][wallet.ProvenTxs.Col("provenTxId")] {
		t.Fatalf("the transaction's provenTxId %v is not the proof's %v", txs[0][wallet.Transactions.Col("provenTxId")], proofs[0][wallet.ProvenTxs.Col("provenTxId")])
	}
	for _, c := range []struct {
		tb        *wallet.Table
		got, want wallet.Row
	}{{wallet.ProvenTxs, proofs[0], proof}, {wallet.Transactions, txs[0], tx}} {
		for i, col := range c.tb.Columns {
			if col.Name == c.tb.ID || col.Name == "userId" || col.Name == "provenTxId" {
				continue
			}
			if !reflect.DeepEqual(c.got[i], c.want[i]) {
				t.Errorf("%s.%s = %#v, committed %#v", c.tb.Name, col.Name, c.got[i], c.want[i])
			}
		}
	}
}

// Text PostgreSQL cannot hold (a NUL byte, invalid UTF-8), which SQLite's text holds, is
// refused with a *wallet.UnstorableError naming the table and column, on both ways in,
// and nothing is written: no checkpoint, no user, no row, the sync state unmoved.
func TestUnstorableText_Refused(t *testing.T) {
	t.Parallel()
	src := source(t, localstore.FixtureSmall)
	for _, tc := range []struct {
		name, value string
	}{{"nul", "label\x00after"}, {"invalid utf-8", "label\xff"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := cluster.NewDatabase(t)
			s := openPG(t, url)
			b := pageBatch(t, src, wallet.TableTxLabels, 1, 5)
			b.Page.Rows[3][wallet.TxLabels.Col("label")] = tc.value
			check := func(err error) {
				t.Helper()
				var ue *wallet.UnstorableError
				if !errors.As(err, &ue) || !errors.Is(err, wallet.ErrInvalidArgument) || ue.Table != wallet.TableTxLabels || ue.Column != "label" {
					t.Fatalf("err = %v, want a *wallet.UnstorableError for tx_labels.label", err)
				}
			}
			_, err := s.Commit(t.Context(), b)
			check(err)
			var ue *wallet.UnstorableError
			if _, err := s.Begin(t.Context(), wallet.SessionKey{SourceStorage: tc.value, IdentityKey: "03"}); !errors.As(err, &ue) || ue.Column != "source_storage" {
				t.Fatalf("begin a session PostgreSQL cannot name: %v", err)
			}
			if cp, err := s.Checkpoint(t.Context(), b.Checkpoint.Session); err != nil || cp.Seq != 0 {
				t.Fatalf("checkpoint after the refusal: %+v, %v", cp, err)
			}
			if n := count(t, url, "SELECT count(*) FROM users"); n != 0 {
				t.Fatalf("the refused commit created %d users", n)
			}

			st, err := s.FindOrInsertSyncState(t.Context(), b.Checkpoint.Session.IdentityKey, "03producer", "producer")
			if err != nil {
				t.Fatal(err)
			}
			args := st.MakeRequestSyncChunkArgs(b.Checkpoint.Session.IdentityKey, serverKey, 0, 0)
			chunk := brc40.SyncChunk{FromStorageIdentityKey: "03producer", ToStorageIdentityKey: serverKey, UserIdentityKey: b.Checkpoint.Session.IdentityKey,
				Rows: map[wallet.TableName][]wallet.Row{wallet.TableTxLabels: b.Page.Rows}}
			_, err = s.ProcessSyncChunk(t.Context(), args, chunk)
			check(err)
			if n := count(t, url, "SELECT count(*) FROM tx_labels"); n != 0 {
				t.Fatalf("the refused chunk wrote %d labels", n)
			}
			after, err := s.FindOrInsertSyncState(t.Context(), b.Checkpoint.Session.IdentityKey, "03producer", "producer")
			if err != nil || !reflect.DeepEqual(after.SyncMap, st.SyncMap) || !after.UpdatedAt.Equal(st.UpdatedAt) {
				t.Fatalf("the refused chunk moved the sync state: %+v, %v", after, err)
			}
		})
	}
}

// Page commits count and store alike on SQLite and PostgreSQL, also where a page repeats a
// natural key (the second row finds the first and merges into it) and where a later page
// updates what an earlier one inserted (the newer row wins).
func TestCommit_SameOnBothBackends(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	t2, t3 := t1.Add(time.Second), t1.Add(time.Hour)
	label := func(updated time.Time, id int64, name string, deleted bool) wallet.Row {
		return wallet.Row{t1, updated, id, int64(99), name, deleted}
	}
	pages := [][]wallet.Row{
		{label(t1, 1, "a", false), label(t1, 2, "dup", false), label(t2, 3, "dup", true), label(t1, 4, "b", false)},
		{label(t3, 1, "a", true), label(t1, 4, "b", false), label(t1, 5, "c", false)},
	}
	id := localstore.FixtureIdentity(4)
	key := wallet.SessionKey{SourceStorage: "03producer", IdentityKey: id}
	pos := slices.Index(wallet.SyncOrder, wallet.TxLabels)
	var acks [][]wallet.Ack
	var stored [][]wallet.Row
	for _, be := range backends {
		dst := be.open(t)
		var got []wallet.Ack
		for i, rows := range pages {
			page := make([]wallet.Row, len(rows))
			for k, r := range rows {
				page[k] = clone(r)
			}
			ack, err := dst.(wallet.Destination).Commit(t.Context(), wallet.Batch{Chain: wallet.ChainTest, Expect: int64(i), Active: wallet.KeepSourceActive,
				Page:       wallet.Page{Table: wallet.TableTxLabels, Rows: page},
				Checkpoint: wallet.Checkpoint{Session: key, Seq: int64(i + 1), Mode: wallet.ModeFull, Table: pos, Cursor: "c", View: "v"}})
			if err != nil {
				t.Fatalf("%s: page %d: %v", be.name, i, err)
			}
			ack.Checkpoint = wallet.Checkpoint{}
			got = append(got, ack)
		}
		acks = append(acks, got)
		chunk, err := dst.GetSyncChunk(t.Context(), brc40.SyncState{StorageIdentityKey: serverKey, SyncMap: brc40.NewSyncMap()}.MakeRequestSyncChunkArgs(id, "x", 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		var labels []wallet.Row
		for _, r := range chunk.Rows[wallet.TableTxLabels] {
			labels = append(labels, wallet.Row{r[wallet.TxLabels.Col("label")], r[wallet.TxLabels.Col("isDeleted")], r[wallet.TxLabels.Col("updated_at")]})
		}
		stored = append(stored, labels)
	}
	// "a", "dup" and "b" new, the second "dup" newer; then "a" newer, "c" new.
	want := []wallet.Ack{{Inserts: 3, Updates: 1}, {Inserts: 1, Updates: 1}}
	if !reflect.DeepEqual(acks[0], want) || !reflect.DeepEqual(acks[1], want) {
		t.Fatalf("acknowledged sqlite %+v, postgres %+v; want %+v", acks[0], acks[1], want)
	}
	if !reflect.DeepEqual(stored[0], stored[1]) || len(stored[0]) != 4 {
		t.Fatalf("stored differently:\nsqlite   %v\npostgres %v", stored[0], stored[1])
	}
}
