package agent

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/wallet"
)

func TestOpenState_MigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	for range 2 {
		s, err := openState(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		var versions int
		var journal string
		var synchronous int
		if err := s.db.QueryRow(`SELECT count(*) FROM migrations`).Scan(&versions); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRow(`PRAGMA synchronous`).Scan(&synchronous); err != nil {
			t.Fatal(err)
		}
		if versions != len(stateMigrations) || journal != "wal" || synchronous != 2 {
			t.Fatalf("ledger rows %d, journal %s, synchronous %d; want %d, wal, 2 (FULL)", versions, journal, synchronous, len(stateMigrations))
		}
		s.Close()
	}
	if info, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Fatalf("state database mode: %v, %v", info.Mode(), err)
	}
}

func TestOpenState_RefusesForeignOrNewer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(db *sql.DB) error
		want    error
	}{
		{"a newer ledger", func(db *sql.DB) error {
			_, err := db.Exec(`INSERT INTO migrations (version, name, applied_at) VALUES (99, 'future', 'now')`)
			return err
		}, wallet.ErrSchemaTooNew},
		{"a wallet or other database", func(db *sql.DB) error {
			_, err := db.Exec(`DROP TABLE migrations; CREATE TABLE users (userId INTEGER PRIMARY KEY)`)
			return err
		}, wallet.ErrUnknownSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s, err := openState(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.prepare(s.db); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			s.Close()
			before, _ := os.ReadFile(path)
			if _, err := openState(t.Context(), path); !errors.Is(err, tc.want) {
				t.Fatalf("OpenState = %v, want %v", err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("a refused database was changed")
			}
		})
	}
}

// The event log keeps the newest events but not progress or log lines, and a recorder
// that stops and starts again records every event exactly once.
func TestStateDB_RecordEvents(t *testing.T) {
	s := mustState(t)
	bus := newBus(0)
	record := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() { done <- s.RecordEvents(ctx, bus, 5) }()
		return done
	}
	ctx, stop := context.WithCancel(t.Context())
	first := record(ctx)
	for i := range 3 {
		bus.Publish(api.EventBackupWritten, map[string]int{"file": i})
		bus.Publish(api.EventTaskProgress, map[string]int{"rows": i})
	}
	stop()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 6; i++ {
		bus.Publish(api.EventDrillFinished, map[string]int{"file": i})
		bus.Publish(api.EventTaskLog, map[string]int{"line": i})
	}
	second := record(t.Context())
	bus.Close()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{3, 5, 7, 9, 11} // the newest 5 of 1, 3, 5 (backups) and 7, 9, 11 (drills)
	if len(got) != len(want) {
		t.Fatalf("event log: %+v, want seqs %v", got, want)
	}
	for i, e := range got {
		if e.Seq != want[i] || e.Epoch != bus.Epoch() || e.Type == api.EventTaskProgress || e.Type == api.EventTaskLog {
			t.Fatalf("event %d: %+v, want seq %d", i, e, want[i])
		}
	}
	if string(got[4].Data) != `{"file":5}` || got[4].Type != api.EventDrillFinished {
		t.Errorf("newest event: %s %s", got[4].Type, got[4].Data)
	}
}

// TestStateDB_Places: a place is recorded once, with the time of the first write (a later
// record keeps it), per destination and place; forgetting a destination's places forgets
// only its own.
func TestStateDB_Places(t *testing.T) {
	s, err := openState(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for i, r := range []struct{ dest, place string }{{"a", "p1"}, {"a", "p1"}, {"a", "p2"}, {"b", "p1"}} {
		if err := s.RecordPlace(t.Context(), r.dest, r.place, "/disk", first.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ForgetPlaces(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dest, place string
		want        time.Time
	}{
		{"a", "p1", first},
		{"a", "p2", first.Add(2 * time.Hour)},
		{"b", "p1", time.Time{}},
		{"a", "p3", time.Time{}},
	}
	for _, tt := range tests {
		got, err := s.PlaceWritten(t.Context(), tt.dest, tt.place)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("PlaceWritten(%s, %s) = %v, %v; want %v", tt.dest, tt.place, got, err, tt.want)
		}
	}
}
