package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"walletsync/agent/api"

	"walletsync/localstore"
)

// overviewOf reads the overview through the API and returns the view of destination id.
func overviewOf(t *testing.T, c *api.Client, id string) (api.Overview, api.DestinationView) {
	t.Helper()
	var ov api.Overview
	if err := c.Call(context.Background(), api.RouteOverview, nil, &ov); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ov.Destinations, func(v api.DestinationView) bool { return v.ID == id })
	if i < 0 {
		t.Fatalf("no destination %s in %+v", id, ov.Destinations)
	}
	return ov, ov.Destinations[i]
}

// TestAgent_MovedDestinationIsANewPlace: a destination whose path changes keeps none of
// the old place's history (last good backup, drill result), its Backups page and the drill
// see only the new folder, and, when not paused, it runs at once.
func TestAgent_MovedDestinationIsANewPlace(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		paused bool
	}{
		{"backup folder, paused", "folder", true},
		{"backup wallet file, paused", "file", true},
		{"backup folder, runs at once", "folder", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAgentEnv(t, localstore.FixtureSmall)
			a := launchAgent(t, e.opts)
			c := apiClient(t, e.opts.Dir)
			if task := runAndWait(t, c, a, api.RouteRun, tt.id); task.State != api.TaskSucceeded {
				t.Fatalf("first run: %+v", task)
			}
			runAndWait(t, c, a, api.RouteDrill)
			if _, v := overviewOf(t, c, tt.id); v.LastSuccess.IsZero() || tt.id == "folder" && v.LastVerified.IsZero() {
				t.Fatalf("before the move: %+v", v)
			}

			d, err := findDestination(a.config(), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			d.Path = filepath.Join(e.dir, "elsewhere", filepath.Base(d.Path))
			if err := os.MkdirAll(filepath.Join(e.dir, "elsewhere", "backups"), 0o700); err != nil {
				t.Fatal(err)
			}
			if !tt.paused {
				d.Pause = nil
			}
			var cfg api.Config
			if err := c.Call(context.Background(), api.RouteDestinationPut, d, &cfg, tt.id); err != nil {
				t.Fatal(err)
			}
			ov, v := overviewOf(t, c, tt.id)
			if !tt.paused {
				if v.Running == nil {
					t.Fatalf("a moved destination did not run at once: %+v", v)
				}
				if done, err := a.tasks.Wait(waitCtx(t), v.Running.ID); err != nil || done.State != api.TaskSucceeded || done.Place != a.placeOf(d) {
					t.Fatalf("the run at the new place: %+v, %v", done, err)
				}
				if _, v = overviewOf(t, c, tt.id); v.LastSuccess.IsZero() {
					t.Fatalf("after the run at the new place: %+v", v)
				}
				return
			}
			if !v.LastSuccess.IsZero() || !v.LastVerified.IsZero() || !v.LastConfirmed.IsZero() || v.Running != nil {
				t.Fatalf("a moved destination kept the old place's history: %+v", v)
			}
			if ov.Healthy {
				t.Errorf("health after the move: %q", ov.Health)
			}
			if tt.id != "folder" {
				return
			}
			var listing api.BackupListing
			if err := c.Call(context.Background(), api.RouteBackups, nil, &listing, tt.id); err != nil {
				t.Fatal(err)
			}
			if len(listing.Files) != 0 {
				t.Errorf("the new folder lists %+v", listing.Files)
			}
			drill := runAndWait(t, c, a, api.RouteDrill)
			var res api.DrillResult
			if err := jsonUnmarshal(drill.Result, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 0 {
				t.Errorf("the drill checked a file of the old place: %+v", res.Files)
			}
		})
	}
}

// TestAgent_BundlesCountAsBackups: a bundle folder's runs are good backups on the
// overview (last good backup, health) and its drill result shows.
func TestAgent_BundlesCountAsBackups(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	cfg, err := loadConfig(e.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Destinations = []api.Destination{{ID: "bundles", Name: "Bundles", Kind: api.DestinationBundles, Path: filepath.Join(e.dir, "bundles"),
		Schedule: cfg.Drill, Pause: &api.Pause{}}}
	if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	if task := runAndWait(t, c, a, api.RouteRun, "bundles"); task.State != api.TaskSucceeded {
		t.Fatalf("bundle run: %+v", task)
	}
	if drill := runAndWait(t, c, a, api.RouteDrill); drill.State != api.TaskSucceeded {
		t.Fatalf("drill: %+v", drill)
	}
	ov, v := overviewOf(t, c, "bundles")
	if v.LastSuccess.IsZero() || v.LastVerified.IsZero() || !ov.Healthy {
		t.Fatalf("a made and drilled bundle does not count: %q %+v", ov.Health, v)
	}
	if a.lastSuccess("bundles").IsZero() {
		t.Error("the timetable does not count the bundle run")
	}
}

// TestAgent_RunChecksThePlaceAsItResolves: a destination's path that became a link after
// it was added (to the wallet, to its -wal, into the agent's data folder) is refused when
// it runs, before anything is written: the wallet stays byte-identical.
func TestAgent_RunChecksThePlaceAsItResolves(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		target func(e agentEnv) string // what the destination's path is made a link to
	}{
		{"backup wallet linked to the wallet", "file", func(e agentEnv) string { return e.wallet }},
		{"backup wallet linked to the wallet's -wal", "file", func(e agentEnv) string { return e.wallet + "-wal" }},
		{"backup wallet linked into the data folder", "file", func(e agentEnv) string { return filepath.Join(string(e.opts.Dir), "new.sqlite") }},
		{"backup folder linked into the data folder", "folder", func(e agentEnv) string { return string(e.opts.Dir) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAgentEnv(t, localstore.FixtureSmall)
			a := launchAgent(t, e.opts)
			c := apiClient(t, e.opts.Dir)
			d, err := findDestination(a.config(), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			target := tt.target(e)
			if err := os.WriteFile(e.wallet+"-wal", nil, 0o600); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			before := walletBytes(t, e.wallet)
			if err := os.Symlink(target, d.Path); err != nil {
				t.Fatal(err)
			}
			task := runAndWait(t, c, a, api.RouteRun, tt.id)
			if task.State != api.TaskFailed || !strings.Contains(task.Error, ErrPlaceRefused.Error()) {
				t.Fatalf("run through a link to %s: %+v", target, task)
			}
			if after := walletBytes(t, e.wallet); after != before {
				t.Errorf("the wallet changed: %s, was %s", after, before)
			}
			if _, err := os.Stat(filepath.Join(string(e.opts.Dir), "new.sqlite")); !os.IsNotExist(err) {
				t.Errorf("a file was made in the data folder: %v", err)
			}
		})
	}
}

// walletBytes is a digest of the wallet file and its -wal and -shm, as they are.
func walletBytes(t *testing.T, wallet string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range []string{wallet, wallet + "-wal", wallet + "-shm"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAgent_SamePlaceTwiceIsRefused: a destination on a place another destination uses,
// under any spelling, or a folder inside another's folder, is refused when added or moved
// there; the config keeps what it had.
func TestAgent_SamePlaceTwiceIsRefused(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	if err := os.MkdirAll(e.folder, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.dir, "link-to-backups")
	if err := os.Symlink(e.folder, link); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	tests := []struct {
		name string
		kind api.DestinationKind
		path string
	}{
		{"the same folder, another kind", api.DestinationBundles, e.folder},
		{"the same folder, spelled otherwise", api.DestinationFolder, e.folder + "/./"},
		{"the same folder through a link", api.DestinationBundles, link},
		{"a folder inside the backup folder", api.DestinationBundles, filepath.Join(e.folder, "bundles")},
		{"the backup wallet file as a folder", api.DestinationFolder, e.backupWallet},
		{"a folder holding the backup wallet", api.DestinationFolder, e.dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := api.Destination{ID: "second", Name: "Second", Kind: tt.kind, Path: tt.path, Schedule: a.config().Drill, Pause: &api.Pause{}}
			err := c.Call(context.Background(), api.RouteDestinationAdd, d, nil)
			if err == nil || !strings.Contains(err.Error(), "already used by the destination") {
				t.Fatalf("added %s: %v", tt.path, err)
			}
			moved, err := findDestination(a.config(), "file")
			if err != nil {
				t.Fatal(err)
			}
			moved.Kind, moved.Path = tt.kind, tt.path
			if tt.kind == api.DestinationFolder && tt.path == e.backupWallet {
				return // the backup wallet itself, which it is already
			}
			if err := c.Call(context.Background(), api.RouteDestinationPut, moved, nil, "file"); err == nil || !strings.Contains(err.Error(), "already used by the destination") {
				t.Fatalf("moved the backup wallet to %s: %v", tt.path, err)
			}
			if n := len(a.config().Destinations); n != 2 {
				t.Errorf("%d destinations after a refusal", n)
			}
		})
	}
}

// TestAgent_MissingDiskIsNotCreatedAgain: a folder (or a backup wallet file's folder) that
// a destination wrote to before and that is gone now, or left empty like the mount point
// of an unplugged disk, fails the run loudly and is not created again; once the disk is
// back, the next run proceeds.
func TestAgent_MissingDiskIsNotCreatedAgain(t *testing.T) {
	tests := []struct {
		name  string
		id    string
		kind  api.DestinationKind
		sub   string // the destination's path inside the disk folder ("" for the folder itself)
		empty bool   // the disk's folder is left behind empty (a mount point)
	}{
		{"backup folder gone", "folder", api.DestinationFolder, "", false},
		{"backup folder left empty", "folder", api.DestinationFolder, "", true},
		{"bundle folder gone", "bundles", api.DestinationBundles, "", false},
		{"bundle folder left empty", "bundles", api.DestinationBundles, "", true},
		{"backup wallet file's folder gone", "file", api.DestinationSQLite, "backup.sqlite", false},
		{"backup wallet file's folder left empty", "file", api.DestinationSQLite, "backup.sqlite", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAgentEnv(t, localstore.FixtureSmall)
			disk := filepath.Join(e.dir, "disk")
			path := disk
			if tt.sub != "" {
				path = filepath.Join(disk, tt.sub)
				if err := os.Mkdir(disk, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := loadConfig(e.opts.ConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Destinations = []api.Destination{{ID: tt.id, Name: "Disk", Kind: tt.kind, Path: path, Schedule: cfg.Drill, Pause: &api.Pause{}}}
			if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
				t.Fatal(err)
			}
			a := launchAgent(t, e.opts)
			c := apiClient(t, e.opts.Dir)
			if task := runAndWait(t, c, a, api.RouteRun, tt.id); task.State != api.TaskSucceeded {
				t.Fatalf("first run: %+v", task)
			}

			away := filepath.Join(e.dir, "unplugged")
			if err := os.Rename(disk, away); err != nil {
				t.Fatal(err)
			}
			if tt.empty {
				if err := os.Mkdir(disk, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			task := runAndWait(t, c, a, api.RouteRun, tt.id)
			if task.State != api.TaskFailed || !strings.Contains(task.Error, "is not there: is the disk connected?") {
				t.Fatalf("run with the disk unplugged: %+v", task)
			}
			entries, err := os.ReadDir(disk)
			switch {
			case !tt.empty && !os.IsNotExist(err):
				t.Errorf("the folder was created again: %v, %v", entries, err)
			case tt.empty && (err != nil || len(entries) != 0):
				t.Errorf("the empty mount point was written to: %v, %v", entries, err)
			}

			if tt.empty {
				if err := os.Remove(disk); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Rename(away, disk); err != nil {
				t.Fatal(err)
			}
			if task := runAndWait(t, c, a, api.RouteRun, tt.id); task.State != api.TaskSucceeded {
				t.Fatalf("run with the disk back: %+v", task)
			}
		})
	}
}

// TestAgent_RetentionDeletesOnlyItsOwn: two destinations that share one folder (a config
// written by hand, or by a walletsync that let them) each prune only what they wrote: a run
// of the first never deletes a backup or bundle of the second, and its Backups page lists
// only entries of its own kind.
func TestAgent_RetentionDeletesOnlyItsOwn(t *testing.T) {
	tests := []struct {
		name         string
		first, other api.DestinationKind
	}{
		{"two backup folders", api.DestinationFolder, api.DestinationFolder},
		{"two bundle folders", api.DestinationBundles, api.DestinationBundles},
		{"a backup folder and a bundle folder", api.DestinationFolder, api.DestinationBundles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAgentEnv(t, localstore.FixtureSmall)
			cfg, err := loadConfig(e.opts.ConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Retention = api.Retention{Last: 1}
			cfg.Destinations = []api.Destination{
				{ID: "first", Name: "First", Kind: tt.first, Path: e.folder, Schedule: cfg.Drill, Pause: &api.Pause{}},
				{ID: "other", Name: "Other", Kind: tt.other, Path: e.folder, Schedule: cfg.Drill, Pause: &api.Pause{}},
			}
			if err := SaveConfig(e.opts.ConfigPath, cfg); err != nil {
				t.Fatal(err)
			}
			a := launchAgent(t, e.opts)
			c := apiClient(t, e.opts.Dir)
			for _, id := range []string{"first", "other", "first"} {
				if task := runAndWait(t, c, a, api.RouteRun, id); task.State != api.TaskSucceeded {
					t.Fatalf("run of %s: %+v", id, task)
				}
			}
			others, err := a.state.Backups(t.Context(), "other")
			if err != nil || len(others) == 0 {
				t.Fatalf("the other destination's backups: %v, %v", others, err)
			}
			for _, r := range others {
				if _, err := os.Stat(r.Path); err != nil {
					t.Errorf("the first destination's retention deleted the other's %s: %v", filepath.Base(r.Path), err)
				}
			}
			// Last: 1 keeps the newest, and the newest a restore drill passed when that is an
			// older one (the drill after the first backup may have checked the first run's).
			firsts, err := a.state.Backups(t.Context(), "first")
			if err != nil || len(firsts) == 0 || len(firsts) > 2 || (len(firsts) == 2 && firsts[1].VerifiedAt.IsZero()) {
				t.Fatalf("the first destination keeps %+v of its own (want the newest, and at most the newest verified; Last: 1): %v", firsts, err)
			}
			var listing api.BackupListing
			if err := c.Call(context.Background(), api.RouteBackups, nil, &listing, "first"); err != nil {
				t.Fatal(err)
			}
			for _, f := range listing.Files {
				if isBundle := strings.HasPrefix(f.Name, backupNamePrefix+bundlePrefix+"-"); isBundle != (tt.first == api.DestinationBundles) {
					t.Errorf("the first destination's Backups page lists %s, of another kind", f.Name)
				}
			}
		})
	}
}

// TestAgent_FolderWithoutMarkerButItsBackups: a backup folder that an older walletsync wrote
// (its backups recorded, no marker yet) is the place written before, not a missing disk:
// the run proceeds and leaves the marker, and an empty folder in its stead still fails.
func TestAgent_FolderWithoutMarkerButItsBackups(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatalf("first run: %+v", task)
	}
	marker := filepath.Join(e.folder, PlaceMarkerPrefix+"folder")
	// As an older walletsync left it: no marker, and no record of the place.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if err := a.state.ForgetPlaces(t.Context(), "folder"); err != nil {
		t.Fatal(err)
	}
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatalf("run in the folder an older walletsync wrote: %+v", task)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the run left no marker: %v", err)
	}

	if err := os.Rename(e.folder, e.folder+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.folder, 0o700); err != nil {
		t.Fatal(err)
	}
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskFailed || !strings.Contains(task.Error, "is not there: is the disk connected?") {
		t.Fatalf("run on an empty folder in its stead: %+v", task)
	}
}
