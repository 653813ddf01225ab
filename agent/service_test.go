package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"walletsync/agent/api"

	"github.com/kardianos/service"
)

// Where no per-user service manager runs (this container: SysV init, as root, into /etc)
// the service actions refuse with a hint, before anything is written.
func TestNewService_RefusesWithoutServiceManager(t *testing.T) {
	for _, platform := range []string{"unix-systemv", "linux-upstart", "linux-openrc", "linux-rcs", "linux-procd", "freebsd", ""} {
		_, err := serviceConfig(platform, ServiceOptions{})
		se, ok := errors.AsType[*serviceError](err)
		if hint := api.HintFor(err); !ok || !errors.Is(err, api.ErrNoServiceManager) || se.Platform != platform || !strings.Contains(hint, "walletsync agent") {
			t.Errorf("%q: %v (hint %q), want a *ServiceError wrapping ErrNoServiceManager with a hint", platform, err, hint)
		}
	}
	_, supported := perUserPlatforms[service.Platform()]
	svc, err := NewService(ServiceOptions{})
	if supported != (err == nil) || !supported && !errors.Is(err, api.ErrNoServiceManager) {
		t.Fatalf("on %s: NewService = %v, %v", service.Platform(), svc, err)
	}
}

func TestServiceConfig_PerUserWhereThePlatformAllows(t *testing.T) {
	for _, tc := range []struct {
		platform string
		opts     ServiceOptions
		userSvc  bool
		args     []string
	}{
		{"linux-systemd", ServiceOptions{}, true, []string{"agent"}},
		{"darwin-launchd", ServiceOptions{}, true, []string{"agent"}},
		{"windows-service", ServiceOptions{Arguments: []string{"agent", "--dir", `C:\Users\a\AppData\Local\walletsync`}}, false,
			[]string{"agent", "--dir", `C:\Users\a\AppData\Local\walletsync`}},
	} {
		cfg, err := serviceConfig(tc.platform, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.platform, err)
		}
		if cfg.Name != "walletsync" || !slices.Equal(cfg.Arguments, tc.args) || cfg.Option["UserService"] == true != tc.userSvc {
			t.Errorf("%s: %+v", tc.platform, cfg)
		}
	}
}

// program is a Program that records its life, and that, like the agent, takes a moment
// after ctx ends to finish its work.
type program struct {
	started chan struct{}
	result  error // returned when it starts, if set
	cleaned bool
}

func (p *program) run(ctx context.Context) error {
	close(p.started)
	if p.result != nil {
		return p.result
	}
	<-ctx.Done()
	p.cleaned = true // waits for acknowledged commits, closes stores...
	return fmt.Errorf("agent stopped: %w", ctx.Err())
}

func TestRunService_StopsCleanly(t *testing.T) {
	type stopCase struct {
		name string
		stop func(t *testing.T, cancel context.CancelFunc)
	}
	cases := []stopCase{{"ctx ends", func(_ *testing.T, cancel context.CancelFunc) { cancel() }}}
	// Windows has no signals a process can send itself; there the service manager's stop
	// arrives through the service library, and only the context case applies.
	if runtime.GOOS != "windows" {
		cases = append(cases,
			stopCase{"SIGINT", func(t *testing.T, _ context.CancelFunc) { signalSelf(t, os.Interrupt) }},
			stopCase{"SIGTERM", func(t *testing.T, _ context.CancelFunc) { signalSelf(t, syscall.SIGTERM) }})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &program{started: make(chan struct{})}
			ctx, cancel := context.WithCancel(waitCtx(t))
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- RunService(ctx, p.run) }()
			<-p.started // RunService listens for signals before the program starts
			tc.stop(t, cancel)
			if err := <-done; err != nil || !p.cleaned {
				t.Fatalf("RunService = %v, program finished its work: %v; want nil, true", err, p.cleaned)
			}
		})
	}
}

func signalSelf(t *testing.T, sig os.Signal) {
	self, _ := os.FindProcess(os.Getpid())
	if err := self.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func TestRunService_ProgramFailureEndsRun(t *testing.T) {
	boom := errors.New("data folder locked")
	p := &program{started: make(chan struct{}), result: boom}
	if err := RunService(waitCtx(t), p.run); !errors.Is(err, boom) {
		t.Fatalf("RunService = %v, want the program's error", err)
	}
}
