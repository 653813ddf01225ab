package frontend_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/frontend"
	"walletsync/internal/safefile"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/testkit/tier"
	"walletsync/wallet"
)

// The end-to-end tests drive Debian's Chromium against a real agent on 127.0.0.1, with a
// wallet seeded from the toolbox fixture, in a temp folder per test. Each test saves
// screenshots into $WALLETSYNC_ARTIFACTS (default: the test's temp folder).

const chromiumPath = "/usr/bin/chromium"

// The destinations every test's agent has, as in `walletsync demo`.
const (
	fileID   = "backup-file"
	folderID = "backup-folder"
	// backupPassword is the unattended backup password of the test agents.
	backupPassword = "correct horse battery staple"
)

var screenshotsDir = flag.String("screenshots", "", "TestScreenshots writes every page's screenshots here (the README's docs/screenshots) instead of the artifacts folder")

// templateWallet is a toolbox-fixture wallet seeded once; each test works on a copy.
// backupFile is a BRC-39 file under backupFilePassword of the same identity with other
// rows (the small fixture), for the import tests: importing it adds to the wallet.
var templateWallet, backupFile string

const backupFilePassword = "import test password"

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "walletsync-e2e-")
	if err == nil {
		err = makeTemplates(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "make the test wallets:", err)
		os.Exit(1)
	}
	code := m.Run()
	stopChromium()
	os.RemoveAll(dir)
	os.Exit(code)
}

func makeTemplates(dir string) error {
	templateWallet = filepath.Join(dir, "wallet.sqlite")
	backupFile = filepath.Join(dir, "other-rows.brc39")
	if _, err := seedWallet(templateWallet, localstore.FixtureToolbox, localstore.SeedOptions{Seed: 1}); err != nil {
		return err
	}
	other := filepath.Join(dir, "other-rows.sqlite")
	s, err := seedWallet(other, localstore.FixtureSmall, localstore.SeedOptions{Seed: 2, IdentityKey: localstore.FixtureIdentity(1)})
	if err != nil {
		return err
	}
	return exportWallet(other, s.IdentityKey, backupFile, backupFilePassword)
}

// seedWallet makes a wallet at path from a fixture.
func seedWallet(path string, f localstore.Fixture, opts localstore.SeedOptions) (localstore.SeedResult, error) {
	ctx := context.Background()
	s, err := localstore.Create(ctx, path, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "walletsync e2e"}, localstore.Options{})
	if err != nil {
		return localstore.SeedResult{}, err
	}
	res, err := localstore.Seed(ctx, s, f, opts)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// exportWallet writes identity's rows of the wallet at path to backup, a BRC-39 file.
func exportWallet(path, identity, backup, password string) error {
	ctx := context.Background()
	s, err := localstore.Open(ctx, path, localstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	settings, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{Wait: true, Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return err
	}
	defer v.Close()
	_, err = portable.ExportBRC39(ctx, v, settings, identity, password, brc39.DefaultKDFParams, backup, portable.ExportOptions{})
	return err
}

// patience bounds every wait for the agent's work (a sync, an export's Argon2): generous,
// because under the race detector on a two-core machine a backup takes many times what it
// takes a person. It is a deadline against hangs, never a timing assertion.
const patience = 2 * time.Minute

// dashboards bounds how many tests drive an agent and a tab at once: each runs Argon2
// (128 MiB, 7 passes) and the toolbox fixture's syncs, and more of them than cores only
// makes every one of them slow enough to look hung.
var dashboards = make(chan struct{}, 2)

// One Chromium serves every test; each test gets a tab in a browser context of its own
// (its own cookies and storage), which costs milliseconds where a browser costs seconds.
var (
	chromium     sync.Once
	browser      context.Context
	stopBrowser  context.CancelFunc = func() {}
	chromiumFail error
)

func startChromium() (context.Context, error) {
	chromium.Do(func() {
		if _, chromiumFail = os.Stat(chromiumPath); chromiumFail != nil {
			chromiumFail = fmt.Errorf("the dashboard tests need Chromium at %s (apt-get install chromium fonts-liberation): %w", chromiumPath, chromiumFail)
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1280, 800))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		stopBrowser = func() {
			cancelBrowser()
			cancelAlloc()
		}
		// The first run starts the browser, which lives as long as ctx: no timeout here.
		if chromiumFail = chromedp.Do(ctx); chromiumFail != nil {
			chromiumFail = fmt.Errorf("start Chromium: %w", chromiumFail)
			return
		}
		browser = ctx
	})
	return browser, chromiumFail
}

func stopChromium() { stopBrowser() }

// dash is one test's world: a data folder, a config, a wallet, an agent serving the
// dashboard, and a Chromium tab logged in to it.
type dash struct {
	t      *testing.T
	dir    string
	wallet string
	config string
	data   agent.DataDir
	addr   string
	agent  *agent.Agent
	client *api.Client
	ctx    context.Context // the browser tab
	// tweaks change the agent's options at every start (small sync pages, say).
	tweaks []func(*agent.Options)

	mu       sync.Mutex
	jsErrors []string
}

// newDash starts an agent on a copy of the template wallet with two paused destinations
// (the scheduler leaves them alone; "Run now" still runs them, so each test starts the
// work it watches), opens a tab and logs in with the agent's one-time login URL. Tests
// that use it run in parallel: each has its own folder, agent, address and tab.
func newDash(t *testing.T, tweaks ...func(*agent.Options)) *dash {
	t.Helper()
	tier.Full(t, "headless Chromium")
	t.Parallel()
	dashboards <- struct{}{}
	t.Cleanup(func() { <-dashboards })
	d := &dash{t: t, dir: t.TempDir(), tweaks: tweaks}
	d.wallet = filepath.Join(d.dir, "wallet.sqlite")
	copyFile(t, templateWallet, d.wallet)
	d.config = filepath.Join(d.dir, "config.json")
	cfg := agent.DefaultConfig()
	cfg.Wallets = []api.WalletRef{{Path: d.wallet}}
	cfg.Destinations = []api.Destination{
		{ID: fileID, Name: "Backup wallet", Kind: api.DestinationSQLite, Path: filepath.Join(d.dir, "backup-wallet.sqlite"),
			Schedule: api.Schedule{Kind: api.ScheduleChange, Debounce: api.Duration(api.DefaultDebounce)}, Pause: &api.Pause{}},
		{ID: folderID, Name: "Backup folder", Kind: api.DestinationFolder, Path: filepath.Join(d.dir, "backups"),
			Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}},
	}
	if err := agent.SaveConfig(d.config, cfg); err != nil {
		t.Fatal(err)
	}
	d.data = agent.DataDir(filepath.Join(d.dir, "data"))
	if err := d.data.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := agent.NewSecrets(d.data.SecretsPath()).Set(agent.BackupPasswordKey, api.NewSecret(backupPassword)); err != nil {
		t.Fatal(err)
	}
	d.addr = freeAddr(t)
	d.startAgent()
	t.Cleanup(d.stopAgent)
	d.openBrowser()
	d.login()
	return d
}

// startAgent starts an agent on the test's data folder and address.
func (d *dash) startAgent() {
	d.t.Helper()
	// Home is the test's folder, so that the first run never offers the machine's own wallets.
	opts := agent.Options{Home: d.dir, Dir: d.data, ConfigPath: d.config, Addr: d.addr, Version: "e2e", Dashboard: frontend.Handler()}
	for _, tweak := range d.tweaks {
		tweak(&opts)
	}
	a, err := agent.Start(context.Background(), opts)
	if err != nil {
		d.t.Fatalf("start agent: %v", err)
	}
	d.agent = a
	e, err := d.data.Endpoint()
	if err != nil {
		d.t.Fatal(err)
	}
	d.client = api.NewClient(e)
}

// stopAgent closes the agent, if one runs.
func (d *dash) stopAgent() {
	if d.agent == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := d.agent.Close(ctx); err != nil {
		d.t.Errorf("close agent: %v", err)
	}
	d.agent = nil
}

// openBrowser opens the test's tab; script errors in the page fail the test.
func (d *dash) openBrowser() {
	d.t.Helper()
	b, err := startChromium()
	if err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(b, chromedp.WithNewBrowserContext(), chromedp.WithListener(d.listen))
	d.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, which lives as long as ctx
		d.t.Fatalf("open a tab: %v", err)
	}
	d.ctx = ctx
	d.onNewDocument(cspWatch)
	d.t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, e := range d.jsErrors {
			d.t.Errorf("script error in the page: %s", e)
		}
	})
}

// cspWatch makes every Content-Security-Policy violation of a page a console error, which
// fails the test (see listen), unless the test expects one (window.cspExpected); either
// way it is kept in window.cspViolations.
const cspWatch = `window.cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  const v = e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber;
  window.cspViolations.push(v);
  if (!window.cspExpected) console.error('Content-Security-Policy violation: ' + v);
});`

// onNewDocument runs js in every document the tab loads from now on, before the page's
// own scripts (and outside its Content-Security-Policy).
func (d *dash) onNewDocument(js string) {
	d.t.Helper()
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js})
		return err
	}))
}

// listen records uncaught exceptions and console.error calls of the page.
func (d *dash) listen(ev any) {
	var text string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		text = e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			text += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		for _, a := range e.Args {
			text += " " + string(a.Value) + a.Description
		}
	default:
		return
	}
	d.mu.Lock()
	d.jsErrors = append(d.jsErrors, strings.TrimSpace(text))
	d.mu.Unlock()
}

// login opens the agent's one-time login URL, which sets the token cookie and leads to
// the overview.
func (d *dash) login() {
	d.t.Helper()
	d.do(chromedp.Navigate(d.agent.LoginURL()))
	d.waitFor(`document.querySelector('main[data-page=overview] [data-testid=health]')`, "the overview after login")
}

// do runs browser actions, failing the test (with a screenshot) on error.
func (d *dash) do(actions ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		d.shot("failed")
		d.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](d *dash, js string) T {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		d.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor waits until the JavaScript expression is truthy. A navigation meanwhile (the
// login page's refresh) destroys the page's context under a poll: it is polled again.
func (d *dash) waitFor(js, what string) {
	d.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		ctx, cancel := context.WithDeadline(d.ctx, deadline)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			d.shot("timeout")
			d.t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text returns the text of the first element matching a CSS selector.
func (d *dash) text(css string) string {
	d.t.Helper()
	return eval[string](d, fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() ?? ''`, css))
}

// byText selects the first element matching css whose text is text, as a person finds a
// button by its label.
func byText(css, text string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll(%q)].find((e) => e.textContent.trim() === %q)`, css, text))
}

// page moves the dashboard to a page and waits for it.
func (d *dash) page(id string) {
	d.t.Helper()
	d.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`nav a[data-page=%q]`, id))))
	d.waitFor(fmt.Sprintf(`document.querySelector('main[data-page=%q] h1')`, id), "page "+id)
}

// view sets the viewport size and the colour scheme the page is told the system uses.
func (d *dash) view(width, height int64, scheme string) {
	d.t.Helper()
	d.do(chromedp.EmulateViewport(width, height), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
}

// shot saves a screenshot of the viewport as <artifacts>/<test>/<name>.png.
func (d *dash) shot(name string) string {
	d.t.Helper()
	dir := os.Getenv("WALLETSYNC_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(d.dir, "artifacts")
	}
	return d.shotTo(filepath.Join(dir, strings.ReplaceAll(d.t.Name(), "/", "-")), name)
}

// screenshots is where a TestScreenshots test writes: the -screenshots folder, else the
// test's artifacts folder.
func (d *dash) screenshots() string {
	if *screenshotsDir != "" {
		return *screenshotsDir
	}
	if env := os.Getenv("WALLETSYNC_ARTIFACTS"); env != "" {
		return filepath.Join(env, d.t.Name())
	}
	return filepath.Join(d.dir, "artifacts", d.t.Name())
}

func (d *dash) shotTo(dir, name string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		d.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(dir, name+".png")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		d.t.Fatal(err)
	}
	d.t.Logf("screenshot: %s", path)
	return path
}

// api calls the agent's API as the command line does.
func (d *dash) api(route api.Route, in, out any, args ...string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.client.Call(ctx, route, in, out, args...); err != nil {
		d.t.Fatalf("%s %v: %v", route, args, err)
	}
}

// wait waits for task id to end and returns it.
func (d *dash) wait(id string) api.Task {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	t, err := d.agent.Tasks().Wait(ctx, id)
	if err != nil {
		d.t.Fatalf("wait for task %s: %v", id, err)
	}
	return t
}

// waitIdle waits until no task is queued or running (the scheduler may start runs of its
// own, such as those a resume makes due).
func (d *dash) waitIdle() {
	d.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		busy := ""
		for _, t := range d.agent.Tasks().List() {
			if !t.State.Terminal() {
				busy = t.Kind.String() + " " + t.Target
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("still busy: %s", busy)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := safefile.CopyNew(from, to); err != nil {
		t.Fatal(err)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// freeAddr returns a loopback address that was free a moment ago, so that a restarted
// agent can listen where the page expects it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
