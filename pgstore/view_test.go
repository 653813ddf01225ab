package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/syncer"
	"walletsync/testkit"
	"walletsync/testkit/compare"
	"walletsync/testkit/providertest"
	"walletsync/wallet"
)

// seededSQLite opens a copy of the test process's template of the fixture for seed's user
// (testkit.SeededWallet); the tests push each seed at most once into one database, so
// copies sharing a storage identity never meet.
func seededSQLite(t testing.TB, f localstore.Fixture, seed uint64) *localstore.Store {
	t.Helper()
	s, err := localstore.Open(t.Context(), testkit.SeededWallet(t, f, seed), localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pushChunks moves seed's wallet into dst through the BRC-40 consumer.
func pushChunks(t testing.TB, src *localstore.Store, dst *pgstore.Store, seed uint64) {
	t.Helper()
	if _, err := syncer.RunChunks(t.Context(), src, dst, localstore.FixtureIdentity(seed), syncer.ChunkOptions{Active: wallet.KeepSourceActive, MaxItems: 50, Settle: -1}); err != nil {
		t.Fatal(err)
	}
}

// seededPG opens a store on a database of its own holding the wallets of seeds (the small
// fixture, pushed through the BRC-40 consumer), and returns the database's URL and the
// first seed's identity.
func seededPG(t testing.TB, seeds ...uint64) (url string, s *pgstore.Store, identity string) {
	t.Helper()
	url = cluster.NewDatabase(t)
	s = openPG(t, url)
	for _, seed := range seeds {
		pushChunks(t, seededSQLite(t, localstore.FixtureSmall, seed), s, seed)
	}
	return url, s, localstore.FixtureIdentity(seeds[0])
}

// copyRows writes every row of src's wallet for identity into the database at url with
// their ids as they are (plain INSERTs), then moves the id sequences past them, so that
// both stores hold the very same rows.
func copyRows(t testing.TB, src *localstore.Store, url, identity string) {
	t.Helper()
	v, err := src.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, tb := range wallet.AllTables {
		rows := readAll(t, v, tb, identity, wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes})
		src := make([][]any, len(rows))
		for i, r := range rows {
			src[i] = r
		}
		if _, err := conn.CopyFrom(t.Context(), pgx.Identifier{string(tb.Name)}, tb.ColumnNames(), pgx.CopyFromRows(src)); err != nil {
			t.Fatalf("copy %s: %v", tb.Name, err)
		}
		if tb.ID != "" {
			if _, err := conn.Exec(t.Context(), fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', '%s'), (SELECT coalesce(max(%s), 0) + 1 FROM %s))`,
				tb.Name, tb.ID, pgx.Identifier{tb.ID}.Sanitize(), pgx.Identifier{string(tb.Name)}.Sanitize())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readAll reads every row of tb for identity in pages of limits, reading a row too large
// for them alone.
func readAll(t testing.TB, v wallet.View, tb *wallet.Table, identity string, limits wallet.Limits) []wallet.Row {
	t.Helper()
	var out []wallet.Row
	for _, p := range readPages(t, v, wallet.PageRequest{Table: tb.Name, IdentityKey: identity, Limits: limits}) {
		out = append(out, p.Rows...)
	}
	return out
}

// readPages reads req's table to its end, page by page.
func readPages(t testing.TB, v wallet.View, req wallet.PageRequest) []wallet.Page {
	t.Helper()
	var out []wallet.Page
	for {
		r := req
		p, err := v.ReadPage(t.Context(), r)
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			r.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
			p, err = v.ReadPage(t.Context(), r)
		}
		if err != nil {
			t.Fatalf("read %s: %v", req.Table, err)
		}
		out = append(out, p)
		if p.Done {
			return out
		}
		req.After = p.Next
	}
}

// TestSource_Conformance runs the source half of the provider suite against PostgreSQL,
// the wallet pushed in through the BRC-40 consumer beside another user's wallet.
func TestSource_Conformance(t *testing.T) {
	t.Parallel()
	providertest.RunSource(t, providertest.Harness{
		NewSource: func(t *testing.T) (wallet.Source, string) {
			_, s, id := seededPG(t, 1, 2)
			return s, id
		},
	})
}

// TestPages_SameAsSQLite: with the same rows (ids included) in both stores, and another
// user's wallet beside them in PostgreSQL, every page of every table, full and at several
// sizes, holds the same rows with the same byte charge and ends at the same place.
func TestPages_SameAsSQLite(t *testing.T) {
	t.Parallel()
	lite := seededSQLite(t, localstore.FixtureSmall, 1)
	id := localstore.FixtureIdentity(1)
	url := cluster.NewDatabase(t)
	pg := openPG(t, url)
	copyRows(t, lite, url, id)
	pushChunks(t, seededSQLite(t, localstore.FixtureSmall, 2), pg, 2)

	lv, err := lite.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	pv, err := pg.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pv.Close()
	total := 0
	for _, limits := range []wallet.Limits{{Rows: 1, Bytes: wallet.MaxPageBytes}, {Rows: 3, Bytes: 2000}, {}} {
		for _, tb := range wallet.AllTables {
			req := wallet.PageRequest{Table: tb.Name, IdentityKey: id, Limits: limits}
			want, got := readPages(t, lv, req), readPages(t, pv, req)
			if len(want) != len(got) {
				t.Fatalf("%s in %+v pages: %d pages from SQLite, %d from PostgreSQL", tb.Name, limits, len(want), len(got))
			}
			for i := range want {
				w, g := want[i], got[i]
				if !reflect.DeepEqual(w.Rows, g.Rows) || w.Bytes != g.Bytes || w.Done != g.Done {
					t.Fatalf("%s page %d in %+v pages:\nSQLite     %d bytes done=%v %v\nPostgreSQL %d bytes done=%v %v", tb.Name, i, limits, w.Bytes, w.Done, w.Rows, g.Bytes, g.Done, g.Rows)
				}
				total += len(g.Rows)
			}
		}
	}
	if total == 0 {
		t.Fatal("no rows compared")
	}
}

// TestView_ConsistentWhileWriting: a view keeps reading what it pinned while another
// connection inserts, updates and deletes the user's rows and commits; a new view sees the
// writes, and its journal high-water mark is above the old one.
func TestView_ConsistentWhileWriting(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1)
	read := func(v wallet.View) map[wallet.TableName][]wallet.Row {
		out := map[wallet.TableName][]wallet.Row{}
		for _, tb := range wallet.SyncOrder {
			out[tb.Name] = readAll(t, v, tb, id, wallet.Limits{Rows: 2})
		}
		return out
	}
	v, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	before := read(v)
	hw, _ := v.Journal(0)
	exec(t, url, `UPDATE tx_labels SET label = label || '-renamed'`)
	exec(t, url, `DELETE FROM output_tags_map`)
	exec(t, url, `INSERT INTO tx_labels (created_at, updated_at, "userId", label, "isDeleted") SELECT now(), now(), "userId", 'new label', false FROM users`)
	if after := read(v); !reflect.DeepEqual(before, after) {
		t.Fatal("the view changed under writes of another connection")
	}
	w, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := read(w)
	if len(now[wallet.TableOutputTagsMap]) != 0 || len(now[wallet.TableTxLabels]) != len(before[wallet.TableTxLabels])+1 {
		t.Fatalf("a new view does not see the writes: %d tag maps, %d labels (was %d)", len(now[wallet.TableOutputTagsMap]), len(now[wallet.TableTxLabels]), len(before[wallet.TableTxLabels]))
	}
	if hw2, covered := w.Journal(hw); hw2 <= hw || !covered {
		t.Fatalf("journal after three writes: high-water %d (was %d), covered %v", hw2, hw, covered)
	}
}

// TestView_Incremental: an incremental read above a view's high-water mark returns exactly
// the rows written since, in key order, with their links (a label's maps), and nothing for
// another user.
func TestView_Incremental(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1, 2)
	v, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	hw, _ := v.Journal(0)
	v.Close()

	// Revive (touch) one label of each user; its maps come along, unchanged themselves.
	exec(t, url, `UPDATE tx_labels SET updated_at = now() WHERE "txLabelId" IN (SELECT min("txLabelId") FROM tx_labels l JOIN tx_labels_map m USING ("txLabelId") GROUP BY l."userId")`)
	w, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, covered := w.Journal(hw); !covered {
		t.Fatal("the journal does not cover the old high-water mark")
	}
	changed := map[wallet.TableName]int{}
	for _, tb := range wallet.SyncOrder {
		for _, p := range readPages(t, w, wallet.PageRequest{Table: tb.Name, IdentityKey: id, Incremental: true, Since: hw, Limits: wallet.Limits{Rows: 1}}) {
			if len(p.Rows) > 0 {
				changed[tb.Name] += len(p.Rows)
			}
		}
	}
	var maps int
	if err := pgstore.PoolOf(s).QueryRow(t.Context(), `SELECT count(*) FROM tx_labels_map m JOIN tx_labels l USING ("txLabelId") JOIN users u USING ("userId")
		WHERE u."identityKey" = $1 AND l."txLabelId" = (SELECT min("txLabelId") FROM tx_labels l2 JOIN tx_labels_map USING ("txLabelId") WHERE l2."userId" = u."userId")`, id).Scan(&maps); err != nil {
		t.Fatal(err)
	}
	want := map[wallet.TableName]int{wallet.TableTxLabels: 1, wallet.TableTxLabelsMap: maps}
	if !reflect.DeepEqual(changed, want) || maps == 0 {
		t.Fatalf("incremental read above %d: %v, want %v", hw, changed, want)
	}
}

// TestView_Lifetime: reads after the lifetime (on either clock) fail with
// ErrSnapshotExpired, after Close with ErrSnapshotClosed; Close is idempotent; a second
// read at once is refused; views beyond MaxViews are refused with ErrSnapshotBusy and free
// their slot when they end.
func TestView_Lifetime(t *testing.T) {
	t.Parallel()
	url := cluster.NewDatabase(t)
	opts := newOptions()
	opts.MaxViews = 2
	s, err := pgstore.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pushChunks(t, seededSQLite(t, localstore.FixtureSmall, 1), s, 1)
	req := wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: localstore.FixtureIdentity(1), Limits: wallet.Limits{Rows: 1}}

	t.Run("ExpiredOnEitherClock", func(t *testing.T) {
		for _, jump := range []string{"mono", "wall"} {
			var ahead atomic.Bool // once set, the chosen clock reads an hour later
			sys := wallet.SystemClock()
			clock := wallet.Clock{
				Mono: func() time.Duration {
					if jump == "mono" && ahead.Load() {
						return sys.Mono() + time.Hour
					}
					return sys.Mono()
				},
				Wall: func() time.Time {
					if jump == "wall" && ahead.Load() {
						return sys.Wall().Add(time.Hour)
					}
					return sys.Wall()
				},
			}
			v, err := s.OpenSnapshot(t.Context(), pgstore.SnapshotOptions{Lifetime: 30 * time.Minute, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.ReadPage(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			ahead.Store(true)
			if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotExpired) {
				t.Fatalf("%s clock past the lifetime: err = %v, want ErrSnapshotExpired", jump, err)
			}
			v.Close()
			if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotExpired) {
				t.Fatalf("%s clock: read after close of an expired view: err = %v, want ErrSnapshotExpired (the first reason stays)", jump, err)
			}
		}
	})
	t.Run("ClosedAndIdempotent", func(t *testing.T) {
		v, err := s.OpenView(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		v.Close()
		v.Close()
		if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("read after close: err = %v, want ErrSnapshotClosed", err)
		}
	})
	t.Run("BusyBeyondMaxViews", func(t *testing.T) {
		a, err := s.OpenView(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.OpenView(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.OpenView(t.Context(), 0); !errors.Is(err, wallet.ErrSnapshotBusy) {
			t.Fatalf("a third view of two: err = %v, want ErrSnapshotBusy", err)
		}
		a.Close()
		c, err := s.OpenView(t.Context(), 0)
		if err != nil {
			t.Fatalf("a view after one closed: %v", err)
		}
		b.Close()
		c.Close()
	})
	t.Run("ConcurrentReadRefusedAndCloseDuringRead", func(t *testing.T) {
		v, err := s.OpenSnapshot(t.Context(), pgstore.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inRead, release := make(chan struct{}), make(chan struct{})
		pgstore.HoldReads(v, func() { close(inRead); <-release })
		first := make(chan error, 1)
		go func() { _, err := v.ReadPage(context.Background(), req); first <- err }()
		<-inRead
		if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrConcurrentRead) {
			t.Fatalf("a second read at once: err = %v, want ErrConcurrentRead", err)
		}
		closed := make(chan struct{})
		go func() { v.Close(); close(closed) }()
		<-pgstore.Ending(v) // Close began, and waits for the read
		close(release)
		<-closed
		if err := <-first; !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("the read in flight when the view closed: err = %v, want its result discarded (ErrSnapshotClosed)", err)
		}
	})
	t.Run("AbortedTransactionEndsView", func(t *testing.T) {
		v, err := s.OpenSnapshot(t.Context(), pgstore.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if err := pgstore.FailStatement(t.Context(), v); err == nil {
			t.Fatal("1/0 succeeded")
		}
		if _, err := v.ReadPage(t.Context(), req); err == nil || errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("the read that finds the transaction aborted: err = %v, want the database's error", err)
		}
		if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("a read after the view lost its transaction: err = %v, want ErrSnapshotClosed", err)
		}
	})
	t.Run("AbandonedViewReleased", func(t *testing.T) {
		// Short, but long enough that the open itself never outlives it on a loaded machine.
		v, err := s.OpenView(t.Context(), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		// Never read nor closed: its lifetime alone gives the connection and the slot back.
		for pgstore.PoolOf(s).Stat().AcquiredConns() != 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotExpired) {
			t.Fatalf("read of a view past its lifetime: err = %v, want ErrSnapshotExpired", err)
		}
	})
	t.Run("ContextEndsView", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		v, err := s.OpenView(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		v.Close() // waits for the end the cancel began
		if _, err := v.ReadPage(t.Context(), req); !errors.Is(err, wallet.ErrSnapshotClosed) {
			t.Fatalf("read after the open context ended: err = %v, want ErrSnapshotClosed", err)
		}
	})
	if n := pgstore.PoolOf(s).Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still held after every view ended", n)
	}
}

// TestView_SnapshotImportedElsewhere: a transaction on another connection that imports the
// view's exported snapshot reads, through ReadPage and ReadJournal, exactly what the view
// reads, cursors included, even after writers committed; and the store describes itself as
// a source with snapshots, a journal and reads beside a writer.
func TestView_SnapshotImportedElsewhere(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1)
	settings, caps, err := s.Describe(t.Context())
	if err != nil || settings.StorageIdentityKey != serverKey || !caps.Snapshots || !caps.Journal || !caps.ReadsBesideWriter || caps.ConcurrentReads < 1 {
		t.Fatalf("describe: %+v %+v, %v", settings, caps, err)
	}
	v, err := s.OpenSnapshot(t.Context(), pgstore.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	exec(t, url, `DELETE FROM outputs`)
	exec(t, url, insertLabel, id, "after the view")

	conn := connect(t, url)
	tx, err := conn.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SET TRANSACTION SNAPSHOT '"+v.SnapshotID()+"'"); err != nil {
		t.Fatal(err)
	}
	j, err := pgstore.ReadJournal(t.Context(), tx)
	if hw, _ := v.Journal(0); err != nil || j.HighWater != hw {
		t.Fatalf("journal in the imported snapshot: %+v, %v; the view's high-water is %d", j, err, hw)
	}
	for _, tb := range wallet.SyncOrder {
		req := wallet.PageRequest{Table: tb.Name, IdentityKey: id, Limits: wallet.Limits{Rows: 2}}
		for {
			want, err := v.ReadPage(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgstore.ReadPage(t.Context(), tx, v.ID(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s after %q: the imported snapshot read\n%+v\nthe view\n%+v", tb.Name, req.After, got, want)
			}
			if want.Done {
				break
			}
			req.After = want.Next
		}
	}
}

// TestSource_PullsIntoSQLite: the paged sync contract pulls a wallet from PostgreSQL (with
// another user beside it) into an empty SQLite wallet exactly; after writes in PostgreSQL
// the next run is incremental and reads only what changed, and a run after that finds the
// wallet unchanged in one request.
func TestSource_PullsIntoSQLite(t *testing.T) {
	t.Parallel()
	url, s, id := seededPG(t, 1, 2)
	dst := openSQLite(t)
	opts := syncer.Options{MaxRows: 7, Active: wallet.KeepSourceActive}
	if res, err := syncer.Run(t.Context(), s, dst, id, opts); err != nil || res.Kind != syncer.KindFull || !res.Checkpoint.Done {
		t.Fatalf("first pull: %+v, %v", res, err)
	}
	compare.SameWallet(t, s, dst, id)

	exec(t, url, `UPDATE outputs SET "outputDescription" = 'changed', updated_at = now() WHERE "outputId" = (SELECT min("outputId") FROM outputs)`)
	exec(t, url, insertLabel, id, "a new label")
	res, err := syncer.Run(t.Context(), s, dst, id, opts)
	if err != nil || res.Kind != syncer.KindIncremental || res.Rows == 0 || res.Rows > 3 {
		t.Fatalf("pull after two writes: %+v, %v; want an incremental run of the changed rows", res, err)
	}
	compare.SameWallet(t, s, dst, id)
	if again, err := syncer.Run(t.Context(), s, dst, id, opts); err != nil || again.Kind != syncer.KindUnchanged || again.Pages != 0 {
		t.Fatalf("pull of an unchanged wallet: %+v, %v", again, err)
	}
}

// TestView_Resume: a cursor of one view continues in another through Resume (the rows
// after the same key), and is refused for another table or when it is not a cursor.
func TestView_Resume(t *testing.T) {
	t.Parallel()
	_, s, id := seededPG(t, 1)
	v, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	req := wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: id, Limits: wallet.Limits{Rows: 2}}
	first, err := v.ReadPage(t.Context(), req)
	if err != nil || first.Done {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	req.After = first.Next
	want, err := v.ReadPage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	w, err := s.OpenView(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if req.After, err = w.Resume(wallet.TableOutputs, first.Next); err != nil {
		t.Fatal(err)
	}
	got, err := w.ReadPage(t.Context(), req)
	if err != nil || !reflect.DeepEqual(got.Rows, want.Rows) {
		t.Fatalf("resumed in a new view: %v, %v; want the rows the old view read next", got.Rows, err)
	}
	for _, c := range []struct {
		table  wallet.TableName
		cursor wallet.Cursor
	}{{wallet.TableTransactions, first.Next}, {wallet.TableOutputs, "not a cursor"}} {
		if _, err := w.Resume(c.table, c.cursor); !errors.Is(err, wallet.ErrCursorMismatch) {
			t.Errorf("resume %q for %s: err = %v, want ErrCursorMismatch", c.cursor, c.table, err)
		}
	}
}
