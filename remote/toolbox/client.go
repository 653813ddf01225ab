package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"walletsync/brc40"
	"walletsync/remote/auth"
	"walletsync/wallet"
)

// Doer sends one authenticated request and returns the verified answer (*auth.Client).
type Doer interface {
	Do(ctx context.Context, method, path string, body []byte) (*auth.Response, error)
}

// ClientOptions tune a Client. Zero values take the defaults.
type ClientOptions struct {
	// Retries bounds how often a request whose repeat cannot apply anything twice (every
	// method but processSyncChunk) is sent again after the server was unavailable (default
	// 8; -1 for none).
	Retries int
	// Backoff is the first retry's delay (default 250 ms); each retry doubles it, up to
	// MaxBackoff (default 4 s). With the defaults a client rides out about 20 s of a
	// restarting server, time for Node to start and migrate its store.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxBodyBytes bounds a request body (default MaxBodyBytes, the StorageServer's limit).
	MaxBodyBytes int64
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.Retries == 0 {
		o.Retries = 8
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff == 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 4 * time.Second
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytes
	}
	return o
}

// Stats count what a Client put on the wire.
type Stats struct {
	Requests      int64 `json:"requests"`
	BytesSent     int64 `json:"bytesSent"` // request bodies
	BytesReceived int64 `json:"bytesReceived"`
	Retries       int64 `json:"retries"`
	// Waiting is the time spent in the Doer: sending, the server's work, the answer's
	// transfer and its BRC-104 checks. Decoding is the time spent reading results into
	// their types. Both sum over every attempt, and over concurrent calls.
	Waiting  time.Duration `json:"waiting"`
	Decoding time.Duration `json:"decoding"`
}

// Client is a toolbox StorageServer as a brc40.ChunkStore: the backup methods the toolbox's
// StorageClient calls (makeAvailable, findOrInsertUser, findOrInsertSyncStateAuth,
// getSyncChunk, processSyncChunk, setActive), with the params exactly as it sends them, over
// one BRC-104 session (auth.Client, which hand-shakes again when the server forgot the
// session, e.g. after a restart).
//
// Errors: a storage error the server answers (HTTP 200 with an error member) is a
// *WalletError and a JSON-RPC refusal (HTTP 400) an *RPCError, both matching
// wallet.ErrRemote (WERR_UNAUTHORIZED also wallet.ErrUnauthorized); a server that cannot
// be reached or whose answer was lost matches wallet.ErrUnavailable. Every method but
// ProcessSyncChunk is retried on wallet.ErrUnavailable with capped exponential backoff,
// since repeating it applies nothing twice; ProcessSyncChunk is sent once (see
// brc40.ChunkConsumer). Answers are bounded by the auth client (MaxResponseBytes) and
// requests by MaxBodyBytes. A Client is safe for concurrent use, but the BRC-40 loop keeps
// one request in flight.
type Client struct {
	doer   Doer
	opts   ClientOptions
	nextID atomic.Int64

	requests, sent, received, retries atomic.Int64
	waiting, decoding                 atomic.Int64 // nanoseconds

	mu       sync.Mutex
	settings *wallet.Settings // cached by MakeAvailable, as the StorageClient caches it
}

var _ brc40.ChunkStore = (*Client)(nil)

// NewClient returns a client that sends its calls through doer.
func NewClient(doer Doer, opts ClientOptions) *Client {
	return &Client{doer: doer, opts: opts.withDefaults()}
}

// Dial returns a client of the StorageServer at baseURL that signs as signer over a new
// BRC-104 session, with answers bounded by the frame ceiling (wallet.MaxFrameBytes).
func Dial(baseURL string, signer auth.Signer, opts ClientOptions) (*Client, error) {
	a, err := auth.NewClient(baseURL, signer, auth.ClientOptions{MaxResponseBytes: wallet.MaxFrameBytes})
	if err != nil {
		return nil, err
	}
	return NewClient(a, opts), nil
}

// Stats returns what the client has sent and received so far.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), BytesSent: c.sent.Load(), BytesReceived: c.received.Load(), Retries: c.retries.Load(),
		Waiting: time.Duration(c.waiting.Load()), Decoding: time.Duration(c.decoding.Load())}
}

// MakeAvailable returns the server's settings row; the first answer is kept, as the
// StorageClient keeps it.
func (c *Client) MakeAvailable(ctx context.Context) (wallet.Settings, error) {
	c.mu.Lock()
	cached := c.settings
	c.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	var st wallet.Settings
	if err := c.call(ctx, "makeAvailable", true, &st); err != nil {
		return wallet.Settings{}, err
	}
	if st.StorageIdentityKey == "" || st.Chain == "" {
		return wallet.Settings{}, fmt.Errorf("makeAvailable: settings without storage identity or chain: %w", wallet.ErrRemote)
	}
	c.mu.Lock()
	c.settings = &st
	c.mu.Unlock()
	return st, nil
}

// FindOrInsertUser calls findOrInsertUser [identityKey]. The server refuses any identity but
// the one the client authenticated as (wallet.ErrUnauthorized).
func (c *Client) FindOrInsertUser(ctx context.Context, identityKey string) (brc40.SyncUser, error) {
	key, err := jsString(identityKey)
	if err != nil {
		return brc40.SyncUser{}, err
	}
	var res struct {
		User  json.RawMessage `json:"user"`
		IsNew bool            `json:"isNew"`
	}
	if err := c.call(ctx, "findOrInsertUser", true, &res, key); err != nil {
		return brc40.SyncUser{}, err
	}
	r, err := rowFromJSON(wallet.Users, res.User)
	if err != nil {
		return brc40.SyncUser{}, fmt.Errorf("findOrInsertUser: %w", err)
	}
	// Normalize gave each column its kind's type, or nil where the column may be NULL.
	get := func(name string) any { return r[wallet.Users.Col(name)] }
	u := brc40.SyncUser{IsNew: res.IsNew}
	u.UserID, _ = get("userId").(int64)
	u.IdentityKey, _ = get("identityKey").(string)
	u.ActiveStorage, _ = get("activeStorage").(string)
	u.UpdatedAt, _ = get("updated_at").(time.Time)
	if u.IdentityKey != identityKey {
		return brc40.SyncUser{}, fmt.Errorf("findOrInsertUser answered for another identity: %w", wallet.ErrRemote)
	}
	return u, nil
}

// FindOrInsertSyncState calls findOrInsertSyncStateAuth [{identityKey}, producerSIK,
// producerName] and returns the server's durable state for the producer.
func (c *Client) FindOrInsertSyncState(ctx context.Context, identityKey, producerSIK, producerName string) (brc40.SyncState, error) {
	authArg, err := authParam(identityKey)
	if err != nil {
		return brc40.SyncState{}, err
	}
	sik, err := jsString(producerSIK)
	if err != nil {
		return brc40.SyncState{}, err
	}
	name, err := jsString(producerName)
	if err != nil {
		return brc40.SyncState{}, err
	}
	var res struct {
		SyncState json.RawMessage `json:"syncState"`
	}
	if err := c.call(ctx, "findOrInsertSyncStateAuth", true, &res, authArg, sik, name); err != nil {
		return brc40.SyncState{}, err
	}
	r, err := rowFromJSON(wallet.SyncStates, res.SyncState)
	if err != nil {
		return brc40.SyncState{}, fmt.Errorf("findOrInsertSyncStateAuth: %w", err)
	}
	st, err := brc40.SyncStateFromRow(r)
	if err != nil {
		return brc40.SyncState{}, fmt.Errorf("findOrInsertSyncStateAuth: %v: %w", err, wallet.ErrRemote)
	}
	return st, nil
}

// GetSyncChunk calls getSyncChunk [args] and reads the chunk strictly.
func (c *Client) GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return brc40.SyncChunk{}, fmt.Errorf("getSyncChunk: %w", err)
	}
	var chunk brc40.SyncChunk
	if err := c.call(ctx, "getSyncChunk", true, &chunk, a); err != nil {
		return brc40.SyncChunk{}, err
	}
	return chunk, nil
}

// ProcessSyncChunk calls processSyncChunk [args, chunk], once: an error matching
// wallet.ErrUnavailable leaves its outcome unknown, and the caller reads the state again
// (a walletsync server's refusal of a chunk that no longer answers its state is one). An
// answer that does not verify (auth.ErrBadSignature) is returned as it is: the merge may
// have landed, which the next run reads from the state.
// A chunk whose request would pass MaxBodyBytes is refused before anything is sent, with
// an error matching wallet.ErrChunkTooLarge.
func (c *Client) ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("processSyncChunk: %w", err)
	}
	ch, err := json.Marshal(chunk)
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, fmt.Errorf("processSyncChunk: %w", err)
	}
	var res brc40.ProcessSyncChunkResult
	if err := c.call(ctx, "processSyncChunk", false, &res, a, ch); err != nil {
		if errors.Is(err, wallet.ErrCheckpointConflict) {
			// A walletsync server merged nothing: its sync state no longer answers args (see
			// brc40.SyncState.Answers). An earlier copy of this request landed (a duplicate
			// the network delivered, whose replay refusal made the auth client send it
			// again) or another run moved the state on: as after a lost answer, the state
			// says where to go on, and the next request, made from it, answers it.
			return brc40.ProcessSyncChunkResult{}, fmt.Errorf("%w: %w", wallet.ErrUnavailable, err)
		}
		return brc40.ProcessSyncChunkResult{}, err
	}
	if err := res.Err(); err != nil {
		return res, fmt.Errorf("processSyncChunk: %w: %w", wallet.ErrRemote, err)
	}
	return res, nil
}

// SetActive calls setActive [{identityKey}, storageIdentityKey].
func (c *Client) SetActive(ctx context.Context, identityKey, storageIdentityKey string) error {
	authArg, err := authParam(identityKey)
	if err != nil {
		return err
	}
	sik, err := jsString(storageIdentityKey)
	if err != nil {
		return err
	}
	return c.call(ctx, "setActive", true, nil, authArg, sik)
}

// call sends method with params and decodes the result into out (nil: ignored). A safe
// call is retried while the server is unavailable.
func (c *Client) call(ctx context.Context, method string, safe bool, out any, params ...json.RawMessage) error {
	body, err := AppendRequest(nil, method, c.nextID.Add(1), params...)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if int64(len(body)) > c.opts.MaxBodyBytes {
		return fmt.Errorf("%s: request of %d bytes, the server accepts %d: %w", method, len(body), c.opts.MaxBodyBytes, wallet.ErrChunkTooLarge)
	}
	backoff := c.opts.Backoff
	for attempt := 0; ; attempt++ {
		result, err := c.once(ctx, body)
		if err == nil {
			if out == nil || result == nil {
				return nil
			}
			began := time.Now()
			err := json.Unmarshal(result, out)
			c.decoding.Add(int64(time.Since(began)))
			if err != nil {
				return fmt.Errorf("%s: read the result: %w: %w", method, err, wallet.ErrRemote)
			}
			return nil
		}
		if !safe || !errors.Is(err, wallet.ErrUnavailable) || attempt >= c.opts.Retries || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		c.retries.Add(1)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", method, errors.Join(err, ctx.Err()))
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// once sends one request and reads its answer.
func (c *Client) once(ctx context.Context, body []byte) (json.RawMessage, error) {
	c.requests.Add(1)
	c.sent.Add(int64(len(body)))
	began := time.Now()
	resp, err := c.doer.Do(ctx, http.MethodPost, "/", body)
	c.waiting.Add(int64(time.Since(began)))
	if err != nil {
		return nil, auth.ClassifyTransport(ctx, err)
	}
	c.received.Add(int64(len(resp.Body)))
	switch {
	case resp.Status == http.StatusOK || resp.Status == http.StatusBadRequest:
		began := time.Now()
		defer func() { c.decoding.Add(int64(time.Since(began))) }()
		return ParseResponse(resp.Body)
	case resp.Status >= 500:
		return nil, fmt.Errorf("HTTP %d: %w", resp.Status, wallet.ErrUnavailable)
	}
	return nil, fmt.Errorf("HTTP %d %.200q: %w", resp.Status, bytes.TrimSpace(resp.Body), wallet.ErrRemote)
}

func jsString(s string) (json.RawMessage, error) {
	b, err := wallet.AppendJSString(nil, s)
	if err != nil {
		return nil, fmt.Errorf("encode parameter: %w", err)
	}
	return b, nil
}

// authParam is the auth object the StorageClient passes first: {"identityKey": ...}. The
// server checks it against the authenticated identity and adds the user's id itself.
func authParam(identityKey string) (json.RawMessage, error) {
	key, err := jsString(identityKey)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"identityKey":`), key...), '}'), nil
}

// rowFromJSON reads a table row the server sent as an object (dates as ISO strings, numbers,
// booleans or 0/1), ignoring keys that are not columns, and normalizes it.
func rowFromJSON(t *wallet.Table, raw json.RawMessage) (wallet.Row, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s row is not a JSON object: %w", t.Name, wallet.ErrRemote)
	}
	r := make(wallet.Row, len(t.Columns))
	for i, col := range t.Columns {
		v, ok := obj[col.Name]
		if !ok || string(v) == "null" {
			continue
		}
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name, col.Name, wallet.ErrRemote)
		}
		if n, ok := x.(json.Number); ok {
			i64, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %q is not an integer: %w", t.Name, col.Name, n, wallet.ErrRemote)
			}
			x = i64
		}
		r[i] = x
	}
	if err := t.Normalize(r); err != nil {
		return nil, fmt.Errorf("%v: %w", err, wallet.ErrRemote)
	}
	return r, nil
}
