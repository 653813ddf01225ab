package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"pgregory.net/rapid"

	"walletsync/wallet"
)

var (
	keyA = "03ab12cd" + strings.Repeat("a", 58)
	keyB = "02ff0011" + strings.Repeat("b", 58)
)

// foreignNames are files a backup folder may hold that are not walletsync's backups.
var foreignNames = []string{
	"notes.txt",
	".walletsync-03ab12cd-20261129T201500Z.brc39.tmp-123", // a writer's temp file
	"walletsync-03ab12cd-20261129T201500Z.brc39.partial",
	"walletsync-03AB12CD-20261129T201500Z.brc39",
	"walletsync-03ab12cd-20261129T2015Z.brc39",
	"walletsync-03ab12c-20261129T201500Z.brc39",
	"walletsync-03ab12cd-20261131T201500Z.brc39", // 31 November
	"walletsync-03ab12cd-20261129T201500.brc39",
	"walletsync-03ab12cd-20261129T201500.5Z.brc39", // time.Parse takes a fraction after the seconds
	"walletsync-03ab12cd-20261129T201500Z.brc38",
	"Walletsync-03ab12cd-20261129T201500Z.brc39",
	"walletsync-03ab12cd-x-20261129T201500Z.brc39",
}

func TestBackupFileName_RoundTrip(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
		at   time.Time
		want string
	}{
		{"UTC", keyA, time.Date(2026, 11, 29, 20, 15, 0, 0, time.UTC), "walletsync-03ab12cd-20261129T201500Z.brc39"},
		{"local time is written as UTC", keyA, time.Date(2026, 11, 29, 15, 15, 0, 0, ny), "walletsync-03ab12cd-20261129T201500Z.brc39"},
		{"upper-case key, fraction of a second", strings.ToUpper(keyB), time.Date(2026, 1, 2, 3, 4, 5, 999, time.UTC), "walletsync-02ff0011-20260102T030405Z.brc39"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := backupFileName(tt.key, tt.at)
			if name != tt.want {
				t.Fatalf("BackupFileName = %q, want %q", name, tt.want)
			}
			prefix, at, ok := parseBackupFileName(name)
			if !ok || prefix != strings.ToLower(tt.key[:8]) || !at.Equal(tt.at.Truncate(time.Second)) || at.Location() != time.UTC {
				t.Fatalf("ParseBackupFileName(%q) = %q, %s, %v", name, prefix, at, ok)
			}
		})
	}
}

func TestParseBackupFileName_RefusesOtherNames(t *testing.T) {
	for _, name := range append(foreignNames, backupFileName("zz", time.Now())) {
		if prefix, at, ok := parseBackupFileName(name); ok {
			t.Errorf("ParseBackupFileName(%q) = %q, %s, true; want false", name, prefix, at)
		}
	}
}

// backupsEvery returns the names of key's backups every step from first to last,
// leaving out those skip returns true for.
func backupsEvery(key string, first, last time.Time, step time.Duration, skip func(time.Time) bool) []backupFile {
	var files []backupFile
	for at := first; !at.After(last); at = at.Add(step) {
		if skip == nil || !skip(at) {
			files = append(files, backupFile{Name: backupFileName(key, at)})
		}
	}
	return files
}

// namesAt returns the names of key's backups taken at the given UTC times ("2006-01-02T15:04").
func namesAt(t *testing.T, key string, times ...string) []string {
	t.Helper()
	var out []string
	for _, s := range times {
		at, err := time.Parse("2006-01-02T15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, backupFileName(key, at))
	}
	return out
}

// Ten weeks of hourly backups of one identity, six-hourly ones with a six-day gap of
// another, and foreign files, in one folder, under the default policy: each identity
// keeps its last 10, the newest of each of the last 7 days and of the last 8 ISO weeks,
// and the newest verified file; foreign files get no decision.
func TestPlanRetention_GeneratedHistory(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 30, 0, 0, time.UTC) // a Sunday, in 2026-W48
	a := backupsEvery(keyA, time.Date(2026, 9, 20, 0, 15, 0, 0, time.UTC), now, time.Hour, nil)
	gapFrom, gapTo := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	b := backupsEvery(keyB, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), now, 6*time.Hour,
		func(at time.Time) bool { return !at.Before(gapFrom) && at.Before(gapTo) })
	var files []backupFile
	for i := range max(len(a), len(b)) { // interleaved, with foreign files among them
		if i < len(a) {
			files = append(files, a[i])
		}
		if i < len(b) {
			files = append(files, b[i])
		}
		if i < len(foreignNames) {
			files = append(files, backupFile{Name: foreignNames[i]})
		}
	}

	keptA := slices.Concat(
		namesAt(t, keyA, "2026-11-29T20:15", "2026-11-29T19:15", "2026-11-29T18:15", "2026-11-29T17:15", "2026-11-29T16:15",
			"2026-11-29T15:15", "2026-11-29T14:15", "2026-11-29T13:15", "2026-11-29T12:15", "2026-11-29T11:15"), // the last 10
		namesAt(t, keyA, "2026-11-28T23:15", "2026-11-27T23:15", "2026-11-26T23:15", "2026-11-25T23:15",
			"2026-11-24T23:15", "2026-11-23T23:15"), // days 2026-11-23..28; the 29th's newest is among the last 10
		namesAt(t, keyA, "2026-11-22T23:15", "2026-11-15T23:15", "2026-11-08T23:15", "2026-11-01T23:15",
			"2026-10-25T23:15", "2026-10-18T23:15", "2026-10-11T23:15")) // weeks W47..W41; W48's newest is the newest
	keptB := slices.Concat(
		namesAt(t, keyB, "2026-11-29T18:00", "2026-11-29T12:00", "2026-11-29T06:00", "2026-11-29T00:00", "2026-11-28T18:00",
			"2026-11-28T12:00", "2026-11-28T06:00", "2026-11-28T00:00", "2026-11-27T18:00", "2026-11-27T12:00"),
		namesAt(t, keyB, "2026-11-26T18:00"), // 23-25 November have no backup
		namesAt(t, keyB, "2026-11-19T18:00", "2026-11-15T18:00", "2026-11-08T18:00", "2026-11-01T18:00",
			"2026-10-25T18:00", "2026-10-18T18:00", "2026-10-11T18:00"))
	reasons := map[string][]string{
		keptA[0]:  {"one of the last 10", "newest of 2026-11-29", "newest of week 2026-W48"},
		keptA[9]:  {"one of the last 10"},
		keptA[10]: {"newest of 2026-11-28"},
		keptA[16]: {"newest of week 2026-W47"},
		keptB[10]: {"newest of 2026-11-26"},
		keptB[11]: {"newest of week 2026-W47"},
	}

	old := namesAt(t, keyA, "2026-10-01T00:15")[0]
	tests := []struct {
		name     string
		verified string
		alsoKept []string
		reasons  map[string][]string
	}{
		{"nothing verified", "", nil, reasons},
		{"an old verified file is kept", old, []string{old}, map[string][]string{old: {"newest verified"}}},
		{"a kept verified file says so", keptA[0], nil, map[string][]string{
			keptA[0]: {"one of the last 10", "newest of 2026-11-29", "newest of week 2026-W48", "newest verified"}}},
		{"a verified name that is not a backup changes nothing", "notes.txt", nil, reasons},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decisions := planRetention(files, api.Retention{Last: 10, Daily: 7, Weekly: 8}, tt.verified, now)
			if len(decisions) != len(a)+len(b) {
				t.Fatalf("%d decisions, want one per backup file: %d", len(decisions), len(a)+len(b))
			}
			var kept []string
			for _, d := range decisions {
				if _, _, ok := parseBackupFileName(d.File.Name); !ok {
					t.Fatalf("a decision for %q", d.File.Name)
				}
				if d.Keep != (len(d.Reasons) > 0) {
					t.Fatalf("%s: keep %v with reasons %q", d.File.Name, d.Keep, d.Reasons)
				}
				if d.Keep {
					kept = append(kept, d.File.Name)
				}
				if want, ok := tt.reasons[d.File.Name]; ok && !slices.Equal(d.Reasons, want) {
					t.Errorf("%s: reasons %q, want %q", d.File.Name, d.Reasons, want)
				}
			}
			want := slices.Concat(keptA, keptB, tt.alsoKept)
			slices.Sort(kept)
			slices.Sort(want)
			if !slices.Equal(kept, want) {
				t.Fatalf("kept %d files, want %d:\n got %q\nwant %q", len(kept), len(want), kept, want)
			}
		})
	}
}

// Whatever the files and the policy, planRetention keeps each identity's last N, keeps the newest
// file of each day and week in its window and no other file by that rule, never loses the
// newest verified file, decides once per backup file and never about another file, and
// keeps everything it kept when run again on what it kept.
func TestPlanRetention_Properties(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 30, 0, 0, time.UTC)
	keys := []string{keyA, keyB, "03000000" + strings.Repeat("c", 58)}
	rapid.Check(t, func(t *rapid.T) {
		var files []backupFile
		for range rapid.IntRange(0, 80).Draw(t, "files") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			// Hours from 120 days before now to 2 days after it (a clock set back), so
			// that days and weeks hold several files; repeated names happen too.
			at := now.Add(time.Duration(rapid.IntRange(-120*24, 48).Draw(t, "hour")) * time.Hour).
				Add(time.Duration(rapid.IntRange(0, 3599).Draw(t, "second")) * time.Second)
			files = append(files, backupFile{Name: backupFileName(key, at)})
		}
		for range rapid.IntRange(0, 3).Draw(t, "foreign") {
			files = append(files, backupFile{Name: rapid.SampledFrom(foreignNames).Draw(t, "foreignName")})
		}
		files = rapid.Permutation(files).Draw(t, "order")
		policy := api.Retention{Last: rapid.IntRange(-1, 15).Draw(t, "last"),
			Daily: rapid.IntRange(-1, 10).Draw(t, "daily"), Weekly: rapid.IntRange(-1, 10).Draw(t, "weekly")}
		verified := ""
		if len(files) > 0 && rapid.Bool().Draw(t, "verified") {
			verified = rapid.SampledFrom(files).Draw(t, "verifiedFile").Name
		}

		decisions := planRetention(files, policy, verified, now)
		checkPlan(t, files, policy, verified, now, decisions)

		var kept []backupFile
		for _, d := range decisions {
			if d.Keep {
				kept = append(kept, d.File)
			}
		}
		for _, d := range planRetention(kept, policy, verified, now) {
			if !d.Keep {
				t.Fatalf("run again on what it kept, PlanRetention deletes %s", d.File.Name)
			}
		}
	})
}

// datedBackup is a backup file's name and the time in it.
type datedBackup struct {
	name string
	at   time.Time
}

// checkPlan checks decisions against the retention rules, computed another way.
func checkPlan(t *rapid.T, files []backupFile, policy api.Retention, verified string, now time.Time, decisions []retentionDecision) {
	byPrefix := map[string][]datedBackup{}
	distinct := map[string]bool{}
	for _, f := range files {
		if prefix, at, ok := parseBackupFileName(f.Name); ok && !distinct[f.Name] {
			distinct[f.Name] = true
			byPrefix[prefix] = append(byPrefix[prefix], datedBackup{f.Name, at})
		}
	}
	keep := map[string]retentionDecision{}
	for _, d := range decisions {
		if !distinct[d.File.Name] {
			t.Fatalf("a decision about %q, which is not a backup file in the input", d.File.Name)
		}
		if _, dup := keep[d.File.Name]; dup {
			t.Fatalf("two decisions about %s", d.File.Name)
		}
		if d.Keep != (len(d.Reasons) > 0) {
			t.Fatalf("%s: keep %v with reasons %q", d.File.Name, d.Keep, d.Reasons)
		}
		keep[d.File.Name] = d
	}
	if len(keep) != len(distinct) {
		t.Fatalf("%d decisions for %d backup files", len(keep), len(distinct))
	}
	if distinct[verified] && !keep[verified].Keep {
		t.Fatalf("the newest verified file %s is deleted", verified)
	}

	// Whole days and weeks back from now's; negative for a file dated after now.
	day := func(at time.Time) time.Time { return at.Truncate(24 * time.Hour) } // UTC days: the zero time is midnight UTC
	monday := func(at time.Time) time.Time { return day(at).AddDate(0, 0, -(int(at.Weekday())+6)%7) }
	for prefix, group := range byPrefix {
		slices.SortFunc(group, func(a, b datedBackup) int { return b.at.Compare(a.at) })
		for i, b := range group[:min(max(policy.Last, 1), len(group))] {
			if !keep[b.name].Keep {
				t.Fatalf("%s: the newest #%d of %s is deleted", b.name, i+1, prefix)
			}
		}
		checkNewestOf(t, group, keep, func(b datedBackup) (string, bool) {
			return b.at.Format(time.DateOnly), policy.Daily > 0 && int(day(now).Sub(day(b.at)).Hours()/24) < policy.Daily
		})
		checkNewestOf(t, group, keep, func(b datedBackup) (string, bool) {
			y, w := b.at.ISOWeek()
			return fmt.Sprintf("week %04d-W%02d", y, w), policy.Weekly > 0 && int(monday(now).Sub(monday(b.at)).Hours()/24/7) < policy.Weekly
		})
	}
}

// checkNewestOf checks one period rule over one identity's backups, newest first: the
// newest backup of each period in the window carries "newest of <period>", and no other.
func checkNewestOf(t *rapid.T, group []datedBackup, keep map[string]retentionDecision, period func(datedBackup) (label string, inWindow bool)) {
	seen := map[string]bool{}
	for _, b := range group {
		label, in := period(b)
		reason := "newest of " + label
		has, want := slices.Contains(keep[b.name].Reasons, reason), in && !seen[label]
		seen[label] = true
		if has != want {
			t.Fatalf("%s: reason %q is %v, want %v (reasons %q)", b.name, reason, has, want, keep[b.name].Reasons)
		}
	}
}

// applyRetention deletes what planRetention decided and nothing else: foreign files, temp files, folders and
// kept backups stay.
func TestApplyRetention_DeletesOnlyWhatThePlanSays(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 20, 30, 0, 0, time.UTC)
	for _, f := range slices.Concat(
		backupsEvery(keyA, now.Add(-40*24*time.Hour), now, 12*time.Hour, nil),
		backupsEvery(keyB, now.Add(-3*24*time.Hour), now, 6*time.Hour, nil),
		[]backupFile{{Name: "notes.txt"}, {Name: foreignNames[1]}, {Name: foreignNames[3]}},
	) {
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	folder := backupFileName(keyA, now.Add(-100*24*time.Hour)) // a folder with a backup's name
	if err := os.Mkdir(filepath.Join(dir, folder), 0o700); err != nil {
		t.Fatal(err)
	}

	files, err := readBackupDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	decisions := planRetention(files, api.Retention{Last: 3, Daily: 2, Weekly: 2}, "", now)
	if err := applyRetention(t.Context(), dir, decisions); err != nil {
		t.Fatal(err)
	}

	want := map[string]bool{"notes.txt": true, foreignNames[1]: true, foreignNames[3]: true, folder: true}
	deleted := 0
	for _, d := range decisions {
		if d.Keep {
			want[d.File.Name] = true
		} else {
			deleted++
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		got[e.Name()] = true
	}
	if deleted == 0 || !maps.Equal(got, want) {
		t.Fatalf("deleted %d; folder holds %q, want %q", deleted, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// applyRetention refuses a list that would delete a file that is not a backup, deleting nothing,
// stops when ctx ends, and takes a file already gone as deleted.
func TestApplyRetention_Refuses(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 15, 0, 0, time.UTC)
	backup := backupFileName(keyA, at)
	gone := backupFileName(keyA, at.Add(-time.Hour))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		decisions []retentionDecision
		want      error // nil: no error
		remains   bool  // the backup file is still there
	}{
		{"a foreign file", context.Background(), []retentionDecision{{File: backupFile{Name: backup}}, {File: backupFile{Name: "notes.txt"}}},
			wallet.ErrInvalidArgument, true},
		{"a path, not a name", context.Background(), []retentionDecision{{File: backupFile{Name: "../" + backup}}}, wallet.ErrInvalidArgument, true},
		{"a cancelled context", cancelled, []retentionDecision{{File: backupFile{Name: backup}}}, context.Canceled, true},
		{"a file already gone", context.Background(), []retentionDecision{{File: backupFile{Name: gone}}, {File: backupFile{Name: backup}}}, nil, false},
		{"a folder named as a bundle, without a manifest", context.Background(),
			[]retentionDecision{{File: backupFile{Name: backup}}, {File: backupFile{Name: BundleName(at), Bundle: true}}}, wallet.ErrInvalidArgument, true},
		{"a file named as a bundle", context.Background(), []retentionDecision{{File: backupFile{Name: BundleName(at)}}}, wallet.ErrInvalidArgument, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{backup, "notes.txt"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(dir, BundleName(at)), 0o700); err != nil {
				t.Fatal(err)
			}
			err := applyRetention(tt.ctx, dir, tt.decisions)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("ApplyRetention: %v, want %v", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, backup)); (err == nil) != tt.remains {
				t.Fatalf("backup remains: %v, want %v", err == nil, tt.remains)
			}
			for _, name := range []string{"notes.txt", BundleName(at)} {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					t.Fatalf("a foreign file was touched: %v", err)
				}
			}
		})
	}
}
