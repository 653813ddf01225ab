package localstore

import (
	"context"
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
	// Journal is absent for a file walletsync never opened for writing.
	Journal *JournalState `json:"journal,omitempty"`
}

// Info reads the store's settings, each identity's summary, the size on disk and the
// change journal's bounds.
func (s *Store) Info(ctx context.Context) (Info, error) {
	info := Info{Path: s.path}
	var err error
	if info.Settings, err = s.Settings(ctx); err != nil {
		return info, fmt.Errorf("info: %w", err)
	}
	keys, err := queryStrings(ctx, s.readDB, "SELECT identityKey FROM users ORDER BY userId")
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
	if j, err := s.JournalState(ctx); err == nil {
		info.Journal = &j
	}
	return info, nil
}
