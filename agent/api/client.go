package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// PreviewBundle starts the verify of the bundle req names, which shows what it holds before
// a restore (see agent.Agent.PreviewBundle); its Result is the bundle.Manifest.
func (c *Client) PreviewBundle(ctx context.Context, req BundleRequest) (Task, error) {
	return call[Task](ctx, c, RouteBundlePreview, req)
}

// RestoreBundle starts the restore of the bundle req names into a configured wallet (see
// agent.Agent.RestoreBundle); req must carry Confirm. Its Result is a BundleRestored.
func (c *Client) RestoreBundle(ctx context.Context, req BundleRequest) (Task, error) {
	return call[Task](ctx, c, RouteBundleRestore, req)
}

// Client calls a running agent's API, as the command line, the tray and the window do: it
// sends the token and the agent's own Origin, builds every path from the Route table
// (wildcards escaped), and turns error bodies into *APIError values. It is safe for
// concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client for the agent at e (see agent.DataDir.Endpoint).
func NewClient(e Endpoint) *Client {
	return &Client{base: "http://" + e.Addr, token: e.Token, http: &http.Client{}}
}

// Call sends in (if not nil) as JSON to route, its wildcards filled with args (see
// Route.Path), and decodes a 2xx response body into out (if not nil). A non-2xx response
// is returned as an *APIError carrying its status. The typed methods below are Call with
// the route's body types.
func (c *Client) Call(ctx context.Context, route Route, in, out any, args ...string) error {
	path := route.Path(args...)
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", route.Method(), path, err)
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, route.Method(), path, body, func(h http.Header) {
		h.Set("Accept", "application/json")
		if in != nil {
			h.Set("Content-Type", "application/json")
		}
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", route.Method(), path, err)
	}
	return nil
}

// send makes one request with the token and the agent's Origin, and returns a 2xx
// response for the caller to read and close; any other status is an *APIError.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, header func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Origin", c.base)
	header(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb errorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == nil {
		return nil, &APIError{Status: resp.StatusCode, Code: "unexpected_response", Message: resp.Status}
	}
	eb.Error.Status = resp.StatusCode
	return nil, eb.Error
}

// call is Call of a route that answers a T.
func call[T any](ctx context.Context, c *Client, route Route, in any, args ...string) (T, error) {
	var out T
	err := c.Call(ctx, route, in, &out, args...)
	return out, err
}

// Status returns the agent's version, uptime and newest event cursor.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return call[Status](ctx, c, RouteStatus, nil)
}

// Address is the agent's dashboard address (http://host:port/), for a person to read; it
// signs nobody in (see LoginURL).
func (c *Client) Address() string { return c.base + "/" }

// LoginURL returns a new one-time login URL for a browser (see Server.LoginURL).
func (c *Client) LoginURL(ctx context.Context) (string, error) {
	login, err := call[struct {
		URL string `json:"url"`
	}](ctx, c, RouteLoginURL, nil)
	return login.URL, err
}

// ForgetBrowsers signs every browser out of the agent (a new sign-in key); a login URL
// signs one in again.
func (c *Client) ForgetBrowsers(ctx context.Context) error {
	return c.Call(ctx, RouteForgetBrowsers, nil, nil)
}

// Overview returns the agent's answer to "am I backed up?".
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	return call[Overview](ctx, c, RouteOverview, nil)
}

// Config returns the agent's config.
func (c *Client) Config(ctx context.Context) (Config, error) {
	return call[Config](ctx, c, RouteConfig, nil)
}

// Destinations returns the configured destinations, without the overview's reading of
// the wallets.
func (c *Client) Destinations(ctx context.Context) ([]Destination, error) {
	cfg, err := c.Config(ctx)
	return cfg.Destinations, err
}

// Tasks returns the agent's tasks, newest first.
func (c *Client) Tasks(ctx context.Context) ([]Task, error) {
	return call[[]Task](ctx, c, RouteTasks, nil)
}

// Task returns task id.
func (c *Client) Task(ctx context.Context, id string) (Task, error) {
	return call[Task](ctx, c, RouteTask, nil, id)
}

// Run asks the agent to bring destination id up to date now, and returns the task.
func (c *Client) Run(ctx context.Context, id string) (Task, error) {
	return call[Task](ctx, c, RouteRun, nil, id)
}

// Cancel cancels task id at its next safe point, and returns it, cancelling.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	return call[Task](ctx, c, RouteTaskCancel, nil, id)
}

// pauseBody is the body of a pause for d; none (until resumed) when d is 0.
func pauseBody(d time.Duration) any {
	if d <= 0 {
		return nil
	}
	return PauseRequest{For: Duration(d)}
}

// Pause holds destination id's scheduled runs back for d, or until resumed when d is 0,
// and returns the new config.
func (c *Client) Pause(ctx context.Context, id string, d time.Duration) (Config, error) {
	return call[Config](ctx, c, RoutePause, pauseBody(d), id)
}

// PauseAll pauses every destination as Pause does.
func (c *Client) PauseAll(ctx context.Context, d time.Duration) (Config, error) {
	return call[Config](ctx, c, RoutePauseAll, pauseBody(d))
}

// Resume lets destination id's scheduled runs go again.
func (c *Client) Resume(ctx context.Context, id string) (Config, error) {
	return call[Config](ctx, c, RouteResume, nil, id)
}

// ResumeAll resumes every destination.
func (c *Client) ResumeAll(ctx context.Context) (Config, error) {
	return call[Config](ctx, c, RouteResumeAll, nil)
}

// AddWallet makes the agent protect the wallet at ref.Path, once the agent has checked it
// is a toolbox wallet; the error says what the file is when it is not one.
func (c *Client) AddWallet(ctx context.Context, ref WalletRef) (Config, error) {
	return call[Config](ctx, c, RouteWalletAdd, ref)
}

// FoundWallets lists the toolbox wallets the agent finds where wallet apps keep them.
func (c *Client) FoundWallets(ctx context.Context) ([]FoundWallet, error) {
	return call[[]FoundWallet](ctx, c, RouteWalletsFound, nil)
}

// ReplaceWallet makes the agent protect req.New in place of req.Old.
func (c *Client) ReplaceWallet(ctx context.Context, req WalletReplaceRequest) (Config, error) {
	return call[Config](ctx, c, RouteWalletReplace, req)
}

// CheckPath asks whether a path will do for its purpose (see agent.Agent.CheckPath).
func (c *Client) CheckPath(ctx context.Context, req PathCheckRequest) (PathCheck, error) {
	return call[PathCheck](ctx, c, RoutePathCheck, req)
}

// Export starts an export task: one BRC-39 file of one identity at req.Path.
func (c *Client) Export(ctx context.Context, req ExportRequest) (Task, error) {
	// A Secret marshals as "[redacted]"; this is the one place it goes onto the wire, to
	// the agent that needs it.
	wire := struct {
		ExportRequest
		Password string `json:"password"`
	}{req, req.Password.Reveal()}
	return call[Task](ctx, c, RouteExport, wire)
}

// importWire is an ImportRequest with its password in clear (see Export).
type importWire struct {
	ImportRequest
	Password string `json:"password"`
}

// PreviewImport starts a task that decrypts the backup file of req and finds what an
// import would do; its Result is the portable.Summary of the preview.
func (c *Client) PreviewImport(ctx context.Context, req ImportRequest) (Task, error) {
	return call[Task](ctx, c, RouteImportPreview, importWire{req, req.Password.Reveal()})
}

// Import starts the import of req, which must carry Confirm: the person saw the preview.
func (c *Client) Import(ctx context.Context, req ImportRequest) (Task, error) {
	return call[Task](ctx, c, RouteImport, importWire{req, req.Password.Reveal()})
}

// StreamedEvent is one event as a client receives it from the event stream. Data stays
// raw JSON: the reader that cares about a Type decodes it (a task.finished event carries
// a Task).
type StreamedEvent struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Type EventType       `json:"type"`
	Data json.RawMessage `json:"data"`
}

// maxEventBytes bounds one event line. Task snapshots are a few KiB; a line past this is
// a broken stream, not an event.
const maxEventBytes = 1 << 20

// ErrEventStreamEnded is the error of an event stream that the agent closed (it stopped,
// or its bus closed): a reason to reconnect, from the cursor Events returned.
var ErrEventStreamEnded = errors.New("event stream ended")

// Events hands the agent's events after cursor (an event id, as Status.Events or an
// earlier Events call gives; "" for every event the agent retains) to handle, in order,
// on the calling goroutine, until the stream ends; a slow handle delays the stream, it
// never drops events. It returns the cursor of the last event handed over (cursor itself
// if none), which resumes the stream where it stopped (sent as Last-Event-ID), and
// opened, which says whether the agent answered with a stream at all. err is never nil:
// ctx's error, ErrEventStreamEnded, or why the stream could not open or broke.
//
// A cursor from an earlier run of the agent is answered with an EventMissed event whose
// Missed.Reset is set, then the new run's retained events.
func (c *Client) Events(ctx context.Context, cursor string, handle func(StreamedEvent)) (next string, opened bool, err error) {
	resp, err := c.send(ctx, RouteEvents.Method(), RouteEvents.Path(), nil, func(h http.Header) {
		h.Set("Accept", "text/event-stream")
		if cursor != "" {
			h.Set("Last-Event-ID", cursor)
		}
	})
	if err != nil {
		return cursor, false, fmt.Errorf("open event stream: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				var ev StreamedEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					return cursor, true, fmt.Errorf("decode event %s: %w", id, err)
				}
				handle(ev)
			}
			if id != "" {
				cursor = id
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
	if err := ctx.Err(); err != nil {
		return cursor, true, err
	}
	if err := sc.Err(); err != nil {
		return cursor, true, fmt.Errorf("read event stream: %w", err)
	}
	return cursor, true, ErrEventStreamEnded
}

// Endpoint is where the command line reaches a running agent.
type Endpoint struct {
	Addr  string // host:port on loopback
	Token string
}

// TestPassword asks whether password opens the newest backup file ("test my password").
func (c *Client) TestPassword(ctx context.Context, password Secret) (PasswordTest, error) {
	// A Secret marshals as "[redacted]": the wire carries the revealed value.
	return call[PasswordTest](ctx, c, RoutePasswordTest, struct {
		Password string `json:"password"`
	}{password.Reveal()})
}
