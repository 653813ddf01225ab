package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
