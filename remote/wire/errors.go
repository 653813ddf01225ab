package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"walletsync/wallet"
)

// Errors of the wire. A refusal travels as a JSON body {"error": {...}} with a status
// other than 200, in both encodings; the client turns it back into the typed error the
// server's backend returned, so errors.Is and errors.As work across the wire as they do in
// process (a *wallet.RowTooLargeError keeps its charge, a *wallet.ChainError its chains, a
// *wallet.BusyError its retry hint).

// ErrNotWalletsync: the server does not speak walletsync's wire (a @bsv/wallet-toolbox
// StorageServer answers its capabilities endpoint with 404 or with something that is not
// walletsync's answer). A client may fall back to the toolbox's JSON-RPC wire.
var ErrNotWalletsync = errors.New("server does not speak walletsync's wire")

// ErrIncompatible: the server speaks walletsync's wire but shares no version or frame
// encoding with this client.
var ErrIncompatible = errors.New("no wire version or encoding in common with the server")

// codes maps wire error codes to the sentinels they stand for, with the HTTP status each
// travels with. The first sentinel an error matches decides its code, so the more specific
// come first.
var codes = []struct {
	code   string
	err    error
	status int
}{
	{"unauthorized", wallet.ErrUnauthorized, http.StatusForbidden},
	// An identity's storage quota: its own share is full, the server is not (a client of
	// an older walletsync, without this code, reads a refusal it must not retry).
	{"quota_exceeded", wallet.ErrQuotaExceeded, http.StatusForbidden},
	{"server_busy", wallet.ErrServerBusy, http.StatusServiceUnavailable},
	{"snapshot_expired", wallet.ErrSnapshotExpired, http.StatusGone},
	{"snapshot_closed", wallet.ErrSnapshotClosed, http.StatusGone},
	{"snapshot_busy", wallet.ErrSnapshotBusy, http.StatusConflict},
	{"concurrent_read", wallet.ErrConcurrentRead, http.StatusConflict},
	{"cursor_mismatch", wallet.ErrCursorMismatch, http.StatusBadRequest},
	{"row_too_large", wallet.ErrRowTooLarge, http.StatusUnprocessableEntity},
	{"wrong_chain", wallet.ErrWrongChain, http.StatusConflict},
	{"checkpoint_conflict", wallet.ErrCheckpointConflict, http.StatusConflict},
	{"dangling_reference", wallet.ErrDanglingReference, http.StatusUnprocessableEntity},
	{"id_map_conflict", wallet.ErrIDMapConflict, http.StatusConflict},
	{"import_in_progress", wallet.ErrImportInProgress, http.StatusConflict},
	{"constraint", wallet.ErrConstraint, http.StatusUnprocessableEntity},
	{"not_js_value", wallet.ErrNotJSValue, http.StatusUnprocessableEntity},
	{"not_found", wallet.ErrNotFound, http.StatusNotFound},
	{"bad_frame", ErrBadFrame, http.StatusBadRequest},
	{"invalid_argument", wallet.ErrInvalidArgument, http.StatusBadRequest},
	{"disk_full", wallet.ErrDiskFull, http.StatusInsufficientStorage},
	{"read_only", wallet.ErrReadOnly, http.StatusServiceUnavailable},
	{"database_busy", wallet.ErrBusy, http.StatusServiceUnavailable},
	{"corrupt", wallet.ErrCorrupt, http.StatusInternalServerError},
}

// wireError is the body of a refusal.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterMs: server_busy's hint.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	// Details of the error types that carry them.
	TooLarge *rowTooLarge `json:"rowTooLarge,omitempty"`
	Chains   *chains      `json:"chains,omitempty"`
	Quota    *quotaBody   `json:"quota,omitempty"`
}

type quotaBody struct {
	Resource string `json:"resource"`
	Used     int64  `json:"used"`
	Adding   int64  `json:"adding"`
	Limit    int64  `json:"limit"`
}

type rowTooLarge struct {
	Table  wallet.TableName `json:"table"`
	Key    []any            `json:"key"`
	Charge int64            `json:"charge"`
	Limit  int64            `json:"limit"`
}

type chains struct {
	Source      wallet.Chain `json:"source"`
	Destination wallet.Chain `json:"destination"`
}

// toWire classifies err. An error of no known class is answered as "internal" with no
// message (it may name server paths); the server logs it instead.
func toWire(err error) (wireError, int) {
	for _, c := range codes {
		if !errors.Is(err, c.err) {
			continue
		}
		we := wireError{Code: c.code, Message: err.Error()}
		status := c.status
		var busy *wallet.BusyError
		if errors.As(err, &busy) {
			we.Message, we.RetryAfterMs = busy.Reason, busy.RetryAfter.Milliseconds()
		}
		var quota *quotaError
		if errors.As(err, &quota) && quota.identity {
			status = http.StatusTooManyRequests // this identity's share is full, not the server
		}
		var big *wallet.RowTooLargeError
		if errors.As(err, &big) {
			we.TooLarge = &rowTooLarge{Table: big.Table, Key: big.Key, Charge: big.Charge, Limit: big.Limit}
		}
		var ce *wallet.ChainError
		if errors.As(err, &ce) {
			we.Chains = &chains{Source: ce.Source, Destination: ce.Destination}
		}
		var qe *wallet.QuotaError
		if errors.As(err, &qe) {
			we.Message = qe.Error()
			we.Quota = &quotaBody{Resource: qe.Resource, Used: qe.Used, Adding: qe.Adding, Limit: qe.Limit}
		}
		if c.err == wallet.ErrDiskFull {
			we.Message = "the server's disk is full; nothing was written" // the error names server paths
		}
		return we, status
	}
	return wireError{Code: "internal", Message: "internal server error"}, http.StatusInternalServerError
}

// writeError answers a refusal; a busy answer carries Retry-After (whole seconds, rounded
// up) as well as the exact hint in the body.
func writeError(w http.ResponseWriter, we wireError, status int) {
	if we.RetryAfterMs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((we.RetryAfterMs+999)/1000, 10))
	}
	b, _ := json.Marshal(struct {
		Error wireError `json:"error"`
	}{we})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// quotaError is a retained-view quota refusal: the server's (503) or one identity's (429).
type quotaError struct {
	busy     *wallet.BusyError
	identity bool
}

func (e *quotaError) Error() string { return e.busy.Error() }
func (e *quotaError) Unwrap() error { return e.busy }

// RemoteError is a refusal the server classified but that carries no details of its own:
// it unwraps to the sentinel its code names (errors.Is works), and its message is the
// server's. A code this client does not know unwraps to wallet.ErrUnavailable with a 5xx
// status ("internal" among them) and to wallet.ErrRemote with another.
type RemoteError struct {
	Status  int
	Code    string
	Message string
	Err     error // the sentinel
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("server: %s", e.Message)
}

// Unwrap returns the sentinel of the error's code.
func (e *RemoteError) Unwrap() error { return e.Err }

// fromWire rebuilds the typed error of a refusal.
func fromWire(status int, body []byte) error {
	var m struct {
		Error *wireError `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil || m.Error.Code == "" {
		return fmt.Errorf("HTTP %d without a walletsync error: %w", status, ErrBadFrame)
	}
	we := m.Error
	switch {
	case we.Code == "server_busy":
		return &wallet.BusyError{Reason: we.Message, RetryAfter: time.Duration(we.RetryAfterMs) * time.Millisecond}
	case we.TooLarge != nil:
		return &wallet.RowTooLargeError{Table: we.TooLarge.Table, Key: we.TooLarge.Key, Charge: we.TooLarge.Charge, Limit: we.TooLarge.Limit}
	case we.Chains != nil:
		return &wallet.ChainError{Source: we.Chains.Source, Destination: we.Chains.Destination}
	case we.Quota != nil:
		return &wallet.QuotaError{Resource: we.Quota.Resource, Used: we.Quota.Used, Adding: we.Quota.Adding, Limit: we.Quota.Limit}
	}
	re := &RemoteError{Status: status, Code: we.Code, Message: we.Message, Err: wallet.ErrRemote}
	if status >= 500 {
		// "internal", or a code of a newer server: its failure, not the request's; what a
		// commit left, the session reads back.
		re.Err = wallet.ErrUnavailable
	}
	for _, c := range codes {
		if c.code == we.Code {
			re.Err = c.err
		}
	}
	return re
}
