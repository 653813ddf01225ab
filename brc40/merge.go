package brc40

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"walletsync/wallet"
)

// The dialect-free half of BRC-40's producer and consumer as @bsv/wallet-toolbox 2.1.26
// runs them: which rows a chunk takes and in what budget, how a chunk moves the consumer's
// sync state, and how a matched row merges. Every store (localstore on SQLite, pgstore on
// PostgreSQL) supplies only its queries and writes, so that both answer a peer alike.

// NewRefNum returns a fresh sync_states.refNum as the toolbox makes one: 12 random bytes in
// base64.
func NewRefNum() (string, error) {
	ref := make([]byte, 12)
	if _, err := rand.Read(ref); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ref), nil
}

// NewSyncState is the sync_states row findOrInsertSyncStateAuth inserts for userID and the
// producer (producerSIK, producerName): status "unknown", init false, a fresh refNum and
// sync map, no when, created_at = updated_at = now. It has no id yet.
func NewSyncState(userID int64, producerSIK, producerName string, now time.Time) (SyncState, error) {
	ref, err := NewRefNum()
	if err != nil {
		return SyncState{}, err
	}
	return SyncState{CreatedAt: now, UpdatedAt: now, UserID: userID, StorageIdentityKey: producerSIK, StorageName: producerName,
		Status: "unknown", RefNum: ref, SyncMap: NewSyncMap()}, nil
}

// UpdatedAt returns a normalized row's updated_at.
func UpdatedAt(t *wallet.Table, r wallet.Row) time.Time {
	return r[t.Col("updated_at")].(time.Time)
}

// Latest is the toolbox's maxDate: the later of a (nil: none) and b.
func Latest(a *time.Time, b time.Time) *time.Time {
	if a != nil && !b.After(*a) {
		return a
	}
	return &b
}

// ChunkPager reads up to limit rows of t for one user, after skipping offset rows, in the
// order the store's producer keeps for t (the same order on every call, see ProduceChunk).
type ChunkPager func(t *wallet.Table, offset, limit int64) ([]wallet.Row, error)

// ChunkDivider is getSyncChunk's maxDivider: the share of maxItems one page of an entity
// may hold, smaller for the large proof and transaction rows.
func ChunkDivider(t *wallet.Table) int64 {
	switch t {
	case wallet.ProvenTxs, wallet.ProvenTxReqs:
		return 100
	case wallet.Transactions, wallet.Outputs, wallet.Certificates, wallet.CertificateFields, wallet.Commissions:
		return 25
	}
	return 1
}

// ProduceChunk builds the chunk getSyncChunk answers for args, given the user's row (user,
// normalized) and a pager over the user's rows that match args.Since:
//
//   - the user row is included when args.Since is nil or its updated_at is strictly later;
//   - the entities are taken in Entities order, one per offset, the first Offset matches
//     of each skipped;
//   - rows are added until the entity is exhausted, MaxItems rows are in the chunk, or the
//     running sum of RowJSONSize exceeds MaxRoughSize; the row that crosses the limit is
//     included and nothing follows it. An entity that was started is present, possibly
//     empty; the entities after a limit are absent.
//
// Rows are read min(itemsLeft, max(10, maxItems/ChunkDivider)) at a time, as the toolbox
// pages: the page size bounds each query, it never changes which rows go out. The pager
// must see one snapshot across the calls of one chunk, or offsets would skip or repeat rows.
func ProduceChunk(args RequestSyncChunkArgs, user wallet.Row, page ChunkPager) (SyncChunk, error) {
	chunk := SyncChunk{FromStorageIdentityKey: args.FromStorageIdentityKey, ToStorageIdentityKey: args.ToStorageIdentityKey,
		UserIdentityKey: args.IdentityKey, Rows: map[wallet.TableName][]wallet.Row{}}
	if args.Since == nil || UpdatedAt(wallet.Users, user).After(*args.Since) {
		chunk.User = user
	}
	b := &chunkBudget{maxItems: args.MaxItems, itemsLeft: args.MaxItems, sizeLeft: args.MaxRoughSize}
	for i, o := range args.Offsets {
		t := wallet.Entities[i]
		rows, err := b.entityRows(t, o.Offset, page)
		if err != nil {
			return SyncChunk{}, fmt.Errorf("%s: %w", t.Plural, err)
		}
		chunk.Rows[t.Name] = rows
		if b.done {
			break
		}
	}
	return chunk, nil
}

// chunkBudget carries one chunk's limits.
type chunkBudget struct {
	maxItems  int64
	itemsLeft int64
	sizeLeft  int64
	done      bool // a limit was hit: nothing more goes into the chunk
}

func (b *chunkBudget) entityRows(t *wallet.Table, offset int64, page ChunkPager) ([]wallet.Row, error) {
	pageMax := max(10, b.maxItems/ChunkDivider(t))
	out := []wallet.Row{} // present, even when nothing matches
	for {
		limit := min(b.itemsLeft, pageMax)
		rows, err := page(t, offset, limit)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, r)
			size, err := RowJSONSize(t, r)
			if err != nil {
				return nil, fmt.Errorf("row %v: %w", t.KeyOf(r), err)
			}
			b.itemsLeft--
			b.sizeLeft -= size
			if b.itemsLeft <= 0 || b.sizeLeft < 0 {
				b.done = true
				return out, nil
			}
		}
		if int64(len(rows)) < limit {
			return out, nil
		}
		offset += limit
	}
}

// CheckChunk refuses a chunk that does not answer args (producer, consumer, user), args that
// fail Validate, and a row that Table.Normalize or Table.CheckValues refuses (a value the
// toolbox never writes: a negative output, a malformed txid, an id below 1); rows are
// normalized in place. A consumer runs it before writing anything.
func CheckChunk(args RequestSyncChunkArgs, chunk SyncChunk) error {
	if err := args.Validate(); err != nil {
		return err
	}
	switch {
	case chunk.FromStorageIdentityKey != args.FromStorageIdentityKey:
		return fmt.Errorf("chunk from producer %s answers a request to %s: %w", wallet.ShortKey(chunk.FromStorageIdentityKey, 16), wallet.ShortKey(args.FromStorageIdentityKey, 16), wallet.ErrInvalidArgument)
	case chunk.ToStorageIdentityKey != args.ToStorageIdentityKey:
		return fmt.Errorf("chunk for consumer %s answers a request from %s: %w", wallet.ShortKey(chunk.ToStorageIdentityKey, 16), wallet.ShortKey(args.ToStorageIdentityKey, 16), wallet.ErrInvalidArgument)
	case chunk.UserIdentityKey != args.IdentityKey:
		return fmt.Errorf("chunk for user %s answers a request for %s: %w", wallet.ShortKey(chunk.UserIdentityKey, 16), wallet.ShortKey(args.IdentityKey, 16), wallet.ErrInvalidArgument)
	}
	if chunk.User != nil {
		if err := wallet.Users.Normalize(chunk.User); err != nil {
			return fmt.Errorf("chunk user: %w", err)
		}
		if err := wallet.Users.CheckValues(chunk.User); err != nil {
			return fmt.Errorf("chunk user: %w", err)
		}
		if key := chunk.User[wallet.Users.Col("identityKey")]; key != args.IdentityKey {
			return fmt.Errorf("chunk carries the user row of %v: %w", key, wallet.ErrInvalidArgument)
		}
	}
	for name, rows := range chunk.Rows {
		t, err := wallet.LookupTable(name)
		if err != nil || t.Entity == "user" || t == wallet.SyncStates {
			return fmt.Errorf("chunk array %q is not a BRC-40 entity: %w", name, wallet.ErrInvalidArgument)
		}
		for i, r := range rows {
			if err := t.Normalize(r); err != nil {
				return fmt.Errorf("%s[%d]: %w", t.Plural, i, err)
			}
			if err := t.CheckValues(r); err != nil {
				return fmt.Errorf("%s[%d]: %w", t.Plural, i, err)
			}
		}
	}
	return nil
}

// ConsumeChunk merges a checked chunk through the store's merge functions and moves st as
// processSyncChunk moves it. mergeUser merges the user row (when the chunk has one) and
// reports whether it changed it; mergeRows merges one entity's rows, in the chunk's order
// (a store merges them as one page, see MergePage). Each entity's
// maxUpdated_at rises to its rows' latest updated_at and its count grows by the rows
// received (the next offset); when the chunk is complete (all 12 arrays present and empty)
// When becomes the result's MaxUpdatedAt and every count resets to 0. The result's
// MaxUpdatedAt is the latest of every entity's maxUpdated_at and, when the user row changed,
// its updated_at. Inserts and Updates are the caller's to fill in.
func ConsumeChunk(st *SyncState, chunk SyncChunk, mergeUser func(wallet.Row) (changed bool, err error), mergeRows func(*wallet.Table, []wallet.Row) error) (ProcessSyncChunkResult, error) {
	var maxUpdated *time.Time
	if chunk.User != nil {
		changed, err := mergeUser(chunk.User)
		if err != nil {
			return ProcessSyncChunkResult{}, fmt.Errorf("merge user: %w", err)
		}
		if changed {
			maxUpdated = Latest(maxUpdated, UpdatedAt(wallet.Users, chunk.User))
		}
	}
	for _, t := range wallet.Entities {
		rows := chunk.Rows[t.Name]
		e := st.SyncMap.Entity(t)
		for _, r := range rows {
			e.MaxUpdatedAt = Latest(e.MaxUpdatedAt, UpdatedAt(t, r))
		}
		if len(rows) > 0 {
			if err := mergeRows(t, rows); err != nil {
				return ProcessSyncChunkResult{}, fmt.Errorf("merge %s: %w", t.Plural, err)
			}
		}
		e.Count += int64(len(rows))
		if e.MaxUpdatedAt != nil {
			maxUpdated = Latest(maxUpdated, *e.MaxUpdatedAt)
		}
	}
	done := chunk.Complete()
	if done {
		// The next cycle starts at the newest row seen, its offsets at zero.
		st.When = maxUpdated
		for _, t := range wallet.Entities {
			st.SyncMap.Entity(t).Count = 0
		}
	}
	return ProcessSyncChunkResult{Done: done, MaxUpdatedAt: maxUpdated}, nil
}

// MatchKeys returns the column sets that find the stored row matching an incoming one, in
// the order they are tried: a transaction by (txid, user), then by (reference, user); any
// other row by its natural key.
func MatchKeys(t *wallet.Table) [][]string {
	if t == wallet.Transactions {
		return [][]string{{"txid", "userId"}, {"reference", "userId"}}
	}
	return [][]string{t.Natural}
}

// Matchable reports whether local can be looked up by cols: the toolbox looks a transaction
// up by txid only when it has one (a non-empty one: its test is JavaScript truthiness).
func Matchable(t *wallet.Table, cols []string, local wallet.Row) bool {
	if t != wallet.Transactions || cols[0] != "txid" {
		return true
	}
	txid := local[t.Col("txid")]
	return txid != nil && txid != ""
}

// Localize returns a copy of in (a row of t with a source store's ids) as the store of
// userID would hold it: its user, and every foreign key mapped to a local id through
// localID. A missing mapping is refused alike for every key, nullable or not (a
// *wallet.DanglingReferenceError naming the column): the toolbox would store a nullable one
// as NULL (a transaction losing its proof without a word) while refusing a NOT NULL one, and
// walletsync treats every table alike. A NULL key stays NULL. A proof request's notify ids
// are mapped too (MapNotify), and the ids without a mapping dropped, as the toolbox does.
func Localize(t *wallet.Table, in wallet.Row, userID int64, localID func(t *wallet.Table, src int64) (int64, bool)) (wallet.Row, error) {
	local := slices.Clone(in)
	if t.HasCol("userId") {
		local[t.Col("userId")] = userID
	}
	for _, ref := range t.Refs {
		i := t.Col(ref.Column)
		if in[i] == nil {
			continue
		}
		target, _ := wallet.LookupTable(ref.Target)
		id, ok := localID(target, in[i].(int64))
		if !ok {
			return nil, &wallet.DanglingReferenceError{Table: t.Name, Column: ref.Column, ID: in[i].(int64)}
		}
		local[i] = id
	}
	if t == wallet.ProvenTxReqs {
		localTx := func(src int64) (int64, bool) { return localID(wallet.Transactions, src) }
		notify, notified, err := MapNotify(in[t.Col("notify")].(string), "", in[t.Col("notified")].(bool), localTx)
		if err != nil {
			return nil, err
		}
		local[t.Col("notify")], local[t.Col("notified")] = notify, notified
	}
	return local, nil
}

// Newer reports whether in is strictly newer than stored (BRC-40's "newer wins").
func Newer(t *wallet.Table, in, stored wallet.Row) bool {
	return UpdatedAt(t, in).After(UpdatedAt(t, stored))
}

func laterTime(a, b any) time.Time {
	if b.(time.Time).After(a.(time.Time)) {
		return b.(time.Time)
	}
	return a.(time.Time)
}

// MergeNewer applies BRC-40's "strictly newer wins" to a matched row of a table other than
// users, proven_txs and proven_tx_reqs (which have their own rules): when in is strictly
// newer than found, found takes local's Merge columns (local is in with local ids) and in's
// updated_at, and MergeNewer returns the columns to write; else nil.
func MergeNewer(t *wallet.Table, in, local, found wallet.Row) []string {
	if !Newer(t, in, found) {
		return nil
	}
	for _, c := range t.Merge {
		found[t.Col(c)] = local[t.Col(c)]
	}
	found[t.Col("updated_at")] = in[t.Col("updated_at")]
	return append(slices.Clone(t.Merge), "updated_at")
}

// UserMergeColumns returns the users columns MergeUserRow may change, in a new slice the
// caller may keep or alter.
func UserMergeColumns() []string { return []string{"activeStorage", "updated_at"} }

// MergeUserRow applies an incoming user row to the stored one (found, changed in place) and
// reports whether it changed it. The toolbox copies activeStorage only from a newer row
// (the zero policy); a push keeps the source's active store at the destination and a pull
// keeps the destination's, so that no sync ever switches which store is active.
func MergeUserRow(in, found wallet.Row, active wallet.ActivePolicy) bool {
	t := wallet.Users
	ai, ui := t.Col("activeStorage"), t.Col("updated_at")
	isNewer := Newer(t, in, found)
	switch active {
	case wallet.KeepSourceActive:
		if isNewer || in[ai] != found[ai] {
			found[ai], found[ui] = in[ai], laterTime(found[ui], in[ui])
			return true
		}
	case wallet.KeepDestinationActive:
		if isNewer {
			found[ui] = in[ui]
			return true
		}
	default:
		if isNewer {
			found[ai], found[ui] = in[ai], in[ui]
			return true
		}
	}
	return false
}

// ProofRequestMergeColumns returns the proven_tx_reqs columns MergeProofRequest may change,
// in a new slice the caller may keep or alter.
func ProofRequestMergeColumns() []string {
	return []string{"batch", "history", "notify", "notified", "updated_at"}
}

// MergeProofRequest is the toolbox's EntityProvenTxReq.mergeExisting, applied to found in
// place: it always runs, whatever the timestamps, and does not count as an update. The
// batch is taken when the stored one is empty (two different batches are ErrCorrupt),
// history notes are united (MergeHistory), notify ids are mapped through localTxID and
// united (MapNotify), updated_at becomes the later one. Status, attempts, provenTxId and
// rawTx are never overwritten. The caller writes ProofRequestMergeColumns().
func MergeProofRequest(in, found wallet.Row, localTxID func(src int64) (int64, bool)) error {
	t := wallet.ProvenTxReqs
	bi := t.Col("batch")
	switch {
	case found[bi] == nil && in[bi] != nil:
		found[bi] = in[bi]
	case found[bi] != nil && in[bi] != nil && found[bi] != in[bi]:
		return fmt.Errorf("proof request %s: batch %q differs from %q: %w", in[t.Col("txid")], found[bi], in[bi], wallet.ErrCorrupt)
	}
	history, err := MergeHistory(found[t.Col("history")].(string), in[t.Col("history")].(string))
	if err != nil {
		return fmt.Errorf("proof request %s: %w", in[t.Col("txid")], err)
	}
	found[t.Col("history")] = history
	notify, notified, err := MapNotify(in[t.Col("notify")].(string), found[t.Col("notify")].(string), found[t.Col("notified")].(bool), localTxID)
	if err != nil {
		return fmt.Errorf("proof request %s: %w", in[t.Col("txid")], err)
	}
	found[t.Col("notify")], found[t.Col("notified")] = notify, notified
	found[t.Col("updated_at")] = laterTime(found[t.Col("updated_at")], in[t.Col("updated_at")])
	return nil
}

// NotifyTransactionIDs returns the integer transaction ids of a proof request's notify
// object (others are skipped).
func NotifyTransactionIDs(notify string) ([]int64, error) {
	obj, err := decodeObject(notify)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	var ids []int64
	for _, v := range asList(obj["transactionIds"]) {
		if n, ok := v.(json.Number); ok {
			if id, err := n.Int64(); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// MapNotify maps the transaction ids of an incoming notify object to local ids through
// localTxID (dropping those without a mapping) and adds them to the local request's list,
// sorted and unique. For a new request (local == "") the result is the incoming object
// with only the mapped ids. Like the toolbox's addNotifyTransactionId, every id added marks
// the request not notified.
func MapNotify(incoming, local string, notified bool, localTxID func(src int64) (int64, bool)) (string, bool, error) {
	in, err := decodeObject(incoming)
	if err != nil {
		return "", false, fmt.Errorf("notify: %w", err)
	}
	out, ids := in, []int64{}
	if local != "" {
		if out, err = decodeObject(local); err != nil {
			return "", false, fmt.Errorf("notify: %w", err)
		}
		for _, v := range asList(out["transactionIds"]) {
			if n, err := v.(json.Number).Int64(); err == nil {
				ids = append(ids, n)
			}
		}
		if _, present := in["transactionIds"]; !present {
			return local, notified, nil
		}
	}
	for _, v := range asList(in["transactionIds"]) {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		src, err := n.Int64()
		if err != nil {
			continue
		}
		if id, ok := localTxID(src); ok && id != 0 {
			ids = append(ids, id)
			notified = false
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	list := make([]any, len(ids))
	for i, id := range ids {
		list[i] = json.Number(fmt.Sprint(id))
	}
	out["transactionIds"] = list
	text, err := json.Marshal(out)
	return string(text), notified, err
}

// MergeHistory unites two history objects' notes the way addHistoryNote does: an incoming
// note is added unless an existing note has all of its own fields equal to it, and the
// notes are kept sorted by "when what".
func MergeHistory(local, incoming string) (string, error) {
	out, err := decodeObject(local)
	if err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	in, err := decodeObject(incoming)
	if err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	notes := asList(out["notes"])
	for _, n := range asList(in["notes"]) {
		note, ok := n.(map[string]any)
		if !ok {
			continue
		}
		if _, ok := note["when"]; !ok {
			note["when"] = wallet.FormatTime(wallet.Now())
		}
		if !slices.ContainsFunc(notes, func(e any) bool { return noteCovers(e, note) }) {
			notes = append(notes, note)
			slices.SortStableFunc(notes, func(a, b any) int { return strings.Compare(noteKey(a), noteKey(b)) })
		}
	}
	if notes != nil || out["notes"] != nil {
		out["notes"] = notes
	}
	text, err := json.Marshal(out)
	return string(text), err
}

// noteCovers is the toolbox's equality test: every field of the existing note equals the
// note's field of the same name (objects never compare equal, as in JavaScript).
func noteCovers(existing any, note map[string]any) bool {
	e, ok := existing.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range e {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
		if w, ok := note[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func noteKey(n any) string {
	m, _ := n.(map[string]any)
	str := func(v any) string {
		if v == nil {
			return "undefined"
		}
		return fmt.Sprint(v)
	}
	return str(m["when"]) + " " + str(m["what"])
}

func decodeObject(text string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber() // ids and counters keep their exact digits
	out := map[string]any{}
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode %q: %v: %w", text, err, wallet.ErrCorrupt)
	}
	return out, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// LocalID returns the consumer's id for a producer id of t, from the sync map's id maps.
// Users have no entry there (the user is matched by identity key).
func (m SyncMap) LocalID(t *wallet.Table, src int64) (int64, bool) {
	e := m.Entity(t)
	if e == nil {
		return 0, false
	}
	id, ok := e.IDMap[src]
	return id, ok
}

// RecordID maps a producer id of t to a local one; mapping an id again to another value is
// an *IDMapConflictError (the stores disagree about identity, and nothing may be merged on
// top of that). Users are not kept.
func (m SyncMap) RecordID(t *wallet.Table, src, local int64) error {
	e := m.Entity(t)
	if e == nil {
		return nil
	}
	if old, ok := e.IDMap[src]; ok && old != local {
		return &wallet.IDMapConflictError{Entity: t.Entity, SourceID: src, Mapped: old, New: local}
	}
	e.IDMap[src] = local
	return nil
}

// OneSyncState is the consumer's state for producer among the sync states found for the
// user and producer (read up to two): none is ErrNotFound (FindOrInsertSyncState makes
// it; processSyncChunk never does), more than one ErrAmbiguousSyncState (two names of one
// producer, which the toolbox's lookup by name allows to exist).
func OneSyncState(states []SyncState, producer string) (SyncState, error) {
	switch len(states) {
	case 0:
		return SyncState{}, fmt.Errorf("no sync state for producer %s (FindOrInsertSyncState makes it): %w", wallet.ShortKey(producer, 16), wallet.ErrNotFound)
	case 1:
		return states[0], nil
	}
	return SyncState{}, fmt.Errorf("producer %s: %w", wallet.ShortKey(producer, 16), wallet.ErrAmbiguousSyncState)
}

// MirrorRow makes found, the stored row matching an incoming row of t, equal to local (the
// incoming row with this store's ids, from Localize), for a destination that is a backup of
// its source (wallet.Batch.Mirror): every column but the table's id takes the source's value,
// whatever the two rows' timestamps, and a proof request's notified flag is the source's
// (Localize clears it when it maps notify ids, as the toolbox's merge does). BRC-40's merge
// rules protect a live wallet whose own monitor owns a proof request's status, attempts,
// provenTxId and rawTx, and skip a change made in the same millisecond as the one before it;
// a backup has no monitor, and must equal its source row for row and column for column.
// MirrorRow returns the columns it changed, or nil when the rows were already equal.
func MirrorRow(t *wallet.Table, in, local, found wallet.Row) []string {
	var cols []string
	for i, c := range t.Columns {
		if c.Name == t.ID {
			continue
		}
		v := local[i]
		if t == wallet.ProvenTxReqs && c.Name == "notified" {
			v = in[i]
		}
		if !wallet.SameValue(found[i], v) {
			found[i] = v
			cols = append(cols, c.Name)
		}
	}
	return cols
}
