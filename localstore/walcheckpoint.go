package localstore

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// WAL checkpoints. SQLite's default checkpoints the WAL inside whichever commit pushes it past
// 1,000 pages, which turns that commit, a short background page or a person's label, into a
// 10-15 ms stall. The store instead runs PASSIVE checkpoints from its own connection in the
// background (they take no writer lock, so commits and reads go on meanwhile) and leaves
// SQLite's automatic checkpoint only as a backstop at ten times the size, should the
// background checkpointer ever fall behind. Litestream takes over checkpoints the same way.
const (
	checkpointEvery     = 250 * time.Millisecond
	autoCheckpointPages = 10000 // the backstop, on the writer connection
)

// walCheckpointer runs passive checkpoints until stop is called.
type walCheckpointer struct {
	db     *sql.DB
	cancel context.CancelFunc
	done   sync.WaitGroup
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
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.checkpoint(ctx)
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
	c.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
}

func (c *walCheckpointer) stop() error {
	if c == nil {
		return nil
	}
	c.cancel()
	c.done.Wait()
	return c.db.Close()
}
