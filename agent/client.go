package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Client calls a running agent's API, as the command line does: it sends the token and
// the agent's own Origin, and turns error bodies into *APIError values.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client for the agent at e (see DataDir.Endpoint).
func NewClient(e Endpoint) *Client {
	return &Client{base: "http://" + e.Addr, token: e.Token, http: &http.Client{}}
}

// Do sends in (if not nil) as JSON to method path, and decodes a 2xx response body into
// out (if not nil). A non-2xx response is returned as an *APIError carrying its status.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Origin", c.base)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var eb errorBody
		if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == nil {
			return &APIError{Status: resp.StatusCode, Code: "unexpected_response", Message: resp.Status}
		}
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}
