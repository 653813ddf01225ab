package desktop

import (
	"context"
	"log/slog"
	"time"

	"walletsync/agent/api"
)

// Reconnect delays of followEvents: the first retry comes soon (an agent restarting is back
// within a second), later ones back off so that a stopped agent costs a request every few
// seconds, not a busy loop.
const (
	eventRetryFirst = 250 * time.Millisecond
	eventRetryMax   = 5 * time.Second
)

// followEvents calls handle with every agent event published after cursor (an event id,
// as EventCursor returns), in order, until ctx ends; then it returns ctx's error. An empty
// cursor means "from the newest event once the agent answers", never the retained history:
// a window that opens must not announce yesterday's failures again.
//
// When the stream drops it reconnects, to the address endpoint returns then, with the
// last event id it saw (Last-Event-ID), so nothing is lost while the agent runs. After the
// agent restarts, the new agent answers with an agent.EventMissed event whose Missed.Reset
// is set, then its whole history since it started; handle sees both. handle runs on the
// calling goroutine: a slow handle delays the stream, it never drops events. Why the stream
// dropped goes to log, once per outage: a stopped agent would otherwise log every retry.
func followEvents(ctx context.Context, endpoint EndpointFunc, cursor string, log *slog.Logger, handle func(api.StreamedEvent)) error {
	delay := eventRetryFirst
	for {
		var err error
		if cursor == "" {
			cursor, err = EventCursor(ctx, endpoint)
		}
		if err == nil {
			var opened bool
			cursor, opened, err = streamEvents(ctx, endpoint, cursor, handle)
			if opened {
				delay = eventRetryFirst
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && delay == eventRetryFirst {
			log.Warn("agent event stream dropped, reconnecting", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, eventRetryMax)
	}
}

// EventCursor returns the cursor of the agent's newest event (its status).
func EventCursor(ctx context.Context, endpoint EndpointFunc) (string, error) {
	e, err := endpoint(ctx)
	if err != nil {
		return "", err
	}
	st, err := api.NewClient(e).Status(ctx)
	return st.Events, err
}

// streamEvents reads one connection of the event stream of the agent endpoint returns,
// from cursor on (see agent.Client.Events).
func streamEvents(ctx context.Context, endpoint EndpointFunc, cursor string, handle func(api.StreamedEvent)) (next string, opened bool, err error) {
	e, err := endpoint(ctx)
	if err != nil {
		return cursor, false, err
	}
	return api.NewClient(e).Events(ctx, cursor, handle)
}
