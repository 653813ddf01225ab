// Package toolbox speaks the JSON-RPC 2.0 wire of @bsv/wallet-toolbox 2.1.26's
// StorageServer (reference/storage-server.md): one POST / endpoint behind BRC-104
// authentication, a method name and positional params, and storage errors answered with
// HTTP 200 and an error object that the TypeScript client rebuilds into a WERR_* class.
//
// This file holds the envelope and its errors, shared by the client (walletsync pushing
// to and pulling from a toolbox server) and the server (walletsync serve answering toolbox
// wallets). Bodies walletsync sends are fixed points of JavaScript's
// JSON.stringify(JSON.parse(body)), because the TypeScript auth middleware signs the
// re-serialized body, not the bytes received.
package toolbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"walletsync/wallet"
)

// MaxBodyBytes is the StorageServer's request body limit (express.json({limit: '30mb'})).
// A client keeps every request below it; a server refuses a larger body before parsing it.
const MaxBodyBytes = 30 << 20

// JSON-RPC 2.0 error codes the StorageServer answers with HTTP 400.
const (
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
)

// Request is one JSON-RPC call as a server receives it.
type Request struct {
	Method string
	// Params are the positional parameters, each the raw JSON the caller sent.
	Params []json.RawMessage
	// ID is the caller's id, raw, so that the answer echoes exactly what was sent (absent:
	// nil).
	ID json.RawMessage
}

// AppendRequest appends the body of a call of method with id and params, in the key order
// the toolbox's StorageClient writes ({"jsonrpc","method","params","id"}). Each param must
// already be canonical JavaScript JSON (the wallet package's marshalers and AppendJSString
// produce it); the body is then a fixed point of JSON.stringify(JSON.parse(body)).
func AppendRequest(dst []byte, method string, id int64, params ...json.RawMessage) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst, err := wallet.AppendJSString(dst, method)
	if err != nil {
		return nil, fmt.Errorf("encode method: %w", err)
	}
	dst = append(dst, `,"params":[`...)
	for i, p := range params {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, p...)
	}
	dst = append(dst, `],"id":`...)
	return append(strconv.AppendInt(dst, id, 10), '}'), nil
}

// ParseRequest reads a call the way the StorageServer does: the body must be a JSON object
// with "jsonrpc":"2.0" and a non-empty string "method"; params, when present, must be an
// array. Anything else is a *RPCError with CodeInvalidRequest, which a server answers with
// HTTP 400. The body's size is the caller's to bound (MaxBodyBytes).
//
// The params and the id are slices of body, not copies (body is then held once, however
// large its chunk): the caller must not modify body while it uses them.
func ParseRequest(body []byte) (Request, error) {
	var env struct {
		JSONRPC *string `json:"jsonrpc"`
		Method  *string `json:"method"`
		Params  heldRaw `json:"params"`
		ID      heldRaw `json:"id"`
	}
	invalid := &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request"}
	if err := json.Unmarshal(body, &env); err != nil {
		return Request{}, invalid
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" || env.Method == nil || *env.Method == "" {
		return Request{}, invalid
	}
	req := Request{Method: *env.Method, ID: json.RawMessage(env.ID)}
	if len(env.Params) > 0 && !bytes.Equal(env.Params, []byte("null")) {
		var params []heldRaw
		if err := json.Unmarshal(env.Params, &params); err != nil {
			return Request{}, invalid
		}
		req.Params = make([]json.RawMessage, len(params))
		for i, p := range params {
			req.Params[i] = json.RawMessage(p)
		}
	}
	return req, nil
}

// heldRaw is a json.RawMessage that keeps the slice of the input it was decoded from
// instead of a copy. json.Unmarshal hands an Unmarshaler a slice of the caller's input (its
// contract asks a copy only of an Unmarshaler that outlives the input's owner, and the
// request owns its body); a json.Decoder would hand its own buffer, so heldRaw is for
// json.Unmarshal only. A 30 MB processSyncChunk was held three times: the body, the
// envelope's params and each param.
type heldRaw []byte

func (h *heldRaw) UnmarshalJSON(b []byte) error {
	*h = b[:len(b):len(b)]
	return nil
}

// AppendResult appends a success answer. A nil result is left out of the body, as
// Express's res.json leaves out a JavaScript undefined (the toolbox's answer to destroy).
func AppendResult(dst []byte, id, result json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if result != nil {
		dst = append(dst, `,"result":`...)
		dst = append(dst, result...)
	}
	return appendID(dst, id)
}

// AppendWalletError appends the HTTP-200 answer the StorageServer gives when a storage
// method throws: {"jsonrpc":"2.0","error":{"isError":true,"name":…,"message":…},"id":…}.
func AppendWalletError(dst []byte, id json.RawMessage, e *WalletError) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","error":`...)
	dst = append(dst, e.json()...)
	return appendID(dst, id)
}

// AppendRPCError appends the HTTP-400 answer for a bad envelope or an unknown method. A bad
// envelope is answered without jsonrpc and id, exactly as the StorageServer does.
func AppendRPCError(dst []byte, id json.RawMessage, e *RPCError) []byte {
	obj, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message})
	if e.Code == CodeInvalidRequest {
		dst = append(dst, `{"error":`...)
		dst = append(dst, obj...)
		return append(dst, '}')
	}
	dst = append(dst, `{"jsonrpc":"2.0","error":`...)
	dst = append(dst, obj...)
	return appendID(dst, id)
}

func appendID(dst []byte, id json.RawMessage) []byte {
	if id != nil {
		dst = append(dst, `,"id":`...)
		dst = append(dst, id...)
	}
	return append(dst, '}')
}

// ParseResponse reads a server's answer to one call and returns its result, raw (nil when
// the server sent none). An answer carrying an error member returns the error instead:
// a *WalletError for the HTTP-200 storage errors (isError set), a *RPCError for the
// JSON-RPC codes. A body that is neither is an error matching wallet.ErrRemote.
func ParseResponse(body []byte) (json.RawMessage, error) {
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("read JSON-RPC answer: %v: %w", err, wallet.ErrRemote)
	}
	if env.Error == nil || bytes.Equal(env.Error, []byte("null")) {
		return env.Result, nil
	}
	var e struct {
		IsError   bool   `json:"isError"`
		Name      string `json:"name"`
		Message   string `json:"message"`
		Parameter string `json:"parameter"`
		Code      *int   `json:"code"`
	}
	if err := json.Unmarshal(env.Error, &e); err != nil {
		return nil, fmt.Errorf("read JSON-RPC error: %v: %w", err, wallet.ErrRemote)
	}
	if e.Code != nil && !e.IsError {
		return nil, &RPCError{Code: *e.Code, Message: e.Message}
	}
	name := e.Name
	if name == "" {
		name = "WERR_UNKNOWN"
	}
	return nil, &WalletError{Name: name, Message: e.Message, Parameter: e.Parameter}
}

// WalletError is a toolbox storage error as it travels: the WERR_* class name, its message,
// and the parameter that WERR_INVALID_PARAMETER and WERR_MISSING_PARAMETER carry. It
// matches wallet.ErrRemote and, where the name has a walletsync counterpart, that sentinel
// too (WERR_UNAUTHORIZED is wallet.ErrUnauthorized, WERR_NETWORK_CHAIN wallet.ErrWrongChain,
// ...), so callers test errors.Is without knowing the toolbox's names.
type WalletError struct {
	Name      string
	Message   string
	Parameter string
}

func (e *WalletError) Error() string {
	return fmt.Sprintf("storage server: %s: %s", e.Name, e.Message)
}

// Unwrap returns wallet.ErrRemote and the sentinel the name maps to.
func (e *WalletError) Unwrap() []error {
	if s := sentinelOf(e.Name); s != nil {
		return []error{wallet.ErrRemote, s}
	}
	return []error{wallet.ErrRemote}
}

// json returns the error object WalletError.toJson writes in the toolbox (with the
// parameter for the two classes that carry one).
func (e *WalletError) json() []byte {
	obj := struct {
		IsError   bool   `json:"isError"`
		Name      string `json:"name"`
		Message   string `json:"message"`
		Parameter string `json:"parameter,omitempty"`
	}{true, e.Name, e.Message, ""}
	if e.Name == "WERR_INVALID_PARAMETER" || e.Name == "WERR_MISSING_PARAMETER" {
		obj.Parameter = e.Parameter
	}
	b, _ := json.Marshal(obj)
	return b
}

// werrSentinels pairs the toolbox's error classes with walletsync's sentinels. The first
// entry for a sentinel is the name a server answers with (WalletErrorFor).
var werrSentinels = []struct {
	name     string
	sentinel error
	// message, when set, is sent instead of the error's text (which may name server
	// paths).
	message string
}{
	// walletsync's own classes, named as the toolbox asks a package to name its own
	// (WERR_ and a package prefix): its WalletErrorFromJson rebuilds a WalletError of that
	// name and message for a name it does not know.
	{"WERR_WALLETSYNC_QUOTA_EXCEEDED", wallet.ErrQuotaExceeded, ""},
	{"WERR_WALLETSYNC_DISK_FULL", wallet.ErrDiskFull, "The storage server's disk is full; nothing was written. Try again later."},
	{"WERR_UNAUTHORIZED", wallet.ErrUnauthorized, ""},
	{"WERR_NETWORK_CHAIN", wallet.ErrWrongChain, ""},
	{"WERR_NOT_ACTIVE", wallet.ErrNotActive, ""},
	{"WERR_NOT_IMPLEMENTED", wallet.ErrNotImplemented, ""},
	{"WERR_INVALID_PARAMETER", wallet.ErrInvalidArgument, ""},
	{"WERR_MISSING_PARAMETER", wallet.ErrInvalidArgument, ""},
	{"WERR_BAD_REQUEST", wallet.ErrInvalidArgument, ""},
	// A chunk row referring to a row never delivered: the paged wire's dangling_reference,
	// here the invalid parameter "table.column" (after ErrInvalidArgument's names, so that
	// a client reads WERR_INVALID_PARAMETER back as ErrInvalidArgument).
	{"WERR_INVALID_PARAMETER", wallet.ErrDanglingReference, ""},
	// A chunk that does not answer the consumer's sync state (brc40.SyncState.Answers):
	// the toolbox has no class of its own for it; its processSyncChunk never refuses one.
	{"WERR_INVALID_OPERATION", wallet.ErrCheckpointConflict, ""},
}

func sentinelOf(name string) error {
	for _, w := range werrSentinels {
		if w.name == name {
			return w.sentinel
		}
	}
	return nil
}

// WalletErrorFor is the error a server sends for err: the WERR_* class of the first
// sentinel err matches, with err's text as the message (a fixed one for a full disk;
// parameter names the value at fault for WERR_INVALID_PARAMETER), or WERR_INTERNAL with a fixed message for anything
// else, so that a server's internal details (paths, SQL, another identity's keys) never
// reach a client. A *wallet.DanglingReferenceError or *wallet.UnstorableError is
// WERR_INVALID_PARAMETER whose parameter is the table and column at fault
// ("outputs.transactionId"), whatever parameter says. The caller logs err.
func WalletErrorFor(err error, parameter string) *WalletError {
	var we *WalletError
	if errors.As(err, &we) {
		return we
	}
	var dangling *wallet.DanglingReferenceError
	var unstorable *wallet.UnstorableError
	switch {
	case errors.As(err, &dangling):
		parameter = dangling.Param()
	case errors.As(err, &unstorable):
		parameter = string(unstorable.Table) + "." + unstorable.Column
	}
	for _, w := range werrSentinels {
		if errors.Is(err, w.sentinel) {
			msg := w.message
			if msg == "" {
				msg = err.Error()
			}
			return &WalletError{Name: w.name, Message: msg, Parameter: parameter}
		}
	}
	return &WalletError{Name: "WERR_INTERNAL", Message: "An internal error has occurred."}
}

// RPCError is a JSON-RPC protocol error: CodeInvalidRequest for a bad envelope,
// CodeMethodNotFound for a method the server does not have. It matches wallet.ErrRemote,
// and wallet.ErrNotImplemented for an unknown method or wallet.ErrInvalidArgument for a bad
// envelope.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("storage server: JSON-RPC error %d: %s", e.Code, e.Message)
}

// Unwrap returns wallet.ErrRemote and the sentinel the code maps to.
func (e *RPCError) Unwrap() []error {
	switch e.Code {
	case CodeMethodNotFound:
		return []error{wallet.ErrRemote, wallet.ErrNotImplemented}
	case CodeInvalidRequest:
		return []error{wallet.ErrRemote, wallet.ErrInvalidArgument}
	}
	return []error{wallet.ErrRemote}
}
