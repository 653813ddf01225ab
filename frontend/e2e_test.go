package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"walletsync/agent/api"
	"walletsync/frontend"
	"walletsync/portable"
	"walletsync/wallet"
)

// digits reads a number as the page formats it ("10,000").
func digits(s string) int64 {
	n, _ := strconv.ParseInt(regexp.MustCompile(`\D`).ReplaceAllString(s, ""), 10, 64)
	return n
}

func TestDashboard_LoginShowsOverview(t *testing.T) {
	d := newDash(t)
	var ov api.Overview
	d.api(api.RouteOverview, nil, &ov)
	d.waitFor(`document.querySelector('.identity')`, "the wallet's identity")

	if got := d.text("[data-testid=health]"); got != ov.Health {
		t.Errorf("health sentence %q, the API says %q", got, ov.Health)
	}
	id := ov.Wallets[0].Identities[0]
	shown := eval[map[string]string](d, `Object.fromEntries([...document.querySelectorAll('.all-tables tr[data-table]')]
		.map((r) => [r.dataset.table, r.cells[1].textContent]))`)
	if len(shown) != len(id.Counts) {
		t.Errorf("the page lists %d tables, the API %d", len(shown), len(id.Counts))
	}
	for table, n := range id.Counts {
		if got := digits(shown[string(table)]); got != n {
			t.Errorf("%s: the page shows %q, the API says %d", table, shown[string(table)], n)
		}
	}
	if got := digits(d.text(".counts [data-table=tx_labels] dd")); got != id.Counts[wallet.TableTxLabels] {
		t.Errorf("labels headline %d, want %d", got, id.Counts[wallet.TableTxLabels])
	}
	if key := d.text(".identity code"); !strings.HasPrefix(key, id.IdentityKey[:8]) || !strings.HasSuffix(key, id.IdentityKey[58:]) {
		t.Errorf("identity shows %q, want the short form of %s", key, id.IdentityKey)
	}
	if got := d.text(".card-head .badge"); got != "Test network" {
		t.Errorf("chain shows %q", got)
	}
	if got := eval[int](d, `document.querySelectorAll('.destinations-table tbody tr').length`); got != len(ov.Destinations) {
		t.Errorf("%d destinations shown, the API has %d", got, len(ov.Destinations))
	}
	d.shot("overview")
	t.Logf("first contentful paint of the dashboard: %.0f ms", eval[float64](d, `performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1`))
}

// recordPanel starts recording, in the page, every state, phase and Cancel label that the
// destination's progress panel shows: renders between two polls are not missed.
func (d *dash) recordPanel(dest string) {
	d.t.Helper()
	eval[bool](d, fmt.Sprintf(`window.seen = {states: new Set(), phases: new Set(), pages: new Set(), buttons: new Set()};
		new MutationObserver(() => {
			const p = document.querySelector('[data-destination=%q] .task-panel');
			if (!p) return;
			seen.states.add(p.dataset.state);
			seen.phases.add(p.dataset.phase);
			seen.pages.add(p.querySelector('.stats dd')?.textContent);
			seen.buttons.add(p.querySelector('.actions button').textContent);
		}).observe(document.querySelector('main'), {subtree: true, childList: true, attributes: true, characterData: true});
		true`, dest))
}

func (d *dash) seen(what string) []string {
	d.t.Helper()
	return eval[[]string](d, fmt.Sprintf(`[...seen[%q]]`, what))
}

// newestTask returns the newest task of kind (on target, unless it is ""), from the API.
func (d *dash) newestTask(kind api.TaskKind, target string) api.Task {
	d.t.Helper()
	var ts []api.Task
	d.api(api.RouteTasks, nil, &ts)
	for _, t := range ts {
		if t.Kind == kind && (target == "" || t.Target == target) {
			return t
		}
	}
	d.t.Fatalf("no %s task on %s", kind, target)
	return api.Task{}
}

func TestDashboard_SyncProgressMovesThroughStates(t *testing.T) {
	d := newDash(t)
	d.page("destinations")
	d.recordPanel(fileID)
	d.do(chromedp.Click(byText(`[data-destination=backup-file] button`, "Run now")))
	d.waitFor(`document.querySelector('[data-destination=backup-file] .task-panel[data-state=running]')`, "the progress panel")
	d.shot("running")
	d.waitFor(`document.querySelector('[data-destination=backup-file] .task-panel[data-state=succeeded]')`, "the sync to complete")
	d.shot("completed")

	var moving []string
	for _, p := range d.seen("phases") {
		if slices.Contains([]string{"reading", "preparing", "committing", "committed"}, p) {
			moving = append(moving, p)
		}
	}
	// The panel draws once per frame, so which of a page's states a frame catches depends
	// on how fast the machine is (a fast one may show only "committing", the longest): at
	// least one, and the page counter moving below, say the panel follows the pages.
	if len(moving) < 1 {
		t.Errorf("the panel showed page states %v, want some of reading, preparing, committing, committed", d.seen("phases"))
	}
	if pages := d.seen("pages"); len(pages) < 3 {
		t.Errorf("the page counter took the values %v: it did not move", pages)
	}
	task := d.newestTask(api.KindSync, fileID)
	if task.State != api.TaskSucceeded {
		t.Fatalf("sync %s: %s", task.State, task.Error)
	}
	shown := eval[map[string]string](d, `Object.fromEntries([...document.querySelectorAll('[data-destination=backup-file] .task-panel .stats div')]
		.map((e) => [e.querySelector('dt').textContent, e.querySelector('dd').textContent]))`)
	if digits(shown["Pages"]) != task.Counters.Pages || digits(strings.Fields(shown["Rows"])[0]) != task.Counters.Rows {
		t.Errorf("the panel ends at %v, the task at %+v", shown, task.Counters)
	}
}

func TestDashboard_CancelShowsCheckpoint(t *testing.T) {
	d := newDash(t)
	d.page("destinations")
	d.recordPanel(fileID)
	d.do(chromedp.Click(byText(`[data-destination=backup-file] button`, "Run now")))
	// Cancel once a few pages are acknowledged, so that there is a checkpoint to keep.
	d.waitFor(`Number(document.querySelector('[data-destination=backup-file] .task-panel .stats dd')?.textContent.replace(/\D/g, '')) >= 3`, "three pages")
	d.do(chromedp.Click(byText(`[data-destination=backup-file] .task-panel button`, "Cancel")))
	d.waitFor(`document.querySelector('[data-destination=backup-file] .task-panel[data-state=cancelled]')`, "the cancelled state")
	d.shot("cancelled")

	if buttons := d.seen("buttons"); !slices.Contains(buttons, "Cancelling…") {
		t.Errorf("Cancel never read \"Cancelling…\" before the stop (labels %v)", buttons)
	}
	task := d.newestTask(api.KindSync, fileID)
	if task.State != api.TaskCancelled {
		t.Fatalf("the task is %s, want cancelled", task.State)
	}
	var res api.SyncResult
	if err := json.Unmarshal(task.Result, &res); err != nil || len(res.Sessions) == 0 {
		t.Fatalf("cancelled sync result %s: %v", task.Result, err)
	}
	cp := res.Sessions[len(res.Sessions)-1].Checkpoint
	line := d.text("[data-destination=backup-file] .state-line")
	want := fmt.Sprintf("checkpoint %d (", cp.Seq)
	// The wallet keeps a change journal, so the next run really continues from there.
	if !strings.Contains(line, "Cancelled safely") || !strings.Contains(line, want) || cp.Seq < 1 ||
		!strings.Contains(line, "the next run continues from there") {
		t.Errorf("the panel says %q; the acknowledged checkpoint is %d", line, cp.Seq)
	}
	if got := d.text("[data-destination=backup-file] .phases li.current"); got != "Cancelled" {
		t.Errorf("the last page state reads %q, want Cancelled", got)
	}
	// The promise kept: the next run continues at that checkpoint.
	if next := d.runTask(api.RouteRun, fileID); next.State != api.TaskSucceeded || !resumedFromCheckpoint(t, next) {
		t.Errorf("the next run %s, result %s: it did not continue from the checkpoint", next.State, next.Result)
	}
}

func TestDashboard_DestinationEditor(t *testing.T) {
	d := newDash(t)
	config := func() (api.Destination, bool) {
		var cfg api.Config
		d.api(api.RouteConfig, nil, &cfg)
		for _, dest := range cfg.Destinations {
			if dest.ID == "usb-disk" {
				return dest, true
			}
		}
		return api.Destination{}, false
	}
	folder := filepath.Join(d.dir, "usb")
	d.page("destinations")
	d.do(chromedp.Click(byText("button", "Add a destination")))
	d.waitFor(`document.querySelector('form.editor')`, "the editor")
	// Each choice may redraw part of the form, so each step waits until the form shows the
	// one before it: a click on an element that a redraw replaced is lost.
	d.do(chromedp.SendKeys(chromedp.CSS(`form.editor input[type=text]`), "USB disk"),
		chromedp.Click(chromedp.CSS(`form.editor input[value=folder]`)))
	d.waitFor(`document.querySelector('form.editor input[value=folder]')?.checked && document.querySelector('form.editor input.mono')`, "the folder kind")
	d.do(chromedp.SendKeys(chromedp.CSS(`form.editor input.mono`), folder),
		chromedp.Click(chromedp.CSS(`form.editor input[value=daily]`)))
	d.waitFor(`document.querySelector('form.editor input[value=daily]')?.checked && document.querySelector('form.editor input[type=time]')`, "the daily schedule")
	d.do(chromedp.SetValue(chromedp.CSS(`form.editor input[type=time]`), "02:30"))
	d.waitFor(`document.querySelector('form.editor input[type=time]')?.value === '02:30' && document.querySelector('form.editor input[value=daily]')?.checked && document.querySelector('form.editor input.mono')?.value !== ''`, "the filled form")
	d.do(chromedp.Click(byText(`form.editor button`, "Add destination")))
	d.waitFor(`document.querySelector('[data-destination=usb-disk]')`, "the new destination")
	dest, ok := config()
	if !ok || dest.Name != "USB disk" || dest.Kind != api.DestinationFolder || dest.Path != folder ||
		dest.Schedule.Kind != api.ScheduleDaily || dest.Schedule.At != "02:30" {
		t.Fatalf("the agent has %+v", dest)
	}

	d.do(chromedp.Click(byText(`[data-destination=usb-disk] summary`, "Pause")),
		chromedp.Click(byText(`[data-destination=usb-disk] button`, "For 1 hour")))
	d.waitFor(`[...document.querySelectorAll('[data-destination=usb-disk] .badge')].some((b) => b.textContent.startsWith('Paused until'))`, "the pause")
	dest, _ = config()
	if left := time.Until(dest.Pause.Until); dest.Pause == nil || left < 55*time.Minute || left > time.Hour {
		t.Errorf("paused %+v, want for an hour", dest.Pause)
	}

	d.do(chromedp.Click(byText(`[data-destination=usb-disk] button`, "Edit")))
	d.waitFor(`document.querySelector('[data-destination=usb-disk] form.editor')`, "the editor")
	d.do(chromedp.SetValue(chromedp.CSS(`[data-destination=usb-disk] form.editor input[type=text]`), "USB stick"),
		chromedp.Click(byText(`[data-destination=usb-disk] form.editor button`, "Save changes")))
	d.waitFor(`document.querySelector('[data-destination=usb-disk] h2')?.textContent === 'USB stick'`, "the new name")
	if dest, _ = config(); dest.Name != "USB stick" || dest.Pause == nil {
		t.Errorf("after the edit the agent has %+v (the pause must stay)", dest)
	}
	d.shot("edited")
	d.do(chromedp.Click(byText(`[data-destination=usb-disk] button`, "Resume")))
	d.waitFor(`![...document.querySelectorAll('[data-destination=usb-disk] .badge')].some((b) => b.textContent.startsWith('Paused'))`, "the resume")
	if dest, _ = config(); dest.Pause != nil {
		t.Errorf("resumed, the agent still has the pause %+v", dest.Pause)
	}

	d.do(chromedp.Click(byText(`[data-destination=usb-disk] button`, "Remove")))
	d.waitFor(`document.querySelector('dialog[open]')`, "the question")
	d.shot("remove")
	d.do(chromedp.Click(byText(`dialog button`, "Remove")))
	d.waitFor(`!document.querySelector('[data-destination=usb-disk]')`, "the destination to go")
	if _, ok := config(); ok {
		t.Error("the agent still has the removed destination")
	}
}

func TestDashboard_BackupsVerifyNow(t *testing.T) {
	d := newDash(t)
	var task api.Task
	d.api(api.RouteRun, nil, &task, folderID)
	if got := d.wait(task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("backup: %s %s", got.State, got.Error)
	}
	d.page("backups")
	d.waitFor(`document.querySelector('.backups-table tbody tr')`, "the backup file")
	d.do(chromedp.Click(byText(`.backups-table button`, "Verify now")))
	d.waitFor(`document.querySelector('.backups-table tbody tr .badge')?.textContent === 'Verified'`, "the verified file")
	d.shot("verified")
	var listing api.BackupListing
	d.api(api.RouteBackups, nil, &listing, folderID)
	if len(listing.Files) != 1 || listing.Files[0].Record == nil || listing.Files[0].Record.VerifiedAt.IsZero() {
		t.Errorf("the agent lists %+v", listing.Files)
	}
}

func TestDashboard_ExportWizardWritesFile(t *testing.T) {
	d := newDash(t)
	target := filepath.Join(d.dir, "exported.brc39")
	d.page("export")
	d.do(chromedp.Click(byText(`.wizard button`, "Next")))
	d.waitFor(`document.querySelector('.wizard input[name=path]')`, "the where step")
	d.do(chromedp.SetValue(chromedp.CSS(`.wizard input[name=path]`), target),
		chromedp.Click(byText(`.wizard button`, "Next")))
	d.waitFor(`document.querySelector('.password-pair')`, "the password step")
	d.do(chromedp.SendKeys(chromedp.JSPath(`document.querySelectorAll('.password-pair input')[0]`), "orbit lantern quietly 42"),
		chromedp.SendKeys(chromedp.JSPath(`document.querySelectorAll('.password-pair input')[1]`), "orbit lantern quietly 42"))
	if s := d.text(".strength-label"); !strings.Contains(s, "trong") {
		t.Errorf("strength hint %q for a four-word password", s)
	}
	d.shot("password")
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[type=checkbox]`)), chromedp.Click(byText(`.wizard button`, "Export")))
	d.waitFor(`document.querySelector('[data-testid=export-result]')`, "the export's result")
	d.shot("result")

	path, sum := d.text("[data-testid=export-path]"), d.text("[data-testid=export-sha256]")
	if path != target {
		t.Errorf("the result names %q, want %q", path, target)
	}
	if got := fileSHA256(t, target); got != sum {
		t.Errorf("the file's SHA-256 is %s, the page says %s", got, sum)
	}
}

// dropFile drags a file from outside the page and drops it on the element, as a person
// drops one from their file manager.
func (d *dash) dropFile(css, path string) {
	d.t.Helper()
	// Into view first, once nothing above it is still loading: a drop lands where the
	// pointer is, which must be on the drop zone (the Restore page's list of backup files
	// arrives after the page and pushes the zone down, maybe below the fold).
	d.waitFor(`![...document.querySelectorAll('main p.muted')].some((p) => p.textContent === 'Loading…')`, "the page loaded")
	at := eval[[]float64](d, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: 'center'});
		const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, css))
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		data := &input.DragData{Items: []*input.DragDataItem{}, Files: []string{path}, DragOperationsMask: 1}
		for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
			if _, err := cdp.Call(ctx, tg, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: at[0], Y: at[1], Data: data}); err != nil {
				return err
			}
		}
		return nil
	}))
}

// walletState is the wallet file and its log as they are on disk.
func (d *dash) walletState() string {
	d.t.Helper()
	state := fileSHA256(d.t, d.wallet)
	if _, err := os.Stat(d.wallet + "-wal"); err == nil {
		state += "+" + fileSHA256(d.t, d.wallet+"-wal")
	}
	return state
}

// checkFile runs the restore wizard to its check with a password.
func (d *dash) checkFile(password string) {
	d.t.Helper()
	d.waitFor(`document.querySelector('.wizard input[type=password]')`, "the password step")
	d.do(chromedp.SendKeys(chromedp.CSS(`.wizard input[type=password]`), password),
		chromedp.Click(byText(`.wizard button`, "Check the file")))
}

func TestDashboard_ImportPreviewMatchesAPI(t *testing.T) {
	d := newDash(t)
	before := d.walletState()

	d.page("restore")
	d.dropFile(".dropzone", backupFile)
	d.checkFile(backupFilePassword)
	d.waitFor(`document.querySelector('[data-testid=import-preview]')`, "the preview")
	d.shot("preview")

	// The API's own answer to the page's request: the preview task's result.
	task := d.newestTask(api.KindImportPreview, "")
	var preview portable.PreviewResult
	if err := json.Unmarshal(task.Result, &preview); err != nil {
		t.Fatalf("preview result %s: %v", task.Result, err)
	}
	shown := eval[map[string][]string](d, `Object.fromEntries([...document.querySelectorAll('.preview-table tbody tr')]
		.map((r) => [r.dataset.table, [...r.cells].slice(1).map((c) => c.textContent)]))`)
	if task.State != api.TaskSucceeded || len(preview.Counts) == 0 {
		t.Fatalf("the API's preview: %s %s", task.State, task.Error)
	}
	all := maps.Clone(preview.Plan)
	for table := range preview.Counts {
		all[table] = preview.Plan[table]
	}
	if len(shown) != len(all) {
		t.Errorf("the page lists %d tables, the API %d", len(shown), len(all))
	}
	for table, c := range all {
		want := []int64{preview.Counts[table], c.Inserts, c.Updates, c.Unchanged, c.Older}
		var got []int64
		for _, s := range shown[string(table)] {
			got = append(got, digits(s))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the page shows %v, the API %v", table, got, want)
		}
	}
	var total []int64
	for _, c := range eval[[]string](d, `[...document.querySelectorAll('.preview-table tfoot td')].map((c) => c.textContent)`)[1:] {
		total = append(total, digits(c))
	}
	if want := []int64{preview.Total.Inserts, preview.Total.Updates, preview.Total.Unchanged, preview.Total.Older}; !slices.Equal(total, want) {
		t.Errorf("the totals read %v, the API's %v", total, want)
	}
	if got := d.text("[data-testid=preview-chain]"); !strings.HasPrefix(got, "Test network") {
		t.Errorf("chain %q", got)
	}
	if d.walletState() != before {
		t.Error("the wallet changed before the import was confirmed")
	}

	// The confirm is explicit: the button waits for the checkbox.
	if !eval[bool](d, `document.querySelector('[data-testid=import-preview] button[type=submit]').disabled`) {
		t.Error("the import button works before the confirm box is ticked")
	}
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=import-preview] input[type=checkbox]`)),
		chromedp.Click(byText(`.wizard button`, "Import now")))
	d.waitFor(`document.querySelector('[data-testid=import-result]')`, "the import's result")
	d.shot("imported")
	imported := d.newestTask(api.KindImport, "")
	var res portable.ImportResult
	if err := json.Unmarshal(imported.Result, &res); err != nil || imported.State != api.TaskSucceeded {
		t.Fatalf("import %s %s: %v", imported.State, imported.Error, err)
	}
	if got := d.text("[data-testid=import-result] .notice"); !strings.Contains(got, fmt.Sprintf("%d rows added and %d updated", res.Inserts, res.Updates)) {
		t.Errorf("the result says %q; the import inserted %d and updated %d", got, res.Inserts, res.Updates)
	}
}

func TestDashboard_WrongPasswordChangesNothing(t *testing.T) {
	d := newDash(t)
	before := d.walletState()

	d.page("restore")
	d.do(chromedp.SetValue(chromedp.CSS(`.wizard input[name=path]`), backupFile), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.checkFile("not the password")
	d.waitFor(`document.querySelector('[data-testid=import-problem] .notice.error')`, "the error")
	d.shot("wrong-password")

	if msg := d.text("[data-testid=import-problem]"); !strings.Contains(msg, "That password does not open "+backupFile) || !strings.Contains(msg, "Nothing was changed") {
		t.Errorf("the page says %q, want the plain words for a wrong password", msg)
	}
	if eval[bool](d, `!!document.querySelector('[data-testid=import-preview]')`) {
		t.Error("a preview showed for a wrong password")
	}
	if d.walletState() != before {
		t.Error("a wrong password changed the wallet file")
	}
}

func TestDashboard_ReconnectsAfterAgentRestart(t *testing.T) {
	d := newDash(t)
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the live event stream")

	d.stopAgent()
	d.waitFor(`document.getElementById('conn').dataset.state === 'reconnecting'`, "the page to notice")
	d.shot("reconnecting")

	d.startAgent() // same data folder, same address: the page's cookie still works
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the stream to come back")
	d.page("destinations")
	d.addDestination("usb")
	d.shot("reconnected")
}

// addDestination adds a paused destination through the API and waits for the page to show
// it: only the event stream tells the page.
func (d *dash) addDestination(id string) {
	d.t.Helper()
	d.api(api.RouteDestinationAdd, api.Destination{ID: id, Name: "USB disk", Kind: api.DestinationFolder,
		Path: filepath.Join(d.dir, id), Schedule: api.Schedule{Kind: api.ScheduleDaily, At: "03:00"}, Pause: &api.Pause{}}, nil)
	d.waitFor(fmt.Sprintf(`document.querySelector('[data-destination=%q]')`, id), "the new destination, from the event stream")
}

func TestDashboard_DesktopWindowConfig(t *testing.T) {
	d := newDash(t)
	token, err := d.data.Token()
	if err != nil {
		t.Fatal(err)
	}
	// The window's asset server: it serves the dashboard's files itself and passes /api/
	// on to the agent as the agent's own origin. It has no cookie: only the token that the
	// window injects can authenticate.
	agentURL := &url.URL{Scheme: "http", Host: d.addr}
	var bearer, other atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(agentURL)
		r.Out.Header.Del("Cookie")
		if r.Out.Header.Get("Origin") != "" {
			r.Out.Header.Set("Origin", agentURL.String())
		}
		if r.In.Header.Get("Authorization") == "Bearer "+token {
			bearer.Add(1)
		} else {
			other.Add(1)
		}
	}, FlushInterval: -1}
	mux := http.NewServeMux()
	mux.Handle("/api/", proxy)
	mux.Handle("/", frontend.Handler())
	window := httptest.NewServer(mux)
	t.Cleanup(func() {
		d.stopAgent() // which ends the event stream that Close would wait for
		window.Close()
	})

	d.onNewDocument(fmt.Sprintf(`window.walletsyncConfig = {token: %q}`, token))
	d.do(chromedp.Navigate(window.URL + "/#/destinations"))
	d.waitFor(`document.getElementById('conn').dataset.state === 'live'`, "the event stream through the window")
	d.addDestination("usb")
	d.shot("window")
	if bearer.Load() == 0 || other.Load() != 0 {
		t.Errorf("API requests with the injected token: %d, without: %d", bearer.Load(), other.Load())
	}
}

func TestDashboard_KeyboardAndTheme(t *testing.T) {
	d := newDash(t)
	d.do(chromedp.KeyEvent("\t"))
	if !eval[bool](d, `document.activeElement.classList.contains('skip')`) {
		t.Error("the first Tab does not reach the skip link")
	}
	// Tab on to the menu's Destinations link; Enter opens the page and puts focus on its title.
	for range 12 {
		if eval[bool](d, `document.activeElement.matches('nav a[data-page=destinations]')`) {
			break
		}
		d.do(chromedp.KeyEvent("\t"))
	}
	if outline := eval[string](d, `getComputedStyle(document.activeElement).outlineStyle`); outline == "none" {
		t.Error("the focused menu link shows no focus outline")
	}
	d.do(chromedp.KeyEvent("\r"))
	d.waitFor(`document.activeElement === document.querySelector('main[data-page=destinations] h1')`, "focus on the new page's title")

	light := eval[string](d, `getComputedStyle(document.body).backgroundColor`)
	d.do(chromedp.Focus(chromedp.CSS("#theme")), chromedp.KeyEvent(" "))
	d.waitFor(`document.documentElement.dataset.theme === 'dark'`, "the dark theme")
	if dark := eval[string](d, `getComputedStyle(document.body).backgroundColor`); dark == light {
		t.Errorf("the background stays %s in the dark theme", dark)
	}
	if eval[string](d, `document.getElementById('theme').getAttribute('aria-pressed')`) != "true" {
		t.Error("the theme toggle does not say it is pressed")
	}
	d.shot("dark")
}

// TestScreenshots_EveryPage photographs every page in light and dark at 1280x800 and
// 900x600, after a first sync and backup, and checks that no page scrolls sideways.
// With -screenshots DIR it writes them there, for the README:
//
//	go test ./frontend -run TestScreenshots -args -screenshots "$PWD/docs/screenshots"
func TestScreenshots_EveryPage(t *testing.T) {
	d := newDash(t)
	for _, dest := range []string{fileID, folderID} {
		var task api.Task
		d.api(api.RouteRun, nil, &task, dest)
		if got := d.wait(task.ID); got.State != api.TaskSucceeded {
			t.Fatalf("%s: %s %s", dest, got.State, got.Error)
		}
	}
	d.api(api.RouteResumeAll, nil, nil)
	d.waitIdle()
	// Both backups and the resume shown, not an overview loaded before them.
	d.waitFor(`document.querySelector('[data-testid=health]')?.textContent.startsWith('Backed up just now to 2 destinations') &&
		![...document.querySelectorAll('.destinations-table td')].some((td) => td.textContent === 'Paused') &&
		!document.querySelector('.destinations-table .badge.running')`, "the overview after the first backups")

	dir := d.screenshots()
	pages := []string{"overview", "destinations", "activity", "backups", "export", "restore", "settings"}
	for _, size := range [][2]int64{{1280, 800}, {900, 600}} {
		for _, scheme := range []string{"light", "dark"} {
			d.view(size[0], size[1], scheme)
			for _, p := range pages {
				d.page(p)
				d.waitFor(`![...document.querySelectorAll('main p')].some((e) => /^(Loading|Checking)…$/.test(e.textContent))`, p+" loaded")
				if p == "activity" { // with the newest task's log open
					d.do(chromedp.Click(chromedp.CSS(`.task-row summary`)))
					d.waitFor(`document.querySelector('.task-row[open] .log li')`, "the task's log")
				}
				if w := eval[int](d, `document.documentElement.scrollWidth - innerWidth`); w > 0 {
					t.Errorf("%s at %dx%d scrolls sideways by %d px", p, size[0], size[1], w)
				}
				d.shotTo(dir, fmt.Sprintf("%s-%s-%dx%d", p, scheme, size[0], size[1]))
			}
		}
	}
}
