// Package remote reaches a storage server. Its subpackages are the parts (auth: BRC-103/104;
// toolbox: the toolbox's JSON-RPC; wire: walletsync's paged wire; serve: the server); Dial,
// here, is the one place that chooses which wire a sync speaks to a server, for the command
// line, the agent and the lab alike.
package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/wallet"
)

// Wire names a wire to a storage server. The strings are stable: they are the values of
// `walletsync sync --wire` and appear in results (JSON "wire").
type Wire string

const (
	// Auto chooses walletsync's wire when the server offers it and answers its probe, else
	// the toolbox's.
	Auto Wire = "auto"
	// Toolbox is the @bsv/wallet-toolbox StorageServer's JSON-RPC over BRC-104: BRC-40
	// chunks (syncer.RunChunks), which every storage server speaks.
	Toolbox Wire = "toolbox"
	// Walletsync is walletsync's paged wire (remote/wire): retained views, journal
	// increments, an unchanged sync in one request (syncer.Run). Only walletsync serve
	// offers it.
	Walletsync Wire = "walletsync"
)

// ParseWire returns the wire s names (auto, toolbox or walletsync); any other string is
// refused with an error matching wallet.ErrInvalidArgument.
func ParseWire(s string) (Wire, error) {
	switch w := Wire(s); w {
	case Auto, Toolbox, Walletsync:
		return w, nil
	}
	return "", fmt.Errorf("parse wire %q: want auto, toolbox or walletsync: %w", s, wallet.ErrInvalidArgument)
}

// busyWait is how long a Provider on walletsync's wire waits out a busy server (its 8
// retained views, wire.DefaultMaxViews, all held by other syncs) before the sync fails, as
// the command line has always waited: long enough for a crowd of small pushes to pass,
// short of a view's 5-minute lifetime (wire.DefaultViewLifetime), so a server that stays
// full is reported rather than waited on.
const busyWait = time.Minute

// Options tune Dial. The zero value is what a sync uses.
type Options struct {
	// HTTPClient sends every authenticated request to the server (default: a new
	// http.Client); the unauthenticated wire.Detect goes through http.DefaultClient. The
	// lab passes a client that records and routes its requests.
	HTTPClient *http.Client
	// ToolboxRetries is the toolbox client's own retries of a request the server did not
	// answer (toolbox.ClientOptions.Retries: 0 its default, -1 none). A caller whose
	// session retries itself (syncer.RunChunks with GiveUp) passes -1, so that one loop,
	// not two nested ones, decides how long a dead server is tried.
	ToolboxRetries int
	// BusyWait is how long walletsync's wire waits out a busy server before its request
	// fails with a *wallet.BusyError (default a minute, see busyWait; negative: not at all).
	// Under Auto, Provider.FallBack then offers the toolbox's wire.
	BusyWait time.Duration
}

// Provider is a storage server as Dial reached it: exactly one of Paged and Chunks is set,
// the one Wire names.
type Provider struct {
	// Wire is the wire chosen: Toolbox or Walletsync, never Auto.
	Wire Wire
	// Paged is the server on walletsync's wire, a wallet.Source and wallet.Destination
	// for syncer.Run. Its capabilities are already negotiated: its first sync request is
	// the sync's own.
	Paged *wire.Provider
	// Chunks is the server on the toolbox's wire, a brc40.ChunkStore for
	// syncer.RunChunks.
	Chunks *toolbox.Client
	// Fallback, when Auto chose the toolbox's wire for a server that said it offers
	// walletsync's, is why walletsync's wire was given up (nil otherwise): its probe failed
	// (worth a line in a log, since such a server is misconfigured or of an incompatible
	// version), or, from FallBack, it stayed busy beyond its patience.
	Fallback error

	// What FallBack needs to dial the toolbox's wire: set when Auto chose walletsync's.
	auto   bool
	url    string
	signer auth.Signer
	opts   Options
}

// FallBack keeps Auto's promise that a server which answers the toolbox's wire stays
// usable when walletsync's does not: when p is walletsync's wire chosen by Auto and err
// (what a sync over p.Paged returned) is a refusal as busy that lasted beyond the wire's
// patience (a *wallet.BusyError: on a pull, the server's views all held by others), it
// returns the same server on the toolbox's wire with Fallback set to err, which the
// caller reports (a log line, the result's wire), and true. For any other p or err it
// returns p and false, and err stands. The toolbox's wire needs no view, so a server whose
// views are all taken still serves it; the caller starts its sync over on it, which is safe
// for a pull (the destination merges what it already holds) and reads no paged checkpoint.
func (p Provider) FallBack(err error) (Provider, bool) {
	var busy *wallet.BusyError
	if !p.auto || p.Wire != Walletsync || !errors.As(err, &busy) {
		return p, false
	}
	ac, aerr := auth.NewClient(p.url, p.signer, auth.ClientOptions{MaxResponseBytes: wallet.MaxFrameBytes, HTTPClient: p.opts.HTTPClient})
	if aerr != nil {
		return p, false
	}
	return Provider{Wire: Toolbox, Chunks: toolbox.NewClient(ac, toolbox.ClientOptions{}), Fallback: err}, true
}

// DialError is a storage server that Dial cannot reach on the wire asked for. Err is the
// cause: wallet.ErrInvalidArgument for a URL that is not an http(s) server's,
// wire.ErrNotWalletsync when Walletsync was asked of a server that does not offer it (a
// toolbox StorageServer, walletsync serve on PostgreSQL), or the probe's failure.
type DialError struct {
	URL  string
	Wire Wire
	Err  error
}

func (e *DialError) Error() string {
	if errors.Is(e.Err, wire.ErrNotWalletsync) {
		return fmt.Sprintf("dial %s on walletsync's wire: %v (choose the toolbox wire, or auto)", e.URL, e.Err)
	}
	return fmt.Sprintf("dial %s on the %s wire: %v", e.URL, e.Wire, e.Err)
}

// Unwrap returns the cause, so that errors.Is sees wire.ErrNotWalletsync,
// wallet.ErrInvalidArgument or the probe's typed error.
func (e *DialError) Unwrap() error { return e.Err }

// Dial returns the storage server at rawURL on the wire choice names, signing as signer.
//
// Toolbox dials the toolbox's JSON-RPC and sends nothing yet. Auto and Walletsync first ask
// the server, without authenticating, whether it offers walletsync's wire (wire.Detect, one
// short GET): a toolbox StorageServer does not, and asking it through BRC-104 would wait
// for an answer that never comes. When it does, Dial hand-shakes and probes the wire's
// capabilities (wire.Probe), which the Provider keeps, so an unchanged sync afterwards is
// one request. Auto falls back to the toolbox's wire when the server does not offer
// walletsync's or when the probe fails for any reason but ctx's end (Provider.Fallback
// says why): a server that answers the toolbox's wire is still usable, and the Provider it
// returns on walletsync's wire offers the toolbox's again when a sync over it stays
// refused as busy (Provider.FallBack). Walletsync never falls back: it fails with a *DialError, matching wire.ErrNotWalletsync when the server
// does not offer the wire.
func Dial(ctx context.Context, rawURL string, signer auth.Signer, choice Wire, opts Options) (Provider, error) {
	fail := func(err error) (Provider, error) {
		return Provider{}, &DialError{URL: rawURL, Wire: choice, Err: err}
	}
	if _, err := ParseWire(string(choice)); err != nil {
		return fail(err)
	}
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(fmt.Errorf("%q is not a storage server's http(s) URL: %w", rawURL, wallet.ErrInvalidArgument))
	}
	var fallback error
	if choice != Toolbox {
		p, err := dialWalletsync(ctx, rawURL, signer, opts)
		switch {
		case err == nil:
			return Provider{Wire: Walletsync, Paged: p, auto: choice == Auto, url: rawURL, signer: signer, opts: opts}, nil
		case choice == Walletsync || ctx.Err() != nil:
			return fail(err)
		case !errors.Is(err, errNotOffered):
			fallback = err
		}
	}
	ac, err := auth.NewClient(rawURL, signer, auth.ClientOptions{MaxResponseBytes: wallet.MaxFrameBytes, HTTPClient: opts.HTTPClient})
	if err != nil {
		return fail(err)
	}
	return Provider{Wire: Toolbox, Chunks: toolbox.NewClient(ac, toolbox.ClientOptions{Retries: opts.ToolboxRetries}), Fallback: fallback}, nil
}

// errNotOffered is wire.Detect's no: the server does not say it offers walletsync's wire.
var errNotOffered = fmt.Errorf("its GET %s is not walletsync's: %w", wire.Prefix, wire.ErrNotWalletsync)

// dialWalletsync returns the server on walletsync's wire, its capabilities probed; errNotOffered
// when the server does not offer it.
func dialWalletsync(ctx context.Context, rawURL string, signer auth.Signer, opts Options) (*wire.Provider, error) {
	if !wire.Detect(ctx, rawURL) {
		return nil, errNotOffered
	}
	ac, err := auth.NewClient(rawURL, signer, auth.ClientOptions{MaxResponseBytes: wire.MaxBodyBytes, HTTPClient: opts.HTTPClient})
	if err != nil {
		return nil, err
	}
	caps, err := wire.Probe(ctx, rawURL, ac)
	if err != nil {
		return nil, err
	}
	wait := busyWait
	switch {
	case opts.BusyWait > 0:
		wait = opts.BusyWait
	case opts.BusyWait < 0:
		wait = 0
	}
	return wire.NewProvider(ac, wire.ProviderOptions{BusyWait: wait, Capabilities: &caps})
}
