package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"walletsync/brc40"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/wallet"
)

// Store is what the toolbox wire's server needs of its backend: one store that holds many
// users, each method scoped to the identity it names (localstore.Store is one). The server
// only ever passes the authenticated caller's identity.
type Store interface {
	// Settings returns the store's settings row.
	Settings(ctx context.Context) (wallet.Settings, error)
	// FindOrInsertUserRow returns identityKey's users row, creating it (and its default
	// basket) when missing; isNew reports that it did.
	FindOrInsertUserRow(ctx context.Context, identityKey string) (user wallet.Row, isNew bool, err error)
	// FindOrInsertSyncStateAuth returns identityKey's sync state for the producer, creating
	// the user and the state when missing; isNew reports that the state is new.
	FindOrInsertSyncStateAuth(ctx context.Context, identityKey, producerSIK, producerName string) (st brc40.SyncState, isNew bool, err error)
	// GetSyncChunk is BRC-40's producer for args.IdentityKey.
	GetSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, error)
	// ProcessSyncChunk is BRC-40's consumer for args.IdentityKey: the chunk's rows and the
	// sync state commit together or not at all.
	ProcessSyncChunk(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, error)
	// SetActive names storageIdentityKey as identityKey's active store; a missing user is
	// wallet.ErrNotFound.
	SetActive(ctx context.Context, identityKey, storageIdentityKey string) error
}

// ServerOptions tune a Server. The zero value is usable.
type ServerOptions struct {
	// Logger receives one debug line per call and the internal errors that clients see only
	// as WERR_INTERNAL (default: discard). Payloads and keys are never logged.
	Logger *slog.Logger
	// Observe, when set, is told of every answered call: its method (a served or StorageKnex
	// name, else "unknown", so that a client cannot grow the label set), its outcome ("ok",
	// the WERR_* name sent, "invalid_request" or "method_not_found") and its duration.
	Observe func(method, outcome string, took time.Duration)
}

// Server answers the JSON-RPC of @bsv/wallet-toolbox 2.1.26's StorageServer on POST /, as
// an http.Handler behind auth.Server's middleware (it refuses a request without an
// authenticated identity). It serves the backup and restore methods over a Store:
//
//   - makeAvailable and getSettings: the settings row; migrate: the store's Knex version
//     (its newest migration name, as Knex's currentVersion cuts it); destroy: no result
//     (ignored, as the StorageServer ignores it).
//   - findOrInsertUser: only for the caller's own identity key.
//   - findOrInsertSyncStateAuth, getSyncChunk, processSyncChunk, setActive: params[0]'s
//     identityKey, when given, must be the caller's (else WERR_UNAUTHORIZED), and the
//     caller's user is created on demand, as the StorageServer's validateParam0 does.
//     Unlike the StorageServer, which then trusts a userId the client put in params[0]
//     when identityKey is absent, every method acts on the caller's identity only.
//
// Every other StorageKnex method name answers WERR_NOT_IMPLEMENTED with HTTP 200; other
// names answer JSON-RPC -32601 with HTTP 400, and a bad envelope -32600 with HTTP 400.
// Storage errors answer HTTP 200 with the toolbox's error object (WalletErrorFor): typed
// refusals keep their WERR_* class, anything else is WERR_INTERNAL with a fixed message.
type Server struct {
	store         Store
	log           *slog.Logger
	observe       func(method, outcome string, took time.Duration)
	unimplemented map[string]bool
	methods       map[string]method
}

// method runs one served call for identity with its raw params and returns the result's
// JSON (nil for none) or an error that WalletErrorFor turns into the answer.
type method func(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error)

// NewServer returns a Server over store.
func NewServer(store Store, opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{store: store, log: opts.Logger, observe: opts.Observe, unimplemented: map[string]bool{}}
	for _, name := range strings.Fields(knexMethodNames) {
		s.unimplemented[name] = true
	}
	s.methods = map[string]method{
		"makeAvailable":             s.makeAvailable,
		"getSettings":               s.settings,
		"migrate":                   s.migrate,
		"findOrInsertUser":          s.findOrInsertUser,
		"findOrInsertSyncStateAuth": s.findOrInsertSyncStateAuth,
		"getSyncChunk":              s.getSyncChunk,
		"processSyncChunk":          s.processSyncChunk,
		"setActive":                 s.setActive,
	}
	return s
}

// KnexVersion is what the StorageServer's migrate answers for a store migrated to
// newestMigration: Knex's currentVersion keeps a migration name up to its first '_'.
func KnexVersion(newestMigration string) string {
	v, _, _ := strings.Cut(newestMigration, "_")
	return v
}

// ServeHTTP answers one call. Only POST reaches the dispatch (Express routes nothing else
// to the StorageServer's handler: 404).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	identity, ok := auth.Identity(r.Context())
	if !ok {
		// A wiring error: the handler must sit behind the BRC-104 middleware.
		s.log.Error("toolbox wire: a request without an authenticated identity")
		http.Error(w, "not authenticated", http.StatusUnauthorized)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		status := http.StatusBadRequest
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	req, err := ParseRequest(body)
	if err != nil {
		var rpcErr *RPCError
		errors.As(err, &rpcErr)
		s.answer(w, http.StatusBadRequest, AppendRPCError(nil, nil, rpcErr), "unknown", "invalid_request", start)
		return
	}
	label := req.Method
	run, served := s.methods[req.Method]
	switch {
	case req.Method == "destroy":
		s.answer(w, http.StatusOK, AppendResult(nil, req.ID, nil), label, "ok", start)
		return
	case !served && s.unimplemented[req.Method]:
		run = s.notImplemented
	case !served:
		rpcErr := &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + req.Method}
		s.answer(w, http.StatusBadRequest, AppendRPCError(nil, req.ID, rpcErr), "unknown", "method_not_found", start)
		return
	}
	result, err := run(r.Context(), identity, req.Params)
	if err != nil {
		var bad *wallet.SyncMessageError
		parameter := ""
		if errors.As(err, &bad) {
			parameter = bad.Path
		}
		we := WalletErrorFor(err, parameter)
		if we.Name == "WERR_INTERNAL" {
			s.log.Warn("toolbox wire: internal error", "method", req.Method, "identity", wallet.ShortKey(identity, 12), "err", err)
		}
		s.answer(w, http.StatusOK, AppendWalletError(nil, req.ID, we), label, we.Name, start)
		return
	}
	s.answer(w, http.StatusOK, AppendResult(nil, req.ID, result), label, "ok", start)
}

// readBody returns the request's body, held once: the BRC-104 middleware's bytes when it
// read them (auth.HeldBody), refused over MaxBodyBytes as http.MaxBytesReader refuses it.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if body, ok := auth.HeldBody(r); ok {
		if len(body) > MaxBodyBytes {
			return nil, &http.MaxBytesError{Limit: MaxBodyBytes}
		}
		return body, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
}

// answer writes body as the StorageServer's res.json does and reports the call.
func (s *Server) answer(w http.ResponseWriter, status int, body []byte, method, outcome string, start time.Time) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(body)
	took := time.Since(start)
	s.log.Debug("toolbox call", "method", method, "outcome", outcome, "took", took)
	if s.observe != nil {
		s.observe(method, outcome, took)
	}
}

// unauthorized is the StorageServer's refusal of a request for another identity.
func unauthorized(message string) error {
	return &WalletError{Name: "WERR_UNAUTHORIZED", Message: message}
}

// invalidParameter is the toolbox's WERR_INVALID_PARAMETER for the parameter named.
func invalidParameter(parameter, mustBe string) error {
	return &WalletError{Name: "WERR_INVALID_PARAMETER", Message: fmt.Sprintf("The %s parameter must be %s", parameter, mustBe), Parameter: parameter}
}

// authorize is the StorageServer's validateParam0: params[0].identityKey, when truthy, must
// be the caller's; then the caller's user is made on demand.
func (s *Server) authorize(ctx context.Context, identity string, params []json.RawMessage) error {
	if len(params) > 0 {
		var p0 map[string]json.RawMessage
		if json.Unmarshal(params[0], &p0) == nil && p0 != nil {
			if key, ok := p0["identityKey"]; ok && truthy(key) && !bytes.Equal(key, jsonString(identity)) {
				return unauthorized("identityKey does not match authentiation")
			}
		}
	}
	if _, _, err := s.store.FindOrInsertUserRow(ctx, identity); err != nil {
		return fmt.Errorf("find or insert the caller's user: %w", err)
	}
	return nil
}

// truthy is JavaScript's truthiness of a JSON value.
func truthy(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", "false", `""`, "0", "-0":
		return false
	}
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return f != 0
	}
	return true
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// stringParam returns params[i] as a string, or WERR_INVALID_PARAMETER naming it.
func stringParam(params []json.RawMessage, i int, name string) (string, error) {
	var v string
	if i >= len(params) || json.Unmarshal(params[i], &v) != nil || v == "" {
		return "", invalidParameter(name, "a non-empty string")
	}
	return v, nil
}

// settingsJSON is a TableSettings as the StorageServer sends it.
func settingsJSON(st wallet.Settings) (json.RawMessage, error) {
	return json.Marshal(struct {
		CreatedAt          string `json:"created_at"`
		UpdatedAt          string `json:"updated_at"`
		StorageIdentityKey string `json:"storageIdentityKey"`
		StorageName        string `json:"storageName"`
		Chain              string `json:"chain"`
		DBType             string `json:"dbtype"`
		MaxOutputScript    int64  `json:"maxOutputScript"`
	}{wallet.FormatTime(st.CreatedAt), wallet.FormatTime(st.UpdatedAt), st.StorageIdentityKey, st.StorageName, string(st.Chain), st.DBType, st.MaxOutputScript})
}

// notImplemented answers a StorageKnex method walletsync serve does not run, after
// validateParam0 as the StorageServer runs it first: a request naming another identity is
// WERR_UNAUTHORIZED, whatever the method.
func (s *Server) notImplemented(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	return nil, &WalletError{Name: "WERR_NOT_IMPLEMENTED", Message: "Not implemented by walletsync serve."}
}

// makeAvailable answers the settings row after validateParam0, which makes the caller's
// user, as the StorageServer does.
func (s *Server) makeAvailable(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	return s.settings(ctx, identity, params)
}

// settings answers getSettings: the settings row, which says nothing of any user.
func (s *Server) settings(ctx context.Context, _ string, _ []json.RawMessage) (json.RawMessage, error) {
	st, err := s.store.Settings(ctx)
	if err != nil {
		return nil, err
	}
	return settingsJSON(st)
}

// migrate answers the version a fully migrated store reports; walletsync serve migrates its
// store when it opens it, never on a client's request.
func (s *Server) migrate(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	ledger := localstore.ToolboxMigrations()
	return jsonString(KnexVersion(ledger[len(ledger)-1])), nil
}

func (s *Server) findOrInsertUser(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	var key string
	if len(params) == 0 || json.Unmarshal(params[0], &key) != nil || key != identity {
		return nil, unauthorized("function may only access authenticated user.")
	}
	user, isNew, err := s.store.FindOrInsertUserRow(ctx, identity)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), `{"user":`...)
	if b, err = brc40.AppendRowJSON(b, wallet.Users, user); err != nil {
		return nil, err
	}
	return fmt.Appendf(b, `,"isNew":%t}`, isNew), nil
}

func (s *Server) findOrInsertSyncStateAuth(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	sik, err := stringParam(params, 1, "storageIdentityKey")
	if err != nil {
		return nil, err
	}
	name, err := stringParam(params, 2, "storageName")
	if err != nil {
		return nil, err
	}
	st, isNew, err := s.store.FindOrInsertSyncStateAuth(ctx, identity, sik, name)
	if err != nil {
		return nil, err
	}
	state, err := syncStateJSON(st, isNew)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf([]byte(`{"syncState":`), `%s,"isNew":%t}`, state, isNew), nil
}

// syncStateJSON is a sync state as the StorageServer sends it: a stored one as its row, a
// new one as the object the toolbox built and inserted (its own key order, init as the 0
// its insert wrote back into the object).
func syncStateJSON(st brc40.SyncState, isNew bool) ([]byte, error) {
	if !isNew {
		row, err := st.Row()
		if err != nil {
			return nil, err
		}
		return brc40.AppendRowJSON(nil, wallet.SyncStates, row)
	}
	syncMap, err := json.Marshal(st.SyncMap)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		UserID             int64  `json:"userId"`
		StorageIdentityKey string `json:"storageIdentityKey"`
		StorageName        string `json:"storageName"`
		CreatedAt          string `json:"created_at"`
		UpdatedAt          string `json:"updated_at"`
		SyncStateID        int64  `json:"syncStateId"`
		Status             string `json:"status"`
		Init               int    `json:"init"`
		RefNum             string `json:"refNum"`
		SyncMap            string `json:"syncMap"`
	}{st.UserID, st.StorageIdentityKey, st.StorageName, wallet.FormatTime(st.CreatedAt), wallet.FormatTime(st.UpdatedAt),
		st.SyncStateID, st.Status, 0, st.RefNum, string(syncMap)})
}

// chunkArgs decodes params[0] as RequestSyncChunkArgs (strictly, see wallet) and refuses
// args for another identity than the caller's. authorize has refused those already; the
// store is handed the args' identity, so the check is made again where it is used.
func chunkArgs(identity string, params []json.RawMessage) (brc40.RequestSyncChunkArgs, error) {
	var args brc40.RequestSyncChunkArgs
	if len(params) == 0 {
		return args, invalidParameter("args", "a RequestSyncChunkArgs object")
	}
	if err := json.Unmarshal(params[0], &args); err != nil {
		return args, fmt.Errorf("read args: %w", err)
	}
	if args.IdentityKey != identity {
		return args, unauthorized("identityKey does not match authentiation")
	}
	return args, nil
}

func (s *Server) getSyncChunk(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	args, err := chunkArgs(identity, params)
	if err != nil {
		return nil, err
	}
	chunk, err := s.store.GetSyncChunk(ctx, args)
	if err != nil {
		return nil, err
	}
	return chunk.MarshalJSON()
}

func (s *Server) processSyncChunk(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	args, err := chunkArgs(identity, params)
	if err != nil {
		return nil, err
	}
	var chunk brc40.SyncChunk
	if len(params) < 2 {
		return nil, invalidParameter("chunk", "a SyncChunk object")
	}
	if err := json.Unmarshal(params[1], &chunk); err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	res, err := s.store.ProcessSyncChunk(ctx, args, chunk)
	if err != nil {
		return nil, err
	}
	return res.MarshalJSON()
}

func (s *Server) setActive(ctx context.Context, identity string, params []json.RawMessage) (json.RawMessage, error) {
	if err := s.authorize(ctx, identity, params); err != nil {
		return nil, err
	}
	sik, err := stringParam(params, 1, "newActiveStorageIdentityKey")
	if err != nil {
		return nil, err
	}
	// The toolbox answers the number of users rows it changed.
	n := 1
	if err := s.store.SetActive(ctx, identity, sik); errors.Is(err, wallet.ErrNotFound) {
		n = 0
	} else if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%d", n), nil
}
