package frontend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
)

// TestDashboard_PlaceHistory: what the Overview says about a destination is about the
// place it names now. A backup folder moved to an empty folder shows "Not backed up here
// yet" and no drill result (it kept the old folder's "just now" and "Passed"); a bundle
// folder whose bundle was made and drilled counts as backed up, with its drill's pass (it
// stayed "Not backed up yet" and "Not yet").
func TestDashboard_PlaceHistory(t *testing.T) {
	tests := []struct {
		name string
		run  func(d *dash) string // sets the destination up, returns its id
		want string               // the row's "Last good backup" cell begins so
		pass bool                 // whether the drill column shows a pass
	}{
		{"moved backup folder", func(d *dash) string {
			d.runTask(api.RouteRun, folderID)
			d.runTask(api.RouteDrill)
			var cfg api.Config
			d.api(api.RouteConfig, nil, &cfg)
			for _, x := range cfg.Destinations {
				if x.ID == folderID {
					x.Path = filepath.Join(d.dir, "elsewhere")
					d.api(api.RouteDestinationPut, x, nil, folderID)
				}
			}
			return folderID
		}, "Not backed up here yet", false},
		{"bundle folder", func(d *dash) string {
			b := api.Destination{ID: "bundles", Name: "Bundles", Kind: api.DestinationBundles, Path: filepath.Join(d.dir, "bundles"),
				Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(24 * time.Hour)}, Pause: &api.Pause{}}
			d.api(api.RouteDestinationAdd, b, nil)
			if got := d.runTask(api.RouteRun, b.ID); got.State != api.TaskSucceeded {
				d.t.Fatalf("bundle: %s %s", got.State, got.Error)
			}
			d.runTask(api.RouteDrill)
			return b.ID
		}, "just now", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDash(t)
			id := tt.run(d)
			d.do(chromedp.Reload())
			row := `[data-destination=` + id + `]`
			d.waitFor(`document.querySelector('`+row+` [data-testid=last-success]')?.textContent.startsWith('`+tt.want+`')`, "the row's last good backup")
			passed := eval[bool](d, `!!document.querySelector('`+row+` [data-testid=drill-passed]')`)
			if passed != tt.pass {
				t.Errorf("drill column shows a pass: %v, want %v (%q)", passed, tt.pass, d.text(row))
			}
			if !tt.pass && !strings.Contains(d.text(row), "Not backed up here yet") {
				t.Errorf("the row says %q", d.text(row))
			}
			d.shot("place-" + strings.ReplaceAll(tt.name, " ", "-"))
		})
	}
}

// TestDashboard_SamePlaceTwiceRefused: adding a backup folder on the folder another
// destination uses, spelled otherwise, is refused in the editor with the destination that
// is there, and nothing is saved (it was accepted, and one file was counted twice).
func TestDashboard_SamePlaceTwiceRefused(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	d.page("destinations")
	d.addFolder("Second", filepath.Join(d.dir, "backups")+"/.")
	d.waitFor(`document.querySelector('form.editor')?.textContent.includes('already used by the destination Backup folder')`, "the refusal")
	d.shot("same-place-twice")
	var cfg api.Config
	d.api(api.RouteConfig, nil, &cfg)
	if len(cfg.Destinations) != 2 {
		t.Errorf("the second destination was saved: %+v", cfg.Destinations)
	}
}

// TestDashboard_UnpluggedFolder: a backup folder whose disk is unplugged (the folder renamed
// away, its mount point left empty) shows as failing on the Overview and the Destinations
// page with "is not there: is the disk connected?" and what to do, nothing is written under
// the mount point (it was created again there and the backup called a success), and with
// the disk back the next run brings the row back to OK.
func TestDashboard_UnpluggedFolder(t *testing.T) {
	d := newDash(t)
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("first backup: %s %s", got.State, got.Error)
	}
	folder, away := filepath.Join(d.dir, "backups"), filepath.Join(d.dir, "unplugged")
	if err := os.Rename(folder, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o700); err != nil { // the empty mount point
		t.Fatal(err)
	}
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskFailed {
		t.Fatalf("the run with the disk unplugged: %s %s", got.State, got.Error)
	}
	if entries, err := os.ReadDir(folder); err != nil || len(entries) != 0 {
		t.Errorf("the run wrote under the mount point: %v, %v", entries, err)
	}

	row := `[data-destination=` + folderID + `]`
	d.do(chromedp.Reload())
	d.waitFor(`document.querySelector('`+row+`')?.textContent.includes('is not there: is the disk connected?')`, "the unplugged folder on the Overview")
	if got := d.text(row); !strings.Contains(got, "Failing") || !strings.Contains(got, folder) {
		t.Errorf("the Overview row says %q", got)
	}
	d.shot("unplugged-folder")
	d.page("destinations")
	d.waitFor(`document.querySelector('[data-destination=`+folderID+`] .notice.error')?.textContent.includes('Connect the disk')`, "the hint on the Destinations page")

	if err := os.Remove(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, folder); err != nil {
		t.Fatal(err)
	}
	if got := d.runTask(api.RouteRun, folderID); got.State != api.TaskSucceeded {
		t.Fatalf("the run with the disk back: %s %s", got.State, got.Error)
	}
	d.page("overview")
	d.waitFor(`!document.querySelector('`+row+`')?.textContent.includes('Failing')`, "the row back to OK")
}
