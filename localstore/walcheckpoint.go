package localstore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// WAL checkpoints. SQLite's default checkpoints the WAL inside whichever commit pushes it past
// 1,000 pages, which turns that commit, a short background page or a person's label, into a
// 10-15 ms stall. The store instead runs PASSIVE checkpoints from its own connection in the
// background (they take no writer lock, so commits and reads go on meanwhile) and leaves
// SQLite's automatic checkpoint only as a backstop at ten times the size, should the
// background checkpointer ever fall behind. Litestream takes over checkpoints the same way.
//
// While a sync session streams page commits into the store, the checkpointer defers its ticks,
// for at most maxCheckpointDefer in a row: a checkpoint copies the frames just committed into
// the database file and fsyncs it, on the same disk and at the same time as the next page's WAL
// writes and fsync, which made a full copy about a tenth slower (`walletsync bench sync`, the
// toolbox fixture). The deferred frames are checkpointed in one go at the first tick after the
// commits stop (or after maxCheckpointDefer); the WAL meanwhile grows by at most that much
// committing, and the backstop still bounds it.
const (
	checkpointEvery     = 250 * time.Millisecond
	maxCheckpointDefer  = time.Second
	autoCheckpointPages = 10000 // the backstop, on the writer connection
)

// walCheckpointer runs passive checkpoints until stop is called.
type walCheckpointer struct {
	db     *sql.DB
	cancel context.CancelFunc
	done   sync.WaitGroup
	// lastCommit is when a page commit last began or ended (time.Time.UnixNano); see streaming.
	lastCommit atomic.Int64
	// What the checkpoints found, for Store.Stats: how many ran, and the most WAL frames one
	// of them had to leave in the WAL because a reader still needed them.
	runs, maxHeldBack atomic.Int64
}

func startWALCheckpointer(path string, busy time.Duration) (*walCheckpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, busy))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &walCheckpointer{db: db, cancel: cancel}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		last := time.Now() // of the last checkpoint run
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if c.streaming(now) && now.Sub(last) < maxCheckpointDefer {
					continue
				}
				c.checkpoint(ctx)
				last = now
			}
		}
	}()
	return c, nil
}

// checkpoint copies the WAL frames no reader still needs into the database. With nothing new
// to copy it costs a lock and a look at the WAL index, so it runs on every tick. Errors are
// ignored on purpose: a failed passive checkpoint is retried at the next tick, the automatic
// backstop bounds the WAL meanwhile, and a commit's durability never depends on it.
func (c *walCheckpointer) checkpoint(ctx context.Context) {
	var busy, log, done int64
	if c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done) != nil {
		return
	}
	c.runs.Add(1)
	for held := log - done; ; {
		m := c.maxHeldBack.Load()
		if held <= m || c.maxHeldBack.CompareAndSwap(m, held) {
			break
		}
	}
}

// pageCommit records that a sync session's page commit begins or ends now. Nil-safe (a
// read-only store has no checkpointer).
func (c *walCheckpointer) pageCommit() {
	if c != nil {
		c.lastCommit.Store(time.Now().UnixNano())
	}
}

// streaming reports whether page commits are arriving: one began or ended within the last
// tick.
func (c *walCheckpointer) streaming(now time.Time) bool {
	return now.UnixNano()-c.lastCommit.Load() < int64(checkpointEvery)
}

func (c *walCheckpointer) stop() error {
	if c == nil {
		return nil
	}
	c.cancel()
	c.done.Wait()
	return c.db.Close()
}
