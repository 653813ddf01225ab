package desktop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"walletsync/agent"
)

// streamEvent is one agent event as GET /api/v1/events carries it. Data stays raw: the
// reader that cares about a Type decodes it (a task.finished event carries an agent.Task).
type streamEvent struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Type agent.EventType `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Reconnect delays of followEvents: the first retry comes soon (an agent restarting is back
// within a second), later ones back off so that a stopped agent costs a request every few
// seconds, not a busy loop.
const (
	eventRetryFirst = 250 * time.Millisecond
	eventRetryMax   = 5 * time.Second
)

// maxEventBytes bounds one event line. Task snapshots are a few KiB; a line past this is a
// broken stream, not an event.
const maxEventBytes = 1 << 20

// followEvents calls handle with every agent event published after cursor (an event id,
// as EventCursor returns), in order, until ctx ends; then it returns ctx's error. An empty
// cursor means "from the newest event once the agent answers", never the retained history:
// a window that opens must not announce yesterday's failures again.
//
// When the stream drops it reconnects, to the address endpoint returns then, with the
// last event id it saw (Last-Event-ID), so nothing is lost while the agent runs. After the
// agent restarts, the new agent answers with an agent.EventMissed event whose Missed.Reset
// is set, then its whole history since it started; handle sees both. handle runs on the
// calling goroutine: a slow handle delays the stream, it never drops events.
func followEvents(ctx context.Context, endpoint EndpointFunc, cursor string, handle func(streamEvent)) error {
	delay := eventRetryFirst
	for {
		var err error
		if cursor == "" {
			cursor, err = EventCursor(ctx, endpoint)
		}
		if err == nil {
			var progressed bool
			progressed, err = streamEvents(ctx, endpoint, &cursor, handle)
			if progressed {
				delay = eventRetryFirst
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, eventRetryMax)
	}
}

// EventCursor returns the cursor of the agent's newest event (GET /api/v1/status).
func EventCursor(ctx context.Context, endpoint EndpointFunc) (string, error) {
	e, err := endpoint(ctx)
	if err != nil {
		return "", err
	}
	var st agent.Status
	if err := agent.NewClient(e).Do(ctx, "GET", "/api/v1/status", nil, &st); err != nil {
		return "", err
	}
	return st.Events, nil
}

// streamEvents reads one connection of the event stream, from *cursor on, advancing
// *cursor past each event it hands over. progressed reports whether the agent answered
// with a stream at all, so that the caller resets its back-off.
func streamEvents(ctx context.Context, endpoint EndpointFunc, cursor *string, handle func(streamEvent)) (progressed bool, err error) {
	e, err := endpoint(ctx)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+e.Addr+"/api/v1/events", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", *cursor)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("open event stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("open event stream: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				var ev streamEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					return true, fmt.Errorf("decode event %s: %w", id, err)
				}
				handle(ev)
			}
			if id != "" {
				*cursor = id
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
	if err := sc.Err(); err != nil {
		return true, fmt.Errorf("read event stream: %w", err)
	}
	return true, errors.New("event stream ended")
}
