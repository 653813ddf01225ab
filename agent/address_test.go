package agent

import (
	"context"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// occupy listens on a free loopback port for the rest of the test, as another program
// would, and returns its address.
func occupy(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// freePort returns a loopback address that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rememberedAddr returns the Addr of the config file at path.
func rememberedAddr(t *testing.T, path string) string {
	t.Helper()
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}

// emptyFolder is a data folder and a config path with no config file yet: a fresh install.
func emptyFolder(t *testing.T) Options {
	dir := t.TempDir()
	return Options{Dir: DataDir(filepath.Join(dir, "data")), ConfigPath: filepath.Join(dir, "config.json"), Version: "test"}
}

func restart(t *testing.T, a *Agent, opts Options) *Agent {
	t.Helper()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return launchAgent(t, opts)
}

func TestAgent_RememberedAddrIsUsedAgain(t *testing.T) {
	opts := emptyFolder(t)
	want := freePort(t)
	cfg := DefaultConfig()
	cfg.Addr = want
	if err := SaveConfig(opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, opts)
	if a.srv.Addr() != want || a.AddrNotice() != "" {
		t.Fatalf("listens on %s (notice %q), want the remembered %s and no notice", a.srv.Addr(), a.AddrNotice(), want)
	}
	a = restart(t, a, opts)
	if a.srv.Addr() != want {
		t.Fatalf("after a restart it listens on %s, want %s", a.srv.Addr(), want)
	}
}

func TestAgent_FirstStartRemembersItsAddr(t *testing.T) {
	opts := emptyFolder(t)
	a := launchAgent(t, opts)
	got := a.srv.Addr()
	// DefaultAddr, unless another program (or another test's agent) holds it: then the
	// notice says so. Either way the config remembers exactly where it listens.
	if a.AddrNotice() == "" && got != DefaultAddr {
		t.Errorf("listens on %s without a notice, want %s", got, DefaultAddr)
	}
	if a.AddrNotice() != "" && !strings.Contains(a.AddrNotice(), DefaultAddr+" is taken") {
		t.Errorf("notice %q does not name %s", a.AddrNotice(), DefaultAddr)
	}
	if r := rememberedAddr(t, opts.ConfigPath); r != got {
		t.Fatalf("the config remembers %q, want %s", r, got)
	}
	a = restart(t, a, opts)
	if a.srv.Addr() != got {
		t.Fatalf("the next start listens on %s, want %s", a.srv.Addr(), got)
	}
}

func TestAgent_TakenAddrFallsBackAndSaysSo(t *testing.T) {
	opts := emptyFolder(t)
	taken := occupy(t)
	cfg := DefaultConfig()
	cfg.Addr = taken
	if err := SaveConfig(opts.ConfigPath, cfg); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, opts)
	got := a.srv.Addr()
	if got == taken {
		t.Fatalf("listens on the taken %s", taken)
	}
	n := a.AddrNotice()
	for _, want := range []string{taken + " is taken by another program", "the dashboard is at http://" + got + " instead", `remembered as "addr" in ` + opts.ConfigPath} {
		if !strings.Contains(n, want) {
			t.Errorf("notice %q lacks %q", n, want)
		}
	}
	if r := rememberedAddr(t, opts.ConfigPath); r != got {
		t.Fatalf("the config remembers %q, want the fallback %s", r, got)
	}
	if e, err := opts.Dir.Endpoint(); err != nil || e.Addr != got {
		t.Fatalf("published %+v (%v), want %s", e, err, got)
	}
	a = restart(t, a, opts)
	if a.srv.Addr() != got || a.AddrNotice() != "" {
		t.Fatalf("the next start listens on %s (notice %q), want the remembered %s quietly", a.srv.Addr(), a.AddrNotice(), got)
	}
}

func TestAgent_ExplicitAddrIsNotRemembered(t *testing.T) {
	opts := emptyFolder(t)
	opts.Addr = "127.0.0.1:0"
	launchAgent(t, opts)
	if r := rememberedAddr(t, opts.ConfigPath); r != "" {
		t.Fatalf("an address given for one run was remembered: %q", r)
	}
	taken := occupy(t)
	opts.Dir = DataDir(t.TempDir())
	opts.Addr = taken
	if a, err := Start(context.Background(), opts); err == nil {
		a.Close(context.Background())
		t.Fatalf("an explicit, taken %s fell back to %s; want an error", taken, a.srv.Addr())
	}
}

func TestAddrCandidates_NeighboursThenAnyPort(t *testing.T) {
	for _, tc := range []struct {
		wanted string
		want   []string
	}{
		{"127.0.0.1:7421", []string{"127.0.0.1:7421", "127.0.0.1:7422", "127.0.0.1:7423", "127.0.0.1:7424", "127.0.0.1:7425",
			"127.0.0.1:7426", "127.0.0.1:7427", "127.0.0.1:7428", "127.0.0.1:7429", "127.0.0.1:7430", "127.0.0.1:0"}},
		{"[::1]:65534", []string{"[::1]:65534", "[::1]:65535", "[::1]:0"}},
	} {
		if got := addrCandidates(tc.wanted); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("addrCandidates(%s) = %v, want %v", tc.wanted, got, tc.want)
		}
	}
}

func TestConfig_AddrMustBeStableLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7421", true},
		{"localhost:8000", true},
		{"[::1]:7421", true},
		{"127.0.0.1:0", false},
		{"0.0.0.0:7421", false},
		{"192.168.1.2:7421", false},
		{"127.0.0.1", false},
		{"127.0.0.1:70000", false},
	} {
		cfg := DefaultConfig()
		cfg.Addr = tc.addr
		if err := validateConfig(cfg); (err == nil) != tc.ok {
			t.Errorf("addr %q: %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}
