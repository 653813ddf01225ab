package localstore

import (
	"context"
	"errors"
	"fmt"
	"os"

	"walletsync/wallet"
)

// Info describes a wallet file for `walletsync wallet info`.
type Info struct {
	Path     string          `json:"path"`
	Settings wallet.Settings `json:"settings"`
	// Identities are the users the file holds, with their rows per table.
	Identities []wallet.Summary `json:"identities"`
	// SizeBytes is the file plus its WAL on disk.
	SizeBytes int64 `json:"sizeBytes"`
	// JournalMode is SQLite's journal mode of the file: "wal" once walletsync has opened it
	// for writing (it switches a toolbox wallet's rollback journal, "delete", to WAL once).
	JournalMode string `json:"journalMode"`
	// Journal is absent for a file walletsync never opened for writing.
	Journal *JournalState `json:"journal,omitempty"`
	// ImportInProgress, when set, is the merge that started and did not finish: the wallet
	// holds part of a backup until it is finished or abandoned.
	ImportInProgress *wallet.ImportRecord `json:"importInProgress,omitempty"`
}

// Info reads the store's settings, each identity's summary, the size on disk and the
// change journal's bounds.
func (s *Store) Info(ctx context.Context) (Info, error) {
	info := Info{Path: s.path}
	var err error
	if info.Settings, err = s.Settings(ctx); err != nil {
		return info, fmt.Errorf("info: %w", err)
	}
	keys, err := s.Identities(ctx)
	if err != nil {
		return info, fmt.Errorf("info: %w", err)
	}
	for _, k := range keys {
		sum, err := s.Summary(ctx, k)
		if err != nil {
			return info, fmt.Errorf("info: %w", err)
		}
		info.Identities = append(info.Identities, sum)
	}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(s.path + suffix); err == nil {
			info.SizeBytes += fi.Size()
		}
	}
	if err := s.readDB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&info.JournalMode); err != nil {
		return info, fmt.Errorf("info: read journal mode: %w", classify(err))
	}
	if j, err := s.JournalState(ctx); err == nil {
		info.Journal = &j
	}
	var busy *wallet.ImportInProgressError
	if err := s.ImportInProgress(ctx); errors.As(err, &busy) {
		info.ImportInProgress = &busy.Record
	} else if err != nil {
		return info, fmt.Errorf("info: %w", err)
	}
	return info, nil
}
