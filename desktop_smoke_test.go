//go:build desktopsmoke

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/desktop"
	"walletsync/testkit/walletsynctest"
)

// smokeWait bounds each wait of the smoke test: the window, the rendered overview, the
// clean exit. Nothing is asserted about how long they take.
const smokeWait = 60 * time.Second

// TestDesktopSmoke runs the desktop binary named by WALLETSYNC_DESKTOP_BIN on the X server
// in DISPLAY (scripts/desktop.sh builds it and runs this test under xvfb-run) and checks
// what a person would see, on a fresh data folder with a small wallet that has been backed
// up once:
//
//   - the window appears (xwininfo finds a window named "walletsync");
//   - the dashboard in it renders the overview that the window's own agent serves: the
//     agent's health sentence shows in the page's text, which the window writes to a file
//     (main_desktop.go's WALLETSYNC_PAGE_TEXT). The sentence only reaches the page through
//     the window's API proxy, so this also proves the page can talk to the agent;
//   - the same binary with arguments is the command line: `walletsync status` reaches the
//     agent running inside the window;
//   - the Restore page in the window offers a Browse button (a browser has none), and
//     pressing it calls the App's OpenBackupFile binding: the native open dialog, titled
//     as app.go titles it, appears; Escape cancels it;
//   - SIGTERM closes the window cleanly: exit status 0, the in-process agent stopped (its
//     address withdrawn), the window's size remembered.
//
// It saves desktop-window.png (a screenshot of the X screen once the overview rendered),
// desktop-browse.png (the Restore page with its Browse button), desktop-browse-dialog.png
// (the native dialog it opened), desktop.log (the binary's output) and desktop-page.txt in
// WALLETSYNC_ARTIFACTS; the two Browse screenshots are kept in docs/screenshots.
func TestDesktopSmoke(t *testing.T) {
	bin := os.Getenv("WALLETSYNC_DESKTOP_BIN")
	if bin == "" {
		t.Fatal("set WALLETSYNC_DESKTOP_BIN to the desktop binary (scripts/desktop.sh does)")
	}
	if os.Getenv("DISPLAY") == "" {
		t.Fatal("no DISPLAY: run under xvfb-run (scripts/desktop.sh does)")
	}
	artifacts := os.Getenv("WALLETSYNC_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}

	// A fresh person's folders, holding a wallet backed up once.
	home := t.TempDir()
	dir := agent.DataDir(filepath.Join(home, "data", "walletsync"))
	configPath := filepath.Join(home, "config", "walletsync", "config.json")
	if err := os.MkdirAll(filepath.Dir(configPath), 0o700); err != nil {
		t.Fatal(err)
	}
	f := walletsynctest.Folder{Dir: dir, Config: configPath}
	if err := agent.SaveConfig(configPath, *walletsynctest.WalletConfig(t, []string{"Backup wallet"}, nil)); err != nil {
		t.Fatal(err)
	}
	backUpOnce(t, f)

	pageText := filepath.Join(artifacts, "desktop-page.txt")
	os.Remove(pageText)
	logFile, err := os.Create(filepath.Join(artifacts, "desktop.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"WALLETSYNC_PAGE_TEXT="+pageText,       // main_desktop.go's pageTextEnv
		"WALLETSYNC_PAGE_SCRIPT="+browseScript) // and pageScriptEnv
	window, exited := startWindow(t, bin, env, logFile)

	waitFor(t, exited, "the window", func() (bool, string) {
		_, err := windowBounds()
		return err == nil, errString(err)
	})
	var health string
	waitFor(t, exited, "the overview in the page", func() (bool, string) {
		page, _ := os.ReadFile(pageText)
		var ov api.Overview
		e, err := dir.Endpoint()
		if err == nil {
			ov, err = api.NewClient(e).Overview(context.Background())
		}
		health = ov.Health
		return err == nil && health != "" && strings.Contains(string(page), health),
			"agent: " + health + " (" + errString(err) + ")\npage:\n" + string(page)
	})
	// The page reports text it has painted, but the X server may show the frame a little
	// later: wait for the window to be painted and steady across two screenshots, so that
	// the screenshot shows what a person sees.
	shot := filepath.Join(artifacts, "desktop-window.png")
	var last uint64
	waitFor(t, exited, "the dashboard painted in the window", func() (bool, string) {
		sum, colours, err := windowPixels(shot)
		steady := sum == last
		last = sum
		return err == nil && colours >= paintedColours && steady,
			fmt.Sprintf("%d colours in the window, steady %v (%s)", colours, steady, errString(err))
	})
	t.Logf("the window shows the overview (%q); screenshot %s", health, shot)

	status := exec.Command(bin, "status", "--data-dir", string(dir))
	status.Env = env
	if out, err := status.Output(); err != nil || !strings.HasPrefix(string(out), health+"\n") {
		t.Fatalf("walletsync status from the desktop binary = %q, %v; want the window agent's health", out, err)
	}

	pressBrowse(t, exited, pageText, artifacts)

	closeWindow(t, window, exited)
	if _, err := dir.Endpoint(); !errors.Is(err, api.ErrAgentNotRunning) {
		t.Errorf("after the window closed its agent still publishes an address: %v", err)
	}
	if _, err := os.Stat(filepath.Join(string(dir), desktop.WindowStateFile)); err != nil {
		t.Errorf("the window did not remember its size: %v", err)
	}
}

// TestDesktopSmoke_FirstRunChoosesTheWallet runs the desktop binary as a fresh install: a
// config with no wallet and no destination, and a toolbox wallet file on disk. The window's
// overview shows the first run's one step, "Choose the wallet to protect"; the page script
// (chooseScript) waits for it, types the wallet's path into it and presses "Protect this
// wallet", as a person would; the window's own agent then protects that wallet (its config
// names it, and the page shows "Your wallet"). SIGTERM then closes the window cleanly.
func TestDesktopSmoke_FirstRunChoosesTheWallet(t *testing.T) {
	bin := os.Getenv("WALLETSYNC_DESKTOP_BIN")
	if bin == "" || os.Getenv("DISPLAY") == "" {
		t.Fatal("set WALLETSYNC_DESKTOP_BIN and DISPLAY: run under scripts/desktop.sh")
	}
	home := t.TempDir()
	dir := agent.DataDir(filepath.Join(home, "data", "walletsync"))
	configPath := filepath.Join(home, "config", "walletsync", "config.json")
	if err := os.MkdirAll(filepath.Dir(configPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := agent.SaveConfig(configPath, agent.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	walletPath := walletsynctest.WalletConfig(t, nil, nil).Wallets[0].Path
	pageText := filepath.Join(t.TempDir(), "page.txt")
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"WALLETSYNC_PAGE_TEXT="+pageText, "WALLETSYNC_PAGE_SCRIPT="+fmt.Sprintf(chooseScript, strconv.Quote(walletPath)))
	var out bytes.Buffer
	window, exited := startWindow(t, bin, env, &out)
	t.Cleanup(func() { t.Logf("the window's output:\n%s", out.String()) })

	// The config protects no wallet, so the only way one gets there is the page script's
	// press in the first run's step: on a fast machine the step comes and goes between two
	// of the page-text snapshots (every 500 ms), so only its outcome is waited for.
	waitFor(t, exited, "the wallet protected by the window's agent", func() (bool, string) {
		e, err := dir.Endpoint()
		var cfg api.Config
		if err == nil {
			cfg, err = api.NewClient(e).Config(context.Background())
		}
		page, _ := os.ReadFile(pageText)
		return err == nil && len(cfg.Wallets) == 1 && cfg.Wallets[0].Path == walletPath && strings.Contains(string(page), "Your wallet"),
			fmt.Sprintf("config %+v (%s)\npage:\n%s", cfg.Wallets, errString(err), page)
	})
	closeWindow(t, window, exited)
}

// startWindow starts the desktop binary with env, its output going to out, and returns it
// and the channel its exit arrives on (a reader that takes the exit puts it back). The
// window is killed when the test ends if it is still open: how it exited then says nothing.
func startWindow(t *testing.T, bin string, env []string, out io.Writer) (*exec.Cmd, chan error) {
	t.Helper()
	window := exec.Command(bin)
	window.Env, window.Stdout, window.Stderr = env, out, out
	if err := window.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- window.Wait() }()
	t.Cleanup(func() {
		select {
		case _ = <-exited:
		default:
			window.Process.Kill()
			_ = <-exited
		}
	})
	return window, exited
}

// closeWindow sends the window SIGTERM and fails the test unless it exits with status 0
// within smokeWait.
func closeWindow(t *testing.T, window *exec.Cmd, exited chan error) {
	t.Helper()
	if err := window.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("the window exited with %v on SIGTERM; want status 0", err)
		}
	case <-time.After(smokeWait):
		t.Fatal("the window did not close on SIGTERM")
	}
}

// chooseScript is the first-run page script: once the step that chooses the wallet shows,
// it types the path (a JSON string, filled in with fmt) and presses "Protect this wallet".
const chooseScript = `(function choose() {
  const step = document.querySelector('[data-testid=choose-wallet]');
  const input = step?.querySelector('input[name=wallet-path]');
  const button = step && [...step.querySelectorAll('form button')].find((b) => b.textContent === 'Protect this wallet');
  if (input && button) {
    input.value = %s;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    button.click();
    return;
  }
  setTimeout(choose, 100);
})();`

// browseScript is the page script of the smoke test: once the overview has shown the
// agent's health, it opens the Restore page and puts focus on its Browse button, so that
// the Enter key a person would press presses it.
const browseScript = `(function browse() {
  const b = document.querySelector('main[data-page=restore] button.browse');
  if (b) { b.focus(); return; }
  if (document.getElementById('health')?.textContent && location.hash !== '#/restore') location.hash = '#/restore';
  setTimeout(browse, 100);
})();`

// openDialogTitle is the title app.go's OpenBackupFile gives the native dialog.
const openDialogTitle = "Open a walletsync backup"

// pressBrowse checks that the Restore page shows its Browse button, presses it with the
// keyboard, and checks that the native open dialog appears; then cancels the dialog.
func pressBrowse(t *testing.T, exited chan error, pageText, artifacts string) {
	t.Helper()
	waitFor(t, exited, "the Browse button on the Restore page", func() (bool, string) {
		page, _ := os.ReadFile(pageText)
		return strings.Contains(string(page), "Browse…") && strings.Contains(string(page), "Restore"), string(page)
	})
	shot := filepath.Join(artifacts, "desktop-browse.png")
	var last uint64
	waitFor(t, exited, "the Restore page painted", func() (bool, string) {
		sum, _, err := windowPixels(shot)
		steady := sum == last
		last = sum
		return err == nil && steady, errString(err)
	})
	xdotool := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("xdotool", args...).CombinedOutput(); err != nil {
			t.Fatalf("xdotool %v: %v: %s", args, err, out)
		}
	}
	id, err := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^walletsync$").Output()
	if err != nil || len(strings.Fields(string(id))) == 0 {
		t.Fatalf("xdotool search walletsync: %q, %v", id, err)
	}
	// With no window manager, keys go to the window under the pointer.
	xdotool("mousemove", "--window", strings.Fields(string(id))[0], "600", "700")
	xdotool("key", "Return")
	dialogShown := func() (bool, string) {
		out, err := exec.Command("xwininfo", "-root", "-tree").Output()
		return err == nil && strings.Contains(string(out), `"`+openDialogTitle+`"`), string(out)
	}
	waitFor(t, exited, "the native open dialog", dialogShown)
	dialogShot := filepath.Join(artifacts, "desktop-browse-dialog.png")
	var lastShot []byte
	waitFor(t, exited, "the dialog painted and steady", func() (bool, string) {
		out, err := exec.Command("import", "-window", "root", dialogShot).CombinedOutput()
		if err != nil {
			return false, string(out)
		}
		b, err := os.ReadFile(dialogShot)
		steady := err == nil && bytes.Equal(b, lastShot)
		lastShot = b
		return steady, errString(err)
	})
	xdotool("key", "Escape")
	waitFor(t, exited, "the dialog to close", func() (bool, string) {
		shown, seen := dialogShown()
		return !shown, seen
	})
	t.Logf("Browse opened the native dialog; screenshots %s and %s", shot, dialogShot)
}

// backUpOnce runs f's first destination once with an agent of its own and lets its
// schedule go, then stops the agent, so that the window opens on a wallet with a good
// backup.
func backUpOnce(t *testing.T, f walletsynctest.Folder) {
	t.Helper()
	a, err := agent.Start(t.Context(), f.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	c := f.Client(t)
	task, err := c.Run(walletsynctest.Wait(t), "good-1")
	if err != nil {
		t.Fatal(err)
	}
	if task = walletsynctest.WaitTask(t, c, task.ID); task.State != api.TaskSucceeded {
		t.Fatalf("first backup = %+v", task)
	}
	if _, err := c.ResumeAll(walletsynctest.Wait(t)); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls ready until it reports true, failing the test with what it last saw when
// smokeWait passes or the window exits first.
func waitFor(t *testing.T, exited chan error, what string, ready func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(smokeWait)
	for {
		ok, seen := ready()
		if ok {
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the window exited (%v) before %s; last seen:\n%s", err, what, seen)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v; last seen:\n%s", what, smokeWait, seen)
		}
	}
}

// paintedColours is how many distinct colours the window must show to count as painted: a
// blank page is one colour, the dashboard's text alone brings hundreds of anti-aliased
// shades.
const paintedColours = 32

// windowPixels takes a screenshot of the X screen into path and returns a hash of the
// walletsync window's pixels and how many distinct colours they hold.
func windowPixels(path string) (sum uint64, colours int, err error) {
	r, err := windowBounds()
	if err != nil {
		return 0, 0, err
	}
	if out, err := exec.Command("import", "-window", "root", path).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("screenshot: %v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, 0, err
	}
	r = r.Intersect(img.Bounds())
	h := fnv.New64a()
	seen := map[color.Color]bool{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := img.At(x, y)
			seen[c] = true
			cr, cg, cb, _ := c.RGBA()
			h.Write([]byte{byte(cr >> 8), byte(cg >> 8), byte(cb >> 8)})
		}
	}
	return h.Sum64(), len(seen), nil
}

// treeWindow matches a window of `xwininfo -root -tree` named "walletsync": its size and,
// last, its absolute position.
var treeWindow = regexp.MustCompile(`"walletsync": \(.*\)\s+(\d+)x(\d+)[+-]\d+[+-]\d+\s+\+(-?\d+)\+(-?\d+)`)

// windowBounds returns where the window is on the screen. GTK also makes a small unmapped
// "leader" window of the same name, so it is the largest of that name, and it must be at
// least the window's minimum size.
func windowBounds() (image.Rectangle, error) {
	out, err := exec.Command("xwininfo", "-root", "-tree").Output()
	if err != nil {
		return image.Rectangle{}, fmt.Errorf("xwininfo: %w", err)
	}
	var best image.Rectangle
	for _, m := range treeWindow.FindAllStringSubmatch(string(out), -1) {
		var n [4]int
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		if r := image.Rect(n[2], n[3], n[2]+n[0], n[3]+n[1]); r.Dx()*r.Dy() > best.Dx()*best.Dy() {
			best = r
		}
	}
	if best.Dx() < desktop.WindowMinWidth || best.Dy() < desktop.WindowMinHeight {
		return best, fmt.Errorf("no walletsync window of at least %dx%d; windows:\n%s", desktop.WindowMinWidth, desktop.WindowMinHeight, out)
	}
	return best, nil
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
