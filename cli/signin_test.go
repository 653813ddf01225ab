package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/testkit/walletsynctest"
)

// syncBuffer is a bytes.Buffer that a running command writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCLI_AgentSaysWhenItsPortIsTaken: `walletsync agent`, whose remembered port another
// program holds, says so, serves on another port and remembers that one.
func TestCLI_AgentSaysWhenItsPortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	dir := t.TempDir()
	data, config := filepath.Join(dir, "data"), filepath.Join(dir, "config.json")
	cfg := agent.DefaultConfig()
	cfg.Addr = taken
	if err := agent.SaveConfig(config, cfg); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- Run(ctx, []string{"agent", "--data-dir", data, "--config", config}, &out, &errOut) }()
	deadline := time.Now().Add(30 * time.Second) // against a hang, not a timing assertion
	for !strings.Contains(out.String(), "walletsync agent running") {
		select {
		case code := <-exited:
			t.Fatalf("the agent exited %d: %s %s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the agent never said it runs: %q", out.String())
		}
	}
	e, err := agent.DataDir(data).Endpoint()
	cancel()
	if code := <-exited; code != 0 {
		t.Errorf("the agent exited %d: %s", code, errOut.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{taken + " is taken by another program", "the dashboard is at http://" + e.Addr + " instead", `remembered as "addr" in ` + config,
		"dashboard: http://" + e.Addr + "/login?code="} {
		if !strings.Contains(text, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(config)
	var back api.Config
	if err == nil {
		err = json.Unmarshal(b, &back)
	}
	if err != nil || back.Addr != e.Addr || e.Addr == taken {
		t.Fatalf("the config remembers %q (%v); the agent listened on %s, the taken port was %s", back.Addr, err, e.Addr, taken)
	}
}

// TestCLI_OpenForgetBrowsersSignsEveryBrowserOut: a browser's cookie works until `walletsync
// open --forget-browsers`, after which its pages get the sign-in page; the new link signs
// it in again.
func TestCLI_OpenForgetBrowsersSignsEveryBrowserOut(t *testing.T) {
	f := walletsynctest.NewFolder(t, nil)
	a := f.StartAgent(t)
	signIn := func(args ...string) *http.Cookie {
		t.Helper()
		code, out, stderr := walletsync(t, append([]string{"open", "--print-only", "--data-dir=" + string(f.Dir)}, args...)...)
		i := strings.Index(out, "dashboard: ")
		if code != 0 || i < 0 {
			t.Fatalf("open %v: exit %d, %q (%s)", args, code, out, stderr)
		}
		link := strings.Fields(out[i+len("dashboard: "):])[0]
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(resp.Cookies()) != 1 {
			t.Fatalf("the link answered %s with %d cookies", resp.Status, len(resp.Cookies()))
		}
		return resp.Cookies()[0]
	}
	get := func(path string, c *http.Cookie) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", a.URL()+path, nil)
		req.AddCookie(c)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}
	old := signIn()
	if code, _ := get("/api/v1/status", old); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}
	fresh := signIn("--forget-browsers")
	if code, _ := get("/api/v1/status", old); code != http.StatusUnauthorized {
		t.Errorf("the old cookie after --forget-browsers: %d, want 401", code)
	}
	if code, ct := get("/", old); code != http.StatusUnauthorized || !strings.HasPrefix(ct, "text/html") {
		t.Errorf("a page with the old cookie: %d %s, want the sign-in page", code, ct)
	}
	if code, _ := get("/api/v1/status", fresh); code != http.StatusOK {
		t.Errorf("the new link's cookie: %d", code)
	}
}
