package frontend_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"walletsync/frontend"
)

// Every page of the dashboard, its editors and wizards open, in both themes, runs under
// the Content-Security-Policy without one violation (cspWatch fails any test that has
// one), and the policy is in force: an inline script and a style attribute are refused.
func TestDashboard_ContentSecurityPolicy(t *testing.T) {
	d := newDash(t)
	token, err := d.data.Token()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/app.js", "/style.css", "/pages/restore.js"} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+d.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != http.StatusOK || got != frontend.ContentSecurityPolicy {
			t.Errorf("GET %s: %s, Content-Security-Policy %q", path, resp.Status, got)
		}
	}

	for _, scheme := range []string{"light", "dark"} {
		d.view(1280, 800, scheme)
		for _, p := range []string{"overview", "destinations", "activity", "backups", "export", "restore", "settings"} {
			d.page(p)
			d.waitFor(`![...document.querySelectorAll('main p')].some((e) => /^(Loading|Checking)…$/.test(e.textContent))`, p+" loaded")
			switch {
			case scheme == "dark": // the editor and the wizard step stay as the light pass left them
			case p == "destinations":
				d.do(chromedp.Click(byText("button", "Add a destination")))
				d.waitFor(`document.querySelector('form.editor')`, "the editor")
			case p == "export":
				d.do(chromedp.Click(byText(`.wizard button`, "Next")))
				d.waitFor(`document.querySelector('.wizard input[name=path]')`, "the where step")
			}
		}
	}
	d.do(chromedp.Click(chromedp.CSS("#theme"))) // the theme toggle, and the stored theme on reload
	d.do(chromedp.Reload())
	d.waitFor(`document.querySelector('main h1') && document.documentElement.dataset.theme !== ''`, "the page again, in the stored theme")
	if v := eval[[]string](d, `window.cspViolations`); len(v) != 0 {
		t.Fatalf("violations: %q", v)
	}

	// The policy is in force: what an injected text could try is refused, and reported.
	ran := eval[bool](d, `(() => {
		window.cspExpected = true;
		const s = document.createElement('script');
		s.textContent = 'window.inlineRan = true';
		document.body.append(s);
		document.body.setAttribute('style', 'background: red');
		return window.inlineRan === true;
	})()`)
	if ran {
		t.Error("an inline script ran")
	}
	d.waitFor(`window.cspViolations.some((v) => v.startsWith('script-src')) && window.cspViolations.some((v) => v.startsWith('style-src'))`,
		"the violations of the inline script and the style attribute")
}

// dialogStub stands in for the desktop window's bindings (window.go.main.App): each dialog
// records its call and answers a path. Like Wails, it refuses a call with another number
// of arguments than the Go method takes.
const dialogStub = `window.dialogCalls = [];
const binding = (name, arity, answer) => (...args) => {
  if (args.length !== arity) return Promise.reject(new Error(name + ': ' + args.length + ' arguments, expected ' + arity));
  dialogCalls.push([name, ...args].join(' '));
  return Promise.resolve(answer);
};
window.go = { main: { App: {
  SaveBackupFile: binding('SaveBackupFile', 1, '/chosen/saved.brc39'),
  OpenBackupFile: binding('OpenBackupFile', 0, '/chosen/opened.brc39'),
  ChooseBackupFolder: binding('ChooseBackupFolder', 0, '/chosen/folder'),
} } };`

// In a browser, Export, Restore and the destination editor have no Browse button (the
// typed path and the file drop remain); in the window, each has one that opens its native
// dialog and puts the chosen path in the path field.
func TestDashboard_BrowseButtonsOnlyInTheWindow(t *testing.T) {
	d := newDash(t)
	exportWhere := func() {
		d.page("export")
		d.do(chromedp.Click(byText(`.wizard button`, "Next")))
		d.waitFor(`document.querySelector('.wizard input[name=path]')`, "the where step")
	}
	folderEditor := func() {
		d.page("destinations")
		d.do(chromedp.Click(byText("button", "Add a destination")))
		d.waitFor(`document.querySelector('form.editor')`, "the editor")
	}
	restore := func() {
		d.page("restore")
		d.waitFor(`document.querySelector('.inline-form input[name=path]')`, "the restore page")
	}

	exportWhere()
	if eval[bool](d, `!!document.querySelector('button.browse')`) {
		t.Error("the browser's export page has a Browse button")
	}
	restore()
	if eval[bool](d, `!!document.querySelector('button.browse')`) || !eval[bool](d, `!!document.querySelector('.dropzone')`) {
		t.Error("the browser's restore page has a Browse button, or no file drop")
	}
	folderEditor()
	d.do(chromedp.Click(chromedp.CSS(`form.editor input[value=folder]`)))
	if eval[bool](d, `!!document.querySelector('button.browse')`) {
		t.Error("the browser's destination editor has a Browse button")
	}

	d.onNewDocument(dialogStub)
	d.do(chromedp.Reload())
	d.waitFor(`document.querySelector('main h1') && window.go`, "the page in the window")

	exportWhere()
	suggested := eval[string](d, `document.querySelector('.wizard input[name=path]').value`)
	d.do(chromedp.Click(chromedp.CSS(`.wizard button.browse`)))
	d.waitFor(`document.querySelector('.wizard input[name=path]').value === '/chosen/saved.brc39'`, "the saved-as path in the field")

	restore()
	d.do(chromedp.Click(chromedp.CSS(`.inline-form button.browse`)))
	d.waitFor(`document.querySelector('.inline-form input[name=path]').value === '/chosen/opened.brc39'`, "the opened path in the field")

	folderEditor()
	if eval[bool](d, `!document.querySelector('form.editor button.browse').hidden`) {
		t.Error("a backup wallet file offers the folder dialog")
	}
	d.do(chromedp.Click(chromedp.CSS(`form.editor input[value=folder]`)), chromedp.Click(chromedp.CSS(`form.editor button.browse`)))
	d.waitFor(`document.querySelector('form.editor input.mono').value === '/chosen/folder'`, "the folder in the field")
	d.shot("browse")

	want := []string{"SaveBackupFile " + suggested, "OpenBackupFile", "ChooseBackupFolder"}
	if got := eval[[]string](d, `window.dialogCalls`); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("dialog calls %q, want %q", got, want)
	}
}
