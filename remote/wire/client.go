package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/wallet"
)

// Provider is the client side of the wire: a wallet.Source and wallet.Destination whose
// store is a walletsync server, reached through an authenticated auth.Client. The server
// serves the client's own identity only, so the identity of every page request and session
// must be the auth.Client's signer's.
//
// The first request negotiates: the Provider asks the server's capabilities, picks the
// highest wire version both speak and its preferred encoding when the server offers it
// (else the other one), and keeps the answer for its lifetime; a negotiation that fails is
// tried again on the next request. Every later call is one HTTP request, so a sync of an
// unchanged wallet to a Provider (syncer.Run with it as the destination) is one request.
//
// A refusal of the server comes back as the typed error its backend returned (see
// errors.go); a busy server's is a *wallet.BusyError, retried within
// ProviderOptions.BusyWait where a repeat cannot apply anything twice (opening a view,
// reading a page). A request whose answer was lost or that found no server (a dropped or
// reset connection, an answer cut short, a restarting server) fails with
// wallet.ErrUnavailable (auth.ClassifyTransport), and every request but Commit and the
// view's Close is sent again then, ProviderOptions.Retries times with backoff: they only
// read. A Commit is sent once; the session settles it by reading the durable checkpoint.
// Provider is safe for concurrent use.
type Provider struct {
	client *auth.Client
	codec  *codec
	opts   ProviderOptions

	mu   sync.Mutex
	caps Capabilities // the server's, once negotiated
	enc  Encoding     // "" until negotiated
}

// ProviderOptions tune a Provider.
type ProviderOptions struct {
	// Encoding is the frame encoding the Provider prefers: EncodingZstd (the default) or
	// EncodingJSON.
	Encoding Encoding
	// BusyWait is how long OpenView and ReadPage keep retrying a busy server, waiting what
	// each answer's retry hint says (at least 50 ms, at most 5 s each time). 0 returns
	// the *wallet.BusyError at once.
	BusyWait time.Duration
	// Retries bounds how often a request that only reads is sent again after the server
	// was unavailable (default 8; -1 for none). Backoff is the first retry's delay
	// (default 250 ms); each retry doubles it, up to MaxBackoff (default 4 s). With the
	// defaults a client rides out about 20 s of a restarting server.
	Retries    int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// CloseTimeout bounds View.Close and View.Resume, which have no context of their own
	// (default 10 s). A view whose close is lost is reaped by the server at the end of its
	// lifetime.
	CloseTimeout time.Duration
	// Capabilities, when set, are the server's capabilities as Probe returned them through
	// the same client: the Provider chooses its encoding from them instead of asking the
	// server again. A server's capabilities do not depend on what the client offers.
	Capabilities *Capabilities
}

// Compile-time checks of the contract.
var (
	_ wallet.Source      = (*Provider)(nil)
	_ wallet.Destination = (*Provider)(nil)
	_ wallet.View        = (*remoteView)(nil)
)

// NewProvider returns a Provider that talks to the server behind client. Its auth client
// must allow responses of MaxBodyBytes (auth.ClientOptions.MaxResponseBytes), or the
// largest pages fail. Given the server's capabilities (ProviderOptions.Capabilities), it
// chooses the version and encoding at once and fails with ErrIncompatible when the server
// shares none with this client.
func NewProvider(client *auth.Client, opts ProviderOptions) (*Provider, error) {
	switch opts.Encoding {
	case "":
		opts.Encoding = EncodingZstd
	case EncodingZstd, EncodingJSON:
	default:
		return nil, fmt.Errorf("new walletsync provider: encoding %q: %w", opts.Encoding, wallet.ErrInvalidArgument)
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = 8
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 4 * time.Second
	}
	p := &Provider{client: client, codec: newCodec(), opts: opts}
	if opts.Capabilities != nil {
		// Known capabilities negotiate without a request: a server that shares nothing
		// with this client is refused here, where a caller can still choose another wire.
		if _, err := p.negotiate(context.Background()); err != nil {
			return nil, fmt.Errorf("new walletsync provider: %w", err)
		}
	}
	return p, nil
}

// Negotiated returns the server's capabilities and the encoding the Provider chose; the
// encoding is "" before the first request.
func (p *Provider) Negotiated() (Capabilities, Encoding) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.caps, p.enc
}

// negotiate returns the encoding to use, asking the server the first time.
func (p *Provider) negotiate(ctx context.Context) (Encoding, error) {
	p.mu.Lock()
	enc := p.enc
	p.mu.Unlock()
	if enc != "" {
		return enc, nil
	}
	var caps Capabilities
	if p.opts.Capabilities != nil {
		caps = *p.opts.Capabilities
	} else {
		var err error
		if caps, err = capabilities(ctx, p.client, []Encoding{p.opts.Encoding}); err != nil {
			return "", err
		}
	}
	if !slices.Contains(caps.Versions, Version) {
		return "", fmt.Errorf("server speaks wire versions %v, this client %d: %w", caps.Versions, Version, ErrIncompatible)
	}
	switch {
	case slices.Contains(caps.Encodings, p.opts.Encoding):
		enc = p.opts.Encoding
	case slices.Contains(caps.Encodings, EncodingZstd):
		enc = EncodingZstd
	case slices.Contains(caps.Encodings, EncodingJSON):
		enc = EncodingJSON
	default:
		return "", fmt.Errorf("server offers encodings %v: %w", caps.Encodings, ErrIncompatible)
	}
	p.mu.Lock()
	p.caps, p.enc = caps, enc
	p.mu.Unlock()
	return enc, nil
}

// Probe asks the server at baseURL, through client (an auth.Client for the same URL),
// whether it speaks walletsync's wire, and returns its capabilities. A server that does not
// is reported with ErrNotWalletsync, so that a caller can fall back to the toolbox's
// JSON-RPC wire: an authenticated server without the endpoint (404, 405, or an answer that
// is not walletsync's), and a @bsv/wallet-toolbox StorageServer, whose middleware answers
// an unknown path with a signed response whose body never comes (verified against 2.1.26),
// recognised then by the banner it serves on GET / without authentication ("BRC-100 ...
// Storage Provider."). Any other failure (no server, a refused handshake) is returned as
// it is, since it says nothing about the wire.
func Probe(ctx context.Context, baseURL string, client *auth.Client) (Capabilities, error) {
	caps, err := capabilities(ctx, client, []Encoding{EncodingZstd, EncodingJSON})
	if err == nil || errors.Is(err, ErrNotWalletsync) || ctx.Err() != nil {
		return caps, err
	}
	var rej *auth.RejectedError
	if !errors.As(err, &rej) && isToolbox(ctx, baseURL) {
		return Capabilities{}, fmt.Errorf("%w (the server's GET / is the toolbox's): %w", ErrNotWalletsync, err)
	}
	return Capabilities{}, err
}

// Hello is what a walletsync server answers to an unauthenticated GET of Prefix (see Detect).
const Hello = "walletsync paged wire " + "1\n"

// Detect reports, without authenticating, whether the server at baseURL says it serves this
// wire: a GET of Prefix answered with Hello. It costs one short request, where Probe against
// a server without the wire may wait for its authentication to fail; a caller that chooses
// a wire on its own asks Detect first and Probe only when it says yes.
func Detect(ctx context.Context, baseURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+Prefix, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK && string(b) == Hello
}

// capabilities asks the server's capabilities, in plain JSON, which every server reads.
func capabilities(ctx context.Context, client *auth.Client, encodings []Encoding) (Capabilities, error) {
	body, _ := json.Marshal(capabilitiesRequest{Versions: []int{Version}, Encodings: encodings})
	resp, err := client.Do(ctx, http.MethodPost, Prefix+pathCapabilities, body)
	var rej *auth.RejectedError
	if errors.As(err, &rej) && (rej.Status == http.StatusNotFound || rej.Status == http.StatusMethodNotAllowed) {
		return Capabilities{}, fmt.Errorf("probe walletsync wire: HTTP %d: %w", rej.Status, ErrNotWalletsync)
	}
	if err != nil {
		return Capabilities{}, fmt.Errorf("probe walletsync wire: %w", auth.ClassifyTransport(ctx, err))
	}
	var caps Capabilities
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &caps) != nil || caps.Wire != wireName {
		return Capabilities{}, fmt.Errorf("probe walletsync wire: HTTP %d, not walletsync's answer: %w", resp.Status, ErrNotWalletsync)
	}
	return caps, nil
}

// call sends one request of the wire and decodes its answer into ans, returning the rows
// the answer carries.
func (p *Provider) call(ctx context.Context, path string, req any, rows []wallet.Row, ans any) ([]wallet.Row, error) {
	enc, err := p.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	body, err := p.codec.encode(enc, req, rows)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.DoContent(ctx, http.MethodPost, Prefix+path, enc.contentType(), body)
	if err != nil {
		return nil, auth.ClassifyTransport(ctx, err)
	}
	if resp.Status != http.StatusOK {
		return nil, fromWire(resp.Status, resp.Body)
	}
	return p.codec.decode(ctx, enc, resp.Body, ans)
}

// retry runs fn, a request that only reads, again while it fails with a
// *wallet.BusyError (within BusyWait, waiting what each answer's retry hint says, at least
// 50 ms and at most 5 s) or with wallet.ErrUnavailable (Retries times, with backoff).
func (p *Provider) retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(p.opts.BusyWait)
	backoff, retries := p.opts.Backoff, 0
	for {
		err := fn()
		var busy *wallet.BusyError
		var wait time.Duration
		switch {
		case errors.As(err, &busy) && p.opts.BusyWait > 0:
			wait = min(max(busy.RetryAfter, 50*time.Millisecond), 5*time.Second)
			if time.Now().Add(wait).After(deadline) {
				return err
			}
		case errors.Is(err, wallet.ErrUnavailable) && retries < p.opts.Retries && ctx.Err() == nil:
			wait, backoff = backoff, min(2*backoff, p.opts.MaxBackoff)
			retries++
		default:
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// Describe returns the server store's settings and capabilities.
func (p *Provider) Describe(ctx context.Context) (wallet.Settings, wallet.Capabilities, error) {
	var ans describeAnswer
	err := p.retry(ctx, func() error {
		_, err := p.call(ctx, pathDescribe, empty{}, nil, &ans)
		return err
	})
	if err != nil {
		return wallet.Settings{}, wallet.Capabilities{}, fmt.Errorf("describe remote source: %w", err)
	}
	return ans.Settings, ans.Capabilities, nil
}

// OpenView opens a view retained on the server for lifetime (the server's default when
// 0). Its reads, resumes and close are requests on that view; when the server forgot it
// (its lifetime ended, the server restarted), they fail with wallet.ErrSnapshotClosed or
// wallet.ErrSnapshotExpired and the session opens another.
func (p *Provider) OpenView(ctx context.Context, lifetime time.Duration) (wallet.View, error) {
	if lifetime < 0 || (lifetime > 0 && lifetime < time.Millisecond) {
		return nil, fmt.Errorf("open remote view: lifetime %v: %w", lifetime, wallet.ErrInvalidArgument)
	}
	var ans openViewAnswer
	err := p.retry(ctx, func() error {
		_, err := p.call(ctx, pathOpenView, openViewRequest{LifetimeMs: lifetime.Milliseconds()}, nil, &ans)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open remote view: %w", err)
	}
	return &remoteView{p: p, ans: ans}, nil
}

// Begin describes the server store as a destination and returns the session's durable
// checkpoint there, in one request.
func (p *Provider) Begin(ctx context.Context, session wallet.SessionKey) (wallet.DestinationState, error) {
	var st wallet.DestinationState
	err := p.retry(ctx, func() error {
		_, err := p.call(ctx, pathBegin, sessionRequest{Session: session}, nil, &st)
		return err
	})
	if err != nil {
		return wallet.DestinationState{}, fmt.Errorf("begin at remote destination: %w", err)
	}
	return st, nil
}

// Checkpoint returns the session's durable checkpoint at the server.
func (p *Provider) Checkpoint(ctx context.Context, session wallet.SessionKey) (wallet.Checkpoint, error) {
	var cp wallet.Checkpoint
	err := p.retry(ctx, func() error {
		_, err := p.call(ctx, pathCheckpoint, sessionRequest{Session: session}, nil, &cp)
		return err
	})
	if err != nil {
		return wallet.Checkpoint{}, fmt.Errorf("read remote checkpoint: %w", err)
	}
	return cp, nil
}

// Commit sends one batch; the server commits its page and checkpoint in one transaction
// (see wallet.Destination). It is never retried here: after a lost answer the session
// reads the durable checkpoint instead.
func (p *Provider) Commit(ctx context.Context, b wallet.Batch) (wallet.Ack, error) {
	var ack wallet.Ack
	if _, err := p.call(ctx, pathCommit, headOfBatch(b), b.Page.Rows, &ack); err != nil {
		return wallet.Ack{}, fmt.Errorf("commit at remote destination: %w", err)
	}
	return ack, nil
}

// remoteView is a view retained on the server.
type remoteView struct {
	p   *Provider
	ans openViewAnswer

	closeOnce sync.Once
}

// ID returns the server view's id, which its cursors and checkpoints carry.
func (v *remoteView) ID() string { return v.ans.ID }

// Journal answers from the coverage the server sent when the view opened.
func (v *remoteView) Journal(since int64) (int64, bool) {
	return v.ans.HighWater, v.ans.Journal && since >= v.ans.CoveredFrom && since <= v.ans.HighWater
}

// ReadPage reads one page of the view on the server.
func (v *remoteView) ReadPage(ctx context.Context, req wallet.PageRequest) (wallet.Page, error) {
	var head pageHead
	var rows []wallet.Row
	err := v.p.retry(ctx, func() error {
		var err error
		rows, err = v.p.call(ctx, pathReadPage, readPageRequest{Handle: v.ans.Handle, Table: req.Table, IdentityKey: req.IdentityKey,
			After: req.After, Rows: req.Limits.Rows, Bytes: req.Limits.Bytes, Incremental: req.Incremental, Since: req.Since}, nil, &head)
		return err
	})
	if err != nil {
		return wallet.Page{}, fmt.Errorf("read remote page %s: %w", req.Table, err)
	}
	if head.Table != req.Table {
		return wallet.Page{}, fmt.Errorf("read remote page %s: the server answered a page of %s: %w", req.Table, head.Table, ErrBadFrame)
	}
	return head.page(rows), nil
}

// Resume asks the server view for its cursor at c's position.
func (v *remoteView) Resume(table wallet.TableName, c wallet.Cursor) (wallet.Cursor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), v.p.opts.CloseTimeout)
	defer cancel()
	var ans resumeAnswer
	err := v.p.retry(ctx, func() error {
		_, err := v.p.call(ctx, pathResume, resumeRequest{Handle: v.ans.Handle, Table: table, Cursor: c}, nil, &ans)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("resume remote cursor: %w", err)
	}
	return ans.Cursor, nil
}

// Close releases the view on the server, once; a second Close does nothing and returns nil.
// A close that fails returns its error, though it loses nothing: the server reaps the view
// at its lifetime's end, and until then only holds its snapshot open.
func (v *remoteView) Close() error {
	var err error
	v.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), v.p.opts.CloseTimeout)
		defer cancel()
		if _, err = v.p.call(ctx, pathCloseView, closeViewRequest{Handle: v.ans.Handle}, nil, &empty{}); err != nil {
			err = fmt.Errorf("close remote view: %w", err)
		}
	})
	return err
}

// isToolbox reports whether GET / at baseURL answers the toolbox StorageServer's banner.
func isToolbox(ctx context.Context, baseURL string) bool {
	_, err := toolbox.Banner(ctx, baseURL)
	return err == nil
}
