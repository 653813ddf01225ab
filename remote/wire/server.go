package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"walletsync/remote/auth"
	"walletsync/wallet"
)

// Prefix is where the wire lives on a server: Handler answers the paths under it.
const Prefix = "/walletsync/v1/"

// Backend is the store behind a Handler, seen by one identity at a time. A multi-tenant
// store (one localstore file for many users) returns the same Source and Destination for
// every identity: Handler itself scopes every request to the identity that authenticated
// it (pages to its rows, sessions to its key, retained views to it).
// A store per identity may return another one each time. A Backend whose views several
// server processes share implements SharedViews too (see views.go).
type Backend interface {
	Source(ctx context.Context, identityKey string) (wallet.Source, error)
	Destination(ctx context.Context, identityKey string) (wallet.Destination, error)
}

// HandlerOptions tune a Handler. The zero value takes the defaults.
type HandlerOptions struct {
	Views ViewOptions
	// Budget is the server's memory budget, which the decompressed request frames are
	// charged to, shared with what else the server charges (walletsync serve: the bodies
	// in flight). A frame's declared length is charged before it is decompressed; one that
	// cannot be charged within the budget's wait is refused with a *wallet.BusyError (503,
	// Retry-After). Without it the Handler makes its own, of FrameBudget bytes (default
	// DefaultFrameBudget) waiting FrameWait (default 1 s).
	Budget      *MemoryBudget
	FrameBudget int64
	FrameWait   time.Duration
	Logger      *slog.Logger // default slog.Default()
}

// DefaultFrameBudget is four largest frames: a small VM's 1 GiB keeps its other three
// quarters for the store, the bodies in flight and the rows the frames decode into.
const DefaultFrameBudget = 4 * MaxFrameBytes

// Handler serves the Provider contract (wallet.Source and wallet.Destination) of a Backend
// over HTTP, under Prefix. It must run behind auth.Server's Middleware: every request is
// made by the identity auth.Identity finds in its context, and a request without one is
// refused (401). Every request is a POST of one frame (see frame.go) in the encoding its
// Content-Type names, answered in the same encoding; refusals are JSON (see errors.go).
//
// Isolation: a request may only concern the identity that signed it. A page request, a
// session key, a batch or a user row naming another identity is refused with
// wallet.ErrUnauthorized before the backend sees it; another identity's view handle is answered exactly like an
// unknown one; and the source storage of every
// session is scoped to the identity at the backend, so that the id maps a destination keeps
// per source storage can never connect one identity's rows to another's. What BRC-40
// shares between users stays shared, as in the toolbox's own server: proven_txs and
// proven_tx_reqs rows are found by txid whoever sends them (a proof once stored never
// changes; a proof request's merge only adds history and notifications).
//
// Handler is safe for concurrent use. Close releases its retained views.
type Handler struct {
	backend Backend
	views   *views
	shared  SharedViews // the backend's shared views, nil when views are this process's
	codec   *codec
	log     *slog.Logger
}

// NewHandler returns a Handler over backend.
func NewHandler(backend Backend, opts HandlerOptions) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FrameBudget <= 0 {
		opts.FrameBudget = DefaultFrameBudget
	}
	if opts.Budget == nil {
		opts.Budget = NewMemoryBudget(opts.FrameBudget, opts.FrameWait)
	}
	cd := newCodec()
	cd.frames = opts.Budget
	shared, _ := backend.(SharedViews)
	return &Handler{backend: backend, views: newViews(opts.Views), shared: shared, codec: cd, log: opts.Logger}
}

// Stats reports the retained views, for metrics: with shared views, those this process
// holds.
func (h *Handler) Stats() ViewStats {
	st := h.views.stats()
	if h.shared != nil {
		st.Open, st.IdleReleases = h.shared.HeldViews(), h.shared.IdleReleasedViews()
	}
	return st
}

// Close releases every retained view; their clients get wallet.ErrSnapshotClosed. Shared
// views are the backend's, released when it closes.
func (h *Handler) Close() { h.views.closeAll() }

// call is one request being served.
type call struct {
	ctx      context.Context
	identity string
	enc      Encoding
	body     []byte
}

// endpoint serves one path: it decodes the request from c and returns the answer's head
// and rows.
type endpoint func(h *Handler, c *call) (head any, rows []wallet.Row, done func(), err error)

var endpoints = map[string]endpoint{
	pathDescribe:   (*Handler).describe,
	pathOpenView:   (*Handler).openView,
	pathReadPage:   (*Handler).readPage,
	pathResume:     (*Handler).resume,
	pathCloseView:  (*Handler).closeView,
	pathBegin:      (*Handler).begin,
	pathCheckpoint: (*Handler).checkpoint,
	pathCommit:     (*Handler).commit,
}

// ServeHTTP answers one request of the wire.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		writeError(w, wireError{Code: "not_found", Message: "not a walletsync path"}, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, wireError{Code: "method_not_allowed", Message: "every request of the wire is a POST"}, http.StatusMethodNotAllowed)
		return
	}
	identity, ok := auth.Identity(r.Context())
	if !ok || identity == "" {
		writeError(w, wireError{Code: "unauthenticated", Message: "the wire is served behind BRC-104 authentication"}, http.StatusUnauthorized)
		return
	}
	body, held := auth.HeldBody(r) // held once: the middleware's bytes
	var err error
	if !held {
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	}
	if err != nil {
		writeError(w, wireError{Code: "bad_frame", Message: "read the body: " + err.Error()}, http.StatusBadRequest)
		return
	}
	if len(body) > MaxBodyBytes {
		writeError(w, wireError{Code: "bad_frame", Message: fmt.Sprintf("body over %d bytes", MaxBodyBytes)}, http.StatusRequestEntityTooLarge)
		return
	}
	if name == pathCapabilities {
		h.capabilities(w)
		return
	}
	ep := endpoints[name]
	if ep == nil {
		writeError(w, wireError{Code: "not_found", Message: "no endpoint " + name}, http.StatusNotFound)
		return
	}
	enc, ok := encodingOf(r.Header.Get("Content-Type"))
	if !ok {
		writeError(w, wireError{Code: "unsupported_encoding", Message: "Content-Type must be " + contentTypeZstd + " or " + contentTypeJSON}, http.StatusUnsupportedMediaType)
		return
	}
	head, rows, done, err := ep(h, &call{ctx: r.Context(), identity: identity, enc: enc, body: body})
	if done != nil {
		defer done()
	}
	if err == nil {
		var out []byte
		if out, err = h.codec.encode(enc, head, rows); err == nil {
			w.Header().Set("Content-Type", enc.contentType())
			w.Write(out)
			return
		}
	}
	we, status := toWire(err)
	if we.Code == "internal" {
		h.log.Error("walletsync wire: request failed", "path", name, "identity", wallet.ShortKey(identity, 16), "err", err)
	}
	writeError(w, we, status)
}

// capabilities answers in plain JSON, whatever the request's type, so that any client (and
// Probe) can read it before it knows anything else. What the client offers (its request)
// does not change the answer, which lists everything; the client chooses.
func (h *Handler) capabilities(w http.ResponseWriter) {
	b, _ := json.Marshal(h.Capabilities())
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// Capabilities returns what the Handler advertises on its capabilities endpoint.
func (h *Handler) Capabilities() Capabilities {
	return Capabilities{
		Wire:      wireName,
		Versions:  []int{Version},
		Encodings: []Encoding{EncodingZstd, EncodingJSON},
		Limits: Limits{MaxFrameBytes: MaxFrameBytes, MaxBodyBytes: MaxBodyBytes, MaxPageRows: wallet.MaxPageRows,
			MaxPageBytes: wallet.MaxPageBytes, DefaultLifetime: h.views.opts.DefaultLifetime.Milliseconds(),
			MaxLifetime: h.views.opts.MaxLifetime.Milliseconds()},
	}
}

const wireName = "walletsync"

// decode reads c's request into head and refuses rows where none belong.
func (c *call) decode(cd *codec, head any) ([]wallet.Row, error) {
	return cd.decode(c.ctx, c.enc, c.body, head)
}

func (h *Handler) source(c *call) (wallet.Source, error) {
	return h.backend.Source(c.ctx, c.identity)
}

func (h *Handler) destination(c *call) (wallet.Destination, error) {
	return h.backend.Destination(c.ctx, c.identity)
}

func (h *Handler) describe(c *call) (any, []wallet.Row, func(), error) {
	var req empty
	if _, err := c.decode(h.codec, &req); err != nil {
		return nil, nil, nil, err
	}
	src, err := h.source(c)
	if err != nil {
		return nil, nil, nil, err
	}
	settings, caps, err := src.Describe(c.ctx)
	return describeAnswer{Settings: settings, Capabilities: caps}, nil, nil, err
}

func (h *Handler) openView(c *call) (any, []wallet.Row, func(), error) {
	var req openViewRequest
	if _, err := c.decode(h.codec, &req); err != nil {
		return nil, nil, nil, err
	}
	lifetime, err := h.views.lifetime(req.LifetimeMs)
	if err != nil {
		return nil, nil, nil, err
	}
	var ans openViewAnswer
	// describe fills in what the answer says of the view's journal. On a local view it runs
	// as a read of the view (views.read), so that the idle timeout cannot release the view
	// while the request that opens it is still describing it.
	describe := func(v wallet.View) error {
		ans.ID = v.ID()
		ans.HighWater, _ = v.Journal(0) // the high-water mark does not depend on since
		if ij, ok := v.(identityJournal); ok {
			// What the answer says of the journal describes the caller's rows only: the
			// store-wide mark moves whenever any identity writes. (A shared view's Journal
			// is its identity's already.)
			var err error
			if ans.HighWater, err = ij.IdentityHighWater(c.ctx, c.identity); err != nil {
				return err
			}
		}
		if _, ok := v.Journal(ans.HighWater); ok {
			// The smallest covered since, by bisection over [0, HighWater]: coverage is an
			// interval that ends at the high-water mark.
			ans.Journal = true
			ans.CoveredFrom = int64(sort.Search(int(ans.HighWater)+1, func(s int) bool {
				_, ok := v.Journal(int64(s))
				return ok
			}))
		}
		return nil
	}
	if h.shared != nil {
		var v wallet.View
		ans.Handle, v, err = h.shared.OpenSharedView(c.ctx, c.identity, lifetime, h.views.opts.IdleTimeout, h.views.admit)
		if err == nil && lifetime > h.views.opts.EmptyLifetime && unknownIdentity(c.ctx, v, c.identity) {
			// A view of an identity the store does not know serves nothing but "not
			// found": it is opened again for ViewOptions.EmptyLifetime, as a local one
			// is shortened.
			if err = h.shared.CloseSharedView(c.ctx, c.identity, ans.Handle); err == nil {
				ans.Handle, v, err = h.shared.OpenSharedView(c.ctx, c.identity, h.views.opts.EmptyLifetime, h.views.opts.IdleTimeout, h.views.admit)
			}
		}
		if err != nil {
			return nil, nil, nil, err
		}
		err = describe(v)
	} else {
		var src wallet.Source
		if src, err = h.source(c); err != nil {
			return nil, nil, nil, err
		}
		var r *retained
		if r, err = h.views.open(c.ctx, c.identity, lifetime, src.OpenView); err != nil {
			return nil, nil, nil, err
		}
		ans.Handle = r.handle
		var done func()
		if done, err = h.views.read(r, 0, describe); done != nil {
			done()
		}
	}
	if err != nil {
		h.closeOpened(c, ans.Handle)
		return nil, nil, nil, err
	}
	return ans, nil, nil, nil
}

// identityJournal is a view that tells the journal position of one identity's rows
// (localstore's Snapshot): a multi-tenant store's view/open answers it instead of the
// store-wide high-water mark, which would tell a client when other identities write.
type identityJournal interface {
	IdentityHighWater(ctx context.Context, identityKey string) (int64, error)
}

// closeOpened releases a view that openView opened but could not answer for.
func (h *Handler) closeOpened(c *call, handle string) {
	if h.shared != nil {
		if err := h.shared.CloseSharedView(c.ctx, c.identity, handle); err != nil {
			// Its deadline and idle timeout still release it.
			h.log.Warn("could not close a view whose opening failed", "err", err)
		}
		return
	}
	if r, err := h.views.get(c.identity, handle); err == nil {
		h.views.release(r)
	}
}

func (h *Handler) readPage(c *call) (any, []wallet.Row, func(), error) {
	var req readPageRequest
	if _, err := c.decode(h.codec, &req); err != nil {
		return nil, nil, nil, err
	}
	if req.IdentityKey != c.identity {
		return nil, nil, nil, fmt.Errorf("read page of another identity: %w", wallet.ErrUnauthorized)
	}
	limits := wallet.Limits{Rows: req.Rows, Bytes: req.Bytes}.WithDefaults()
	if err := limits.Validate(); err != nil {
		return nil, nil, nil, err
	}
	var page wallet.Page
	read := func(v wallet.View) error {
		var err error
		page, err = v.ReadPage(c.ctx, wallet.PageRequest{Table: req.Table, IdentityKey: c.identity, After: req.After,
			Limits: limits, Incremental: req.Incremental, Since: req.Since})
		return err
	}
	var done func()
	if h.shared != nil {
		// The store refuses a second read of the view on any process; the memory budget
		// is this process's.
		v, err := h.shared.SharedView(c.ctx, c.identity, req.Handle)
		if err != nil {
			return nil, nil, nil, err
		}
		if done, err = h.views.reserve(c.identity, limits.Bytes); err != nil {
			return nil, nil, nil, err
		}
		if err = read(v); err != nil {
			done()
			return nil, nil, nil, err
		}
		return headOf(page), page.Rows, done, nil
	}
	r, err := h.views.get(c.identity, req.Handle)
	if err != nil {
		return nil, nil, nil, err
	}
	done, err = h.views.read(r, limits.Bytes, read)
	if err != nil {
		if done != nil {
			done()
		}
		return nil, nil, nil, err
	}
	return headOf(page), page.Rows, done, nil
}

// view returns identity's view under handle, retained here or shared.
func (h *Handler) view(c *call, handle string) (wallet.View, error) {
	if h.shared != nil {
		return h.shared.SharedView(c.ctx, c.identity, handle)
	}
	r, err := h.views.get(c.identity, handle)
	if err != nil {
		return nil, err
	}
	return r.view, nil
}

func (h *Handler) resume(c *call) (any, []wallet.Row, func(), error) {
	var req resumeRequest
	if _, err := c.decode(h.codec, &req); err != nil {
		return nil, nil, nil, err
	}
	v, err := h.view(c, req.Handle)
	if err != nil {
		return nil, nil, nil, err
	}
	cur, err := v.Resume(req.Table, req.Cursor)
	return resumeAnswer{Cursor: cur}, nil, nil, err
}

func (h *Handler) closeView(c *call) (any, []wallet.Row, func(), error) {
	var req closeViewRequest
	if _, err := c.decode(h.codec, &req); err != nil {
		return nil, nil, nil, err
	}
	// Closing a view that is gone, expired or another identity's answers the same: done.
	if h.shared != nil {
		return empty{}, nil, nil, h.shared.CloseSharedView(c.ctx, c.identity, req.Handle)
	}
	if r, err := h.views.get(c.identity, req.Handle); err == nil {
		h.views.release(r)
	}
	return empty{}, nil, nil, nil
}

func (h *Handler) begin(c *call) (any, []wallet.Row, func(), error) {
	var st wallet.DestinationState
	err := h.atSession(c, func(dst wallet.Destination, key wallet.SessionKey) (cp *wallet.Checkpoint, err error) {
		st, err = dst.Begin(c.ctx, key)
		return &st.Checkpoint, err
	})
	return st, nil, nil, err
}

func (h *Handler) checkpoint(c *call) (any, []wallet.Row, func(), error) {
	var cp wallet.Checkpoint
	err := h.atSession(c, func(dst wallet.Destination, key wallet.SessionKey) (_ *wallet.Checkpoint, err error) {
		cp, err = dst.Checkpoint(c.ctx, key)
		return &cp, err
	})
	return cp, nil, nil, err
}

// atSession reads a session request, refuses another identity's session, and runs fn at
// the destination with the scoped key; the checkpoint fn points to gets the client's key.
func (h *Handler) atSession(c *call, fn func(wallet.Destination, wallet.SessionKey) (*wallet.Checkpoint, error)) error {
	var req sessionRequest
	if _, err := c.decode(h.codec, &req); err != nil {
		return err
	}
	if req.Session.IdentityKey != c.identity {
		return fmt.Errorf("session of another identity: %w", wallet.ErrUnauthorized)
	}
	dst, err := h.destination(c)
	if err != nil {
		return err
	}
	cp, err := fn(dst, scoped(req.Session))
	*cp = unscoped(*cp, req.Session)
	return err
}

func (h *Handler) commit(c *call) (any, []wallet.Row, func(), error) {
	var head batchHead
	rows, err := c.decode(h.codec, &head)
	if err != nil {
		return nil, nil, nil, err
	}
	b := head.batch(rows)
	if t, err := wallet.LookupTable(b.Page.Table); err == nil {
		for _, r := range b.Page.Rows {
			if err := t.CheckValues(r); err != nil {
				return nil, nil, nil, fmt.Errorf("commit: %w", err)
			}
		}
	}
	key := b.Checkpoint.Session
	if key.IdentityKey != c.identity {
		return nil, nil, nil, fmt.Errorf("commit a batch of another identity: %w", wallet.ErrUnauthorized)
	}
	// The user row is found by its identity key, not by the session's user: a user row of
	// another identity would merge into that identity's row.
	if b.Page.Table == wallet.TableUsers {
		col := wallet.Users.Col("identityKey")
		for _, r := range b.Page.Rows {
			if r[col] != c.identity {
				return nil, nil, nil, fmt.Errorf("commit the user row of another identity: %w", wallet.ErrUnauthorized)
			}
		}
	}
	dst, err := h.destination(c)
	if err != nil {
		return nil, nil, nil, err
	}
	b.Checkpoint.Session = scoped(key)
	ack, err := dst.Commit(c.ctx, b)
	ack.Checkpoint = unscoped(ack.Checkpoint, key)
	return ack, nil, nil, err
}

// scoped is the session key the backend sees: the source storage qualified by the
// identity (see Handler).
func scoped(k wallet.SessionKey) wallet.SessionKey {
	k.SourceStorage += "@" + k.IdentityKey
	return k
}

// unscoped gives a checkpoint of the backend back the client's session key; a zero
// checkpoint gets it too.
func unscoped(cp wallet.Checkpoint, k wallet.SessionKey) wallet.Checkpoint {
	cp.Session = k
	return cp
}
