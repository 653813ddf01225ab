package frontend_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
)

// smallPages makes every sync move a few rows a page: a long sync of the test wallet.
func smallPages(o *agent.Options) { o.SyncMaxRows = 5 }

// recordFigures records, in the page, every text each figure of the destination's progress
// panel shows while the task runs, so that a short-lived one is not missed between polls.
func (d *dash) recordFigures(dest string) {
	d.t.Helper()
	eval[bool](d, fmt.Sprintf(`window.figures = {};
		new MutationObserver(() => {
			const p = document.querySelector('[data-destination=%q] .task-panel[data-state=running]');
			if (!p) return;
			for (const e of p.querySelectorAll('.stats div')) {
				const k = e.querySelector('dt').textContent;
				(figures[k] ??= new Set()).add(e.querySelector('dd').textContent);
			}
		}).observe(document.querySelector('main'), {subtree: true, childList: true, characterData: true, attributes: true});
		true`, dest))
}

func (d *dash) figures(name string) []string {
	d.t.Helper()
	return eval[[]string](d, fmt.Sprintf(`[...(figures[%q] ?? [])]`, name))
}

// TestDashboard_LongSyncShowsPercentAndTimeLeft: a long sync shows rows done of its total,
// a percentage and a time left once the rate is measured, and never "0 rows/s".
func TestDashboard_LongSyncShowsPercentAndTimeLeft(t *testing.T) {
	d := newDash(t, smallPages)
	d.page("destinations")
	d.recordFigures(fileID)
	d.do(chromedp.Click(byText(`[data-destination=backup-file] button`, "Run now")))
	panel := `[data-destination=backup-file] .task-panel`
	d.waitFor(`[...document.querySelectorAll('`+panel+` .stats dd')].some((e) => e.textContent.startsWith('about '))`, "a time left")
	d.shot("long-sync")
	task := d.newestTask(api.KindSync, fileID)
	if task.Total == 0 {
		t.Fatalf("the running sync has no total: %+v", task)
	}
	rows := d.figures("Rows")
	if len(rows) == 0 || !strings.Contains(rows[len(rows)-1], fmt.Sprintf(" of %s", groupDigits(task.Total))) {
		t.Errorf("the rows read %v; the total is %d", rows, task.Total)
	}
	for _, p := range d.figures("Done") {
		if !strings.HasSuffix(p, "%") || p == "100%" {
			t.Errorf("a running sync showed %q done", p)
		}
	}
	if len(d.figures("Done")) == 0 {
		t.Error("no percentage shown")
	}
	for _, r := range d.figures("Rate") {
		if strings.HasPrefix(r, "0 rows/s") {
			t.Errorf("the rate read %q while the sync ran", r)
		}
	}
	d.do(chromedp.Click(byText(panel+` button`, "Cancel")))
	d.waitFor(`document.querySelector('`+panel+`[data-state=cancelled]')`, "the cancel")
}

// TestDashboard_ShortSyncNeverShowsZeroRate: a sync over before the rate is measured reads
// "measuring…", never "0 rows/s".
func TestDashboard_ShortSyncNeverShowsZeroRate(t *testing.T) {
	d := newDash(t)
	d.page("destinations")
	d.recordFigures(fileID)
	d.do(chromedp.Click(byText(`[data-destination=backup-file] button`, "Run now")))
	d.waitFor(`document.querySelector('[data-destination=backup-file] .task-panel[data-state=succeeded]')`, "the sync to complete")
	rates := d.figures("Rate")
	if len(rates) == 0 {
		t.Fatal("no rate seen while the sync ran")
	}
	for _, r := range rates {
		if strings.HasPrefix(r, "0 rows/s") {
			t.Errorf("the rate read %q while the sync ran", r)
		}
	}
}

// groupDigits writes n as the page's number format does in the test browser's locale.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
