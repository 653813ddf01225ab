package desktop

import (
	"context"
	"errors"
	"fmt"

	"walletsync/agent"
	"walletsync/agent/api"
)

// AgentLink is how the window and the tray reach the agent: through the data folder's
// endpoint files (agent.DataDir.Endpoint), read again for every request, so that a service
// that restarts on another port is found again without restarting the window. When no
// agent answered at connect time, the link owns an in-process agent and stops it on Close.
type AgentLink struct {
	dir agent.DataDir
	own *agent.Agent // the in-process agent; nil when a running agent (the service) answered
}

// AgentUnreachableError reports that a data folder's agent could not be reached: none is
// running, it did not answer, or a running one holds the folder without answering (then
// no in-process agent can start either).
type AgentUnreachableError struct {
	Dir string
	Err error
}

// Error says which data folder's agent was not reached, and why.
func (e *AgentUnreachableError) Error() string {
	return fmt.Sprintf("reach the walletsync agent of %s: %v", e.Dir, e.Err)
}

// Unwrap returns the cause (agent.ErrAgentNotRunning, a connection error, an
// *agent.AgentRunningError...).
func (e *AgentUnreachableError) Unwrap() error { return e.Err }

// DialAgent returns a link to the running agent of dir, or an *AgentUnreachableError when
// none answers GET /api/v1/status.
func DialAgent(ctx context.Context, dir agent.DataDir) (*AgentLink, error) {
	l := &AgentLink{dir: dir}
	c, err := l.client()
	if err == nil {
		_, err = c.Status(ctx)
	}
	if err != nil {
		return nil, &AgentUnreachableError{Dir: string(dir), Err: err}
	}
	return l, nil
}

// ConnectAgent returns a link to the agent of opts.Dir: the running one (the service) if
// it answers, else a new in-process agent started with opts, which lives until Close. A
// running agent is preferred because it keeps backups going when the window closes.
//
// An agent that published its address and died leaves the address behind; it does not
// answer, its lock died with it, and the in-process agent takes over. One that holds the
// lock but does not answer yields an *AgentUnreachableError carrying both failures.
func ConnectAgent(ctx context.Context, opts agent.Options) (*AgentLink, error) {
	if opts.Dir == "" {
		dir, err := agent.DefaultDataDir()
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	l, dialErr := DialAgent(ctx, opts.Dir)
	if dialErr == nil {
		return l, nil
	}
	a, err := agent.Start(ctx, opts)
	if errors.Is(err, api.ErrAgentRunning) {
		return nil, &AgentUnreachableError{Dir: string(opts.Dir), Err: errors.Join(dialErr, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	return &AgentLink{dir: opts.Dir, own: a}, nil
}

// Endpoint returns the agent's current address and token; it does not wait.
func (l *AgentLink) Endpoint(context.Context) (api.Endpoint, error) { return l.dir.Endpoint() }

// EndpointFunc returns the agent's current address and token. It may wait within ctx (for
// the window to finish connecting).
type EndpointFunc func(ctx context.Context) (api.Endpoint, error)

// client returns an API client for the agent's current address.
func (l *AgentLink) client() (*api.Client, error) {
	e, err := l.dir.Endpoint()
	if err != nil {
		return nil, err
	}
	return api.NewClient(e), nil
}

// InProcess reports whether the link runs its own agent, which stops with the window.
func (l *AgentLink) InProcess() bool { return l.own != nil }

// Close stops the in-process agent, if the link has one, at a safe point; ctx bounds the
// wait for its running tasks. A running agent the link only dialled is left alone.
func (l *AgentLink) Close(ctx context.Context) error {
	if l.own == nil {
		return nil
	}
	return l.own.Close(ctx)
}
