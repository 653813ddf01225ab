package brc40

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"walletsync/wallet"
)

// BRC-40, as @bsv/wallet-toolbox 2.1.26 speaks it: the request a consumer sends
// (RequestSyncChunkArgs), the chunk a producer answers with (SyncChunk), the consumer's
// result (ProcessSyncChunkResult) and the state a consumer keeps per producer (SyncState
// with its SyncMap, the sync_states row).
//
// Every type here marshals to exactly the JSON the toolbox's StorageServer and StorageClient
// put on the wire (reference/brc40-sync.md, "Wire JSON"): keys in the order the toolbox
// builds its objects, rows keyed by column name in DDL order, times as ISO-8601 with
// milliseconds and Z, binary columns as number[] (arrays of byte values), null columns left
// out, the JSON-in-text columns (history, notify) as strings. Their UnmarshalJSON methods are
// strict, because they read bytes from another process: an unknown key, a key given twice, a
// value of the wrong JSON type, a null where the toolbox stores none or a message larger than
// wallet.MaxFrameBytes is refused with a *wallet.SyncMessageError naming where in the message
// it is.

// Budgets the toolbox's makeRequestSyncChunkArgs uses when the caller passes none.
const (
	DefaultChunkMaxRoughSize = 10_000_000
	DefaultChunkMaxItems     = 1000
	// MaxChunkRows is the most rows a chunk may carry, the user row aside: a producer stops
	// at maxItems, which neither walletsync (syncer.DefaultChunkItems) nor the toolbox asks
	// above 1000. A chunk's decoder refuses the row past it before reading that row.
	MaxChunkRows = DefaultChunkMaxItems
)

// badMessage is every decoder's refusal, so that a caller finds the path with errors.As.
func badMessage(path, format string, args ...any) error {
	return &wallet.SyncMessageError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// SyncOffset is one entry of RequestSyncChunkArgs.Offsets: how many rows of the entity the
// consumer has already taken since Since.
type SyncOffset struct {
	Name   string // the entity name (Table.Entity)
	Offset int64
}

// RequestSyncChunkArgs asks a producer for the next chunk of one user's rows.
type RequestSyncChunkArgs struct {
	FromStorageIdentityKey string // the producer
	ToStorageIdentityKey   string // the consumer
	IdentityKey            string // the user
	// Since is the consumer's watermark; nil asks for everything. Rows with updated_at at
	// or after it match (inclusive).
	Since        *time.Time
	MaxRoughSize int64
	MaxItems     int64
	// Offsets holds one entry per entity, by position in Entities order; a shorter list
	// limits the chunk to the first len(Offsets) entities.
	Offsets []SyncOffset
}

// Validate accepts what the toolbox's getSyncChunk can serve and a consumer can finish:
// the three keys set, MaxItems at least 1 (the toolbox answers 0 with a chunk that never
// completes), MaxRoughSize from 0 to MaxFrameBytes, and at most 12 offsets, each
// non-negative and named by position in Entities order (the toolbox checks names by
// position too; a 13th entry, which would make it restart the list, is refused here). It
// returns a *SyncMessageError.
func (a RequestSyncChunkArgs) Validate() error {
	switch {
	case a.IdentityKey == "":
		return badMessage("identityKey", "missing")
	case a.FromStorageIdentityKey == "":
		return badMessage("fromStorageIdentityKey", "missing")
	case a.ToStorageIdentityKey == "":
		return badMessage("toStorageIdentityKey", "missing")
	case a.MaxItems < 1:
		return badMessage("maxItems", "%d is less than 1", a.MaxItems)
	case a.MaxRoughSize < 0 || a.MaxRoughSize > wallet.MaxFrameBytes:
		return badMessage("maxRoughSize", "%d outside 0..%d", a.MaxRoughSize, wallet.MaxFrameBytes)
	case len(a.Offsets) > len(wallet.Entities):
		return badMessage("offsets", "%d entries, at most %d", len(a.Offsets), len(wallet.Entities))
	}
	for i, o := range a.Offsets {
		if want := wallet.Entities[i].Entity; o.Name != want {
			return badMessage(fmt.Sprintf("offsets[%d].name", i), "in dependency order: %q expected, found %q", want, o.Name)
		}
		if o.Offset < 0 {
			return badMessage(fmt.Sprintf("offsets[%d].offset", i), "negative (%d)", o.Offset)
		}
	}
	return nil
}

// MarshalJSON writes the arguments in the order the toolbox's makeRequestSyncChunkArgs
// builds them; since is left out when nil.
func (a RequestSyncChunkArgs) MarshalJSON() ([]byte, error) {
	b, err := appendStringFields([]byte{'{'}, "identityKey", a.IdentityKey)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"maxRoughSize":`...)
	b = strconv.AppendInt(b, a.MaxRoughSize, 10)
	b = append(b, `,"maxItems":`...)
	b = strconv.AppendInt(b, a.MaxItems, 10)
	b = append(b, `,"offsets":[`...)
	for i, o := range a.Offsets {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendStringFields(append(b, '{'), "name", o.Name); err != nil {
			return nil, fmt.Errorf("offsets[%d]: %w", i, err)
		}
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, o.Offset, 10)
		b = append(b, '}')
	}
	b = append(b, ']')
	if a.Since != nil {
		b = append(b, `,"since":`...)
		b = appendJSTime(b, *a.Since)
	}
	if b, err = appendStringFields(b, "fromStorageIdentityKey", a.FromStorageIdentityKey, "toStorageIdentityKey", a.ToStorageIdentityKey); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads arguments strictly (see the package notes on BRC-40) and then runs
// Validate. A null since means no since, as in the toolbox.
func (a *RequestSyncChunkArgs) UnmarshalJSON(data []byte) error {
	r, err := newSyncReader(data)
	if err != nil {
		return err
	}
	var out RequestSyncChunkArgs
	seen := map[string]bool{}
	err = r.object("$", func(key, path string) error {
		seen[key] = true
		var err error
		switch key {
		case "identityKey":
			out.IdentityKey, err = r.str(path)
		case "fromStorageIdentityKey":
			out.FromStorageIdentityKey, err = r.str(path)
		case "toStorageIdentityKey":
			out.ToStorageIdentityKey, err = r.str(path)
		case "since":
			out.Since, err = r.optTime(path)
		case "maxRoughSize":
			out.MaxRoughSize, err = r.integer(path)
		case "maxItems":
			out.MaxItems, err = r.integer(path)
		case "offsets":
			out.Offsets = []SyncOffset{}
			_, err = r.array(path, false, func(path string) error {
				var o SyncOffset
				got := map[string]bool{}
				err := r.object(path, func(key, path string) error {
					got[key] = true
					var err error
					switch key {
					case "name":
						o.Name, err = r.str(path)
					case "offset":
						o.Offset, err = r.integer(path)
					default:
						err = badMessage(path, "unknown key")
					}
					return err
				})
				if err == nil && (!got["name"] || !got["offset"]) {
					err = badMessage(path, "an offset needs name and offset")
				}
				out.Offsets = append(out.Offsets, o)
				return err
			})
		default:
			err = badMessage(path, "unknown key")
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return err
	}
	if err := requireKeys(seen, "identityKey", "fromStorageIdentityKey", "toStorageIdentityKey", "maxRoughSize", "maxItems", "offsets"); err != nil {
		return err
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*a = out
	return nil
}

// SyncChunk is a producer's answer: one user's rows with the producer's ids.
type SyncChunk struct {
	FromStorageIdentityKey string
	ToStorageIdentityKey   string
	UserIdentityKey        string
	// User is the users row, nil when the producer left it out (it is sent when the request
	// has no since or the row changed after it).
	User wallet.Row
	// Rows holds the entity arrays by table. A table that is present was attempted, even
	// if its slice is empty; a table that is absent was not attempted, because a limit
	// was hit first.
	Rows map[wallet.TableName][]wallet.Row
}

// Complete reports whether the chunk ends a cycle: all 12 arrays present and empty. The
// user row does not count.
func (c SyncChunk) Complete() bool {
	for _, t := range wallet.Entities {
		if rows, ok := c.Rows[t.Name]; !ok || len(rows) > 0 {
			return false
		}
	}
	return true
}

// MarshalJSON writes the chunk as the toolbox's getSyncChunk builds it: the three keys,
// user, then the present arrays in Entities order. It fails on a value the toolbox could not
// have produced (see AppendRowJSON). Its bytes are the toolbox's bytes; json.Marshal, which
// re-escapes '<', '>', '&', U+2028 and U+2029 in any Marshaler's output, gives the same JSON
// value in other bytes (an Encoder with SetEscapeHTML(false) keeps them).
func (c SyncChunk) MarshalJSON() ([]byte, error) {
	b, err := appendStringFields([]byte{'{'}, "fromStorageIdentityKey", c.FromStorageIdentityKey,
		"toStorageIdentityKey", c.ToStorageIdentityKey, "userIdentityKey", c.UserIdentityKey)
	if err != nil {
		return nil, err
	}
	if c.User != nil {
		b = append(b, `,"user":`...)
		if b, err = AppendRowJSON(b, wallet.Users, c.User); err != nil {
			return nil, err
		}
	}
	for _, t := range wallet.Entities {
		rows, ok := c.Rows[t.Name]
		if !ok {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, t.Plural...)
		b = append(b, '"', ':', '[')
		for i, r := range rows {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = AppendRowJSON(b, t, r); err != nil {
				return nil, fmt.Errorf("encode %s[%d]: %w", t.Plural, i, err)
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a chunk strictly: the three keys required, user and the 12 arrays
// optional (null counts as absent, as in the toolbox), no other key; every row through the
// column rules of AppendRowJSON's inverse: each key a column of its table, no NOT NULL column
// null or missing. The two proven_tx_reqs columns that toolbox 1.x stores lack
// (wasBroadcast, rebroadcastAttempts) take their column defaults (false, 0) when missing,
// as a toolbox insert would give them. Rows are counted as they are read, across the 12
// arrays: the row past MaxChunkRows is refused before it is read.
func (c *SyncChunk) UnmarshalJSON(data []byte) error {
	r, err := newSyncReader(data)
	if err != nil {
		return err
	}
	out := SyncChunk{Rows: map[wallet.TableName][]wallet.Row{}}
	seen := map[string]bool{}
	count := wallet.RowCounter{Limit: MaxChunkRows}
	err = r.object("$", func(key, path string) error {
		seen[key] = true
		var err error
		switch key {
		case "fromStorageIdentityKey":
			out.FromStorageIdentityKey, err = r.str(path)
		case "toStorageIdentityKey":
			out.ToStorageIdentityKey, err = r.str(path)
		case "userIdentityKey":
			out.UserIdentityKey, err = r.str(path)
		case "user":
			out.User, err = r.row(path, wallet.Users, true)
		default:
			t := entityByPlural(key)
			if t == nil {
				return badMessage(path, "unknown key (not one of the 12 BRC-40 arrays)")
			}
			rows := []wallet.Row{}
			var present bool
			present, err = r.array(path, true, func(path string) error {
				if err := count.Next(); err != nil {
					return badMessage(path, "%v in one chunk", err)
				}
				row, err := r.row(path, t, false)
				rows = append(rows, row)
				return err
			})
			if present {
				out.Rows[t.Name] = rows
			}
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return err
	}
	if err := requireKeys(seen, "fromStorageIdentityKey", "toStorageIdentityKey", "userIdentityKey"); err != nil {
		return err
	}
	*c = out
	return nil
}

// requireKeys refuses a message in which one of keys was not seen.
func requireKeys(seen map[string]bool, keys ...string) error {
	for _, k := range keys {
		if !seen[k] {
			return badMessage(k, "missing")
		}
	}
	return nil
}

func entityByPlural(plural string) *wallet.Table {
	for _, t := range wallet.Entities {
		if t.Plural == plural {
			return t
		}
	}
	return nil
}

// ProcessSyncChunkResult is a consumer's answer to one chunk.
type ProcessSyncChunkResult struct {
	// Done is true when the chunk completed a cycle (SyncChunk.Complete).
	Done bool
	// MaxUpdatedAt is the latest updated_at the consumer has seen from this producer, over
	// every entity and cycle (and the user row when it changed); nil before any.
	MaxUpdatedAt *time.Time
	Updates      int64
	Inserts      int64
	// Error, when set, reports a failure inside the result (a remote peer's storage error).
	Error *SyncError
}

// SyncError is an error object carried inside a result, as the toolbox's WalletError
// serializes: its name (e.g. WERR_INTERNAL) and message.
type SyncError struct {
	Name    string
	Message string
}

// Err returns nil, or an error wrapping ErrDestinationFailed when the result carries an
// error: a result with an error counts exactly like a returned error.
func (r ProcessSyncChunkResult) Err() error {
	if r.Error == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", r.Error.Name, r.Error.Message, wallet.ErrDestinationFailed)
}

// MarshalJSON writes {done, maxUpdated_at, updates, inserts, error} in the toolbox's order,
// leaving out a nil MaxUpdatedAt and Error.
func (r ProcessSyncChunkResult) MarshalJSON() ([]byte, error) {
	b := append([]byte(`{"done":`), strconv.FormatBool(r.Done)...)
	if r.MaxUpdatedAt != nil {
		b = append(b, `,"maxUpdated_at":`...)
		b = appendJSTime(b, *r.MaxUpdatedAt)
	}
	b = append(b, `,"updates":`...)
	b = strconv.AppendInt(b, r.Updates, 10)
	b = append(b, `,"inserts":`...)
	b = strconv.AppendInt(b, r.Inserts, 10)
	if r.Error != nil {
		var err error
		b = append(b, `,"error":{"isError":true`...)
		if b, err = appendStringFields(b, "name", r.Error.Name, "message", r.Error.Message); err != nil {
			return nil, fmt.Errorf("error: %w", err)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a result strictly. The error object is the one exception: a WalletError
// carries implementation-specific fields (isError, code, stack, details...), so only its
// name and message are read and the rest is skipped.
func (r *ProcessSyncChunkResult) UnmarshalJSON(data []byte) error {
	rd, err := newSyncReader(data)
	if err != nil {
		return err
	}
	var out ProcessSyncChunkResult
	seen := map[string]bool{}
	err = rd.object("$", func(key, path string) error {
		seen[key] = true
		var err error
		switch key {
		case "done":
			out.Done, err = rd.boolean(path)
		case "maxUpdated_at":
			out.MaxUpdatedAt, err = rd.optTime(path)
		case "updates":
			out.Updates, err = rd.integer(path)
		case "inserts":
			out.Inserts, err = rd.integer(path)
		case "error":
			var raw json.RawMessage
			if err := rd.dec.Decode(&raw); err != nil {
				return badMessage(path, "invalid JSON: %v", err)
			}
			if string(raw) == "null" {
				return nil
			}
			var e struct {
				Name    string `json:"name"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return badMessage(path, "not an error object: %v", err)
			}
			out.Error = &SyncError{Name: e.Name, Message: e.Message}
		default:
			err = badMessage(path, "unknown key")
		}
		return err
	})
	if err == nil {
		err = rd.end()
	}
	if err != nil {
		return err
	}
	if err := requireKeys(seen, "done", "updates", "inserts"); err != nil {
		return err
	}
	*r = out
	return nil
}
