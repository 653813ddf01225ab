package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"walletsync/agent/api"

	"github.com/kardianos/service"
)

// serviceName is the agent's name with the platform's service manager.
const serviceName = "walletsync"

// serviceError reports a failed service action.
type serviceError struct {
	Op       string // control (no manager), install, uninstall, start, stop, status, run
	Platform string // the service manager, as kardianos/service names it
	Err      error
}

func (e *serviceError) Error() string {
	return fmt.Sprintf("%s service on %s: %v", e.Op, e.Platform, e.Err)
}

// Unwrap returns the cause (ErrNoServiceManager, or the service manager's error).
func (e *serviceError) Unwrap() error { return e.Err }

// ServiceOptions say what the installed service runs.
type ServiceOptions struct {
	// Executable is the program to run; default the running executable.
	Executable string
	// Arguments are its arguments; default "agent". The Windows service runs as
	// LocalSystem, whose folders are not the person's: pass the data and config folders
	// explicitly there.
	Arguments []string
}

// perUserPlatforms are the service managers walletsync installs with, and how. A per-user
// service where the manager has one: a systemd user unit (~/.config/systemd/user, no admin
// rights, runs in the person's session) or a launchd LaunchAgent (~/Library/LaunchAgents,
// started at login). Windows has no per-user services, so there it is a system-wide
// service, installed from an elevated prompt.
//
// Every other manager kardianos/service knows (SysV init, Upstart, OpenRC, rcS, procd, the
// BSDs') installs system-wide only, as root, into /etc: the wrong place for a desktop
// agent that guards one person's wallet. There, and where no manager runs at all (a
// container falls back to SysV), the answer is ErrNoServiceManager: run
// "walletsync agent" from the session's autostart instead.
var perUserPlatforms = map[string]service.KeyValue{
	"linux-systemd":   {"UserService": true},
	"darwin-launchd":  {"UserService": true, "RunAtLoad": true, "KeepAlive": true},
	"windows-service": {},
}

// Service controls the agent's service with the platform's service manager.
type Service struct {
	svc      service.Service
	platform string
}

// NewService returns the agent's service as opts describe it, for the platform's service
// manager. Where walletsync cannot install a per-user service (see perUserPlatforms) it
// refuses with a *serviceError wrapping ErrNoServiceManager, carrying a hint; nothing is
// written anywhere.
func NewService(opts ServiceOptions) (*Service, error) {
	platform := service.Platform()
	cfg, err := serviceConfig(platform, opts)
	if err != nil {
		return nil, err
	}
	svc, err := service.New(controlOnly{}, cfg)
	if err != nil {
		return nil, &serviceError{Op: "control", Platform: platform, Err: err}
	}
	return &Service{svc: svc, platform: platform}, nil
}

// serviceConfig is the service's configuration for platform's service manager.
func serviceConfig(platform string, opts ServiceOptions) (*service.Config, error) {
	option, ok := perUserPlatforms[platform]
	if !ok {
		return nil, api.WithHint(&serviceError{Op: "control", Platform: platform, Err: api.ErrNoServiceManager},
			"walletsync installs itself with systemd user units, launchd or the Windows service manager; "+
				"here, start \"walletsync agent\" with your desktop session (an autostart entry) instead.")
	}
	args := opts.Arguments
	if len(args) == 0 {
		args = []string{"agent"}
	}
	return &service.Config{
		Name:        serviceName,
		DisplayName: "walletsync agent",
		Description: "Keeps a BSV wallet's store safe: syncs and encrypted backups.",
		Executable:  opts.Executable,
		Arguments:   slices.Clone(args),
		Option:      maps.Clone(option),
	}, nil
}

// controlOnly is the program of a Service used to install, start, stop or query: those
// actions never run it.
type controlOnly struct{}

func (controlOnly) Start(service.Service) error { return nil }
func (controlOnly) Stop(service.Service) error  { return nil }

// Platform returns the service manager's name.
func (s *Service) Platform() string { return s.platform }

// Install registers the service with the service manager; it fails if it is installed.
func (s *Service) Install() error { return s.do("install", s.svc.Install) }

// Uninstall removes the service; it fails if it is not installed.
func (s *Service) Uninstall() error { return s.do("uninstall", s.svc.Uninstall) }

// Start asks the service manager to start the service.
func (s *Service) Start() error { return s.do("start", s.svc.Start) }

// Stop asks the service manager to stop the service.
func (s *Service) Stop() error { return s.do("stop", s.svc.Stop) }

func (s *Service) do(op string, f func() error) error {
	if err := f(); err != nil {
		return &serviceError{Op: op, Platform: s.platform, Err: err}
	}
	return nil
}

// Status asks the service manager about the service. A service that is not installed is
// ServiceNotInstalled, not an error.
func (s *Service) Status() (api.ServiceStatus, error) {
	st, err := s.svc.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		return api.ServiceNotInstalled, nil
	case err != nil:
		return "", &serviceError{Op: "status", Platform: s.platform, Err: err}
	case st == service.StatusRunning:
		return api.ServiceRunning, nil
	case st == service.StatusStopped:
		return api.ServiceStopped, nil
	}
	return "", &serviceError{Op: "status", Platform: s.platform, Err: errors.New("the service manager reports no status")}
}

// Program is the agent's main loop: it runs until ctx is cancelled, then stops at a safe
// point and returns.
type Program func(ctx context.Context) error

// RunService runs program in the foreground under the service library, which is how
// "walletsync agent" runs both from a terminal and under a service manager. program's
// ctx is cancelled on SIGINT or SIGTERM (on Windows under the service control manager:
// its stop request) or when ctx ends; RunService then waits for program to return.
//
// It returns program's error; an error that only reports the cancellation it was asked
// for counts as a clean stop (nil). A program that returns by itself ends the run too.
func RunService(ctx context.Context, program Program) error {
	signals, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &serviceProgram{run: program, ctx: signals, exited: make(chan struct{})}
	svc, err := service.New(p, &service.Config{
		Name: serviceName,
		// RunWait replaces the library's own signal wait, which would ignore ctx and a
		// program that has already returned.
		Option: service.KeyValue{"RunWait": func() {
			select {
			case <-signals.Done():
			case <-p.exited:
			}
		}},
	})
	if err != nil {
		return &serviceError{Op: "run", Platform: service.Platform(), Err: err}
	}
	if err := svc.Run(); err != nil {
		return err
	}
	return p.err
}

// serviceProgram adapts a Program to the service library's Start and Stop.
type serviceProgram struct {
	run    Program
	ctx    context.Context
	cancel context.CancelFunc
	exited chan struct{} // closed when run has returned; err is set then
	err    error
}

// Start runs the program in a goroutine: the library wants Start to return at once.
func (p *serviceProgram) Start(service.Service) error {
	ctx, cancel := context.WithCancel(p.ctx)
	p.cancel = cancel
	go func() {
		defer close(p.exited)
		err := p.run(ctx)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = nil
		}
		p.err = err
	}()
	return nil
}

// Stop cancels the program and waits for it to return.
func (p *serviceProgram) Stop(service.Service) error {
	p.cancel()
	<-p.exited
	return nil
}

// serviceInfo reports the platform service; an environment without a service manager is
// reported, not failed.
func serviceInfo() api.ServiceInfo {
	svc, err := NewService(ServiceOptions{})
	if errors.Is(err, api.ErrNoServiceManager) {
		ex := api.Explain(err)
		return api.ServiceInfo{Status: api.ServiceUnavailable, Note: ex.Message + " " + ex.Hint}
	}
	if err != nil {
		return api.ServiceInfo{Error: err.Error(), Hint: api.HintFor(err)}
	}
	info := api.ServiceInfo{Platform: svc.Platform()}
	if info.Status, err = svc.Status(); err != nil {
		info.Error, info.Hint = err.Error(), api.HintFor(err)
	}
	return info
}

// serviceAction does what the dashboard asked of the platform service, and reports it.
func serviceAction(do func(*Service) error) (api.ServiceInfo, error) {
	svc, err := NewService(ServiceOptions{})
	if err != nil {
		return api.ServiceInfo{}, err
	}
	if err := do(svc); err != nil {
		return api.ServiceInfo{}, err
	}
	return serviceInfo(), nil
}
