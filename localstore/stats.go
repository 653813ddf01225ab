package localstore

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
)

// Stats are a store's counters since it opened, for measurements: where a foreground
// operation's time goes while a background job uses the same wallet (`walletsync bench
// scheduler`).
type Stats struct {
	// ReadPool is the reader pool's database/sql counters: WaitCount and WaitDuration are
	// reads that found every reader connection taken.
	ReadPool sql.DBStats
	// WALBytes is the size of the wallet's -wal file now. SQLite reuses the file from its
	// start once a checkpoint has copied all of it, and otherwise appends, so it is the most
	// the WAL has held since the store opened.
	WALBytes int64
	// Checkpoints is how many background checkpoints ran; CheckpointHeldBack is the most WAL
	// frames one of them found but could not copy, because a reader (a snapshot view) still
	// read the database as of before them.
	Checkpoints        int64
	CheckpointHeldBack int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	st := Stats{ReadPool: s.readDB.Stats()}
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		st.WALBytes = fi.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		st.WALBytes = -1
	}
	if s.walCP != nil {
		st.Checkpoints, st.CheckpointHeldBack = s.walCP.runs.Load(), s.walCP.maxHeldBack.Load()
	}
	return st
}
