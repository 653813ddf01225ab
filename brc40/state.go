package brc40

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"walletsync/wallet"
)

// The BRC-40 consumer's state, one sync_states row per user and producer: the sync map with
// its id maps, offsets and watermarks, kept in exactly the text the toolbox keeps, so that a
// toolbox peer and walletsync can take turns on the same file.

// EntitySyncMap is one entity's entry in a SyncMap.
type EntitySyncMap struct {
	EntityName string
	// IDMap maps the producer's ids to the consumer's. It stays empty for the entities
	// without an id of their own (txLabelMap, outputTagMap, certificateField).
	IDMap map[int64]int64
	// MaxUpdatedAt is the latest updated_at received for the entity, over every cycle.
	MaxUpdatedAt *time.Time
	// Count is the number of rows received in the current cycle: the next request's offset.
	Count int64
}

// SyncMap is the JSON text of sync_states.syncMap, decoded: one entry per BRC-40 entity
// name. Every SyncMap that NewSyncMap or UnmarshalJSON returns holds all 12 entries.
type SyncMap map[string]*EntitySyncMap

// syncMapOrder returns the key order of the toolbox's createSyncMap, which the stored text
// keeps.
func syncMapOrder() []string {
	return []string{"provenTx", "outputBasket", "transaction", "provenTxReq", "txLabel", "txLabelMap",
		"output", "outputTag", "outputTagMap", "certificate", "certificateField", "commission"}
}

// NewSyncMap returns the toolbox's createSyncMap(): every entity with an empty id map, no
// maxUpdated_at and a count of 0.
func NewSyncMap() SyncMap {
	m := SyncMap{}
	for _, name := range syncMapOrder() {
		m[name] = &EntitySyncMap{EntityName: name, IDMap: map[int64]int64{}}
	}
	return m
}

// Entity returns t's entry.
func (m SyncMap) Entity(t *wallet.Table) *EntitySyncMap { return m[t.Entity] }

// MarshalJSON writes the text the toolbox stores: entities in createSyncMap order, each as
// {"entityName","idMap","count","maxUpdated_at"} (the toolbox parses the stored text, in
// which an unset maxUpdated_at is absent, so setting it appends the key after count), id map
// keys in ascending numeric order as JavaScript orders integer keys. (JavaScript orders keys
// of 2^32-1 and more by insertion, which is not recorded; they follow, ascending.)
func (m SyncMap) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, name := range syncMapOrder() {
		e := m[name]
		if e == nil {
			return nil, fmt.Errorf("encode sync map: no %q entry: %w", name, wallet.ErrInvalidArgument)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":{"entityName":"`...)
		b = append(b, name...)
		b = append(b, `","idMap":{`...)
		for j, src := range slices.Sorted(maps.Keys(e.IDMap)) {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, src, 10)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, e.IDMap[src], 10)
		}
		b = append(b, `},"count":`...)
		b = strconv.AppendInt(b, e.Count, 10)
		if e.MaxUpdatedAt != nil {
			b = append(b, `,"maxUpdated_at":`...)
			b = appendJSTime(b, *e.MaxUpdatedAt)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a stored sync map. "{}" gives NewSyncMap(), as the toolbox's
// EntitySyncState.fromStorage does. Otherwise all 12 entries must be present, each naming
// itself, with positive integer ids; any other key is refused.
func (m *SyncMap) UnmarshalJSON(data []byte) error {
	r, err := newSyncReader(data)
	if err != nil {
		return err
	}
	out, order := SyncMap{}, syncMapOrder()
	err = r.object("$", func(name, path string) error {
		if !slices.Contains(order, name) {
			return badMessage(path, "unknown entity")
		}
		e := &EntitySyncMap{IDMap: map[int64]int64{}}
		got := map[string]bool{}
		err := r.object(path, func(key, path string) error {
			got[key] = true
			var err error
			switch key {
			case "entityName":
				if e.EntityName, err = r.str(path); err == nil && e.EntityName != name {
					err = badMessage(path, "%q under key %q", e.EntityName, name)
				}
			case "idMap":
				err = r.object(path, func(src, path string) error {
					id, err := strconv.ParseInt(src, 10, 64)
					if err != nil || id < 1 || strconv.FormatInt(id, 10) != src {
						return badMessage(path, "not a positive integer id")
					}
					local, err := r.integer(path)
					if err == nil && local < 1 {
						err = badMessage(path, "local id %d is not positive", local)
					}
					e.IDMap[id] = local
					return err
				})
			case "maxUpdated_at":
				e.MaxUpdatedAt, err = r.optTime(path)
			case "count":
				if e.Count, err = r.integer(path); err == nil && e.Count < 0 {
					err = badMessage(path, "negative (%d)", e.Count)
				}
			default:
				err = badMessage(path, "unknown key")
			}
			return err
		})
		if err == nil && (!got["entityName"] || !got["idMap"] || !got["count"]) {
			err = badMessage(path, "an entry needs entityName, idMap and count")
		}
		out[name] = e
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return err
	}
	if len(out) == 0 {
		*m = NewSyncMap()
		return nil
	}
	for _, name := range order {
		if out[name] == nil {
			return badMessage(name, "missing entity")
		}
	}
	*m = out
	return nil
}

// SyncState is one sync_states row, decoded: what a consumer keeps per user and producer.
type SyncState struct {
	SyncStateID int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	UserID      int64
	// StorageIdentityKey and StorageName name the producer.
	StorageIdentityKey string
	StorageName        string
	Status             string // the toolbox's sync loop leaves it "unknown"
	Init               bool
	RefNum             string // unique per store
	SyncMap            SyncMap
	// When is the cycle's since: nil until a first cycle completes.
	When     *time.Time
	Satoshis *int64
	// ErrorLocal and ErrorOther are the stored JSON texts, "" for NULL.
	ErrorLocal string
	ErrorOther string
}

// SyncStateFromRow decodes a sync_states row (in SyncStates column order, values as a
// driver returns them or as Table.Normalize leaves them; r is not modified).
func SyncStateFromRow(r wallet.Row) (SyncState, error) {
	t := wallet.SyncStates
	r = slices.Clone(r)
	if err := t.Normalize(r); err != nil {
		return SyncState{}, fmt.Errorf("decode sync state: %w", err)
	}
	get := func(name string) any { return r[t.Col(name)] }
	st := SyncState{
		SyncStateID: get("syncStateId").(int64), CreatedAt: get("created_at").(time.Time), UpdatedAt: get("updated_at").(time.Time),
		UserID: get("userId").(int64), StorageIdentityKey: get("storageIdentityKey").(string), StorageName: get("storageName").(string),
		Status: get("status").(string), Init: get("init").(bool), RefNum: get("refNum").(string),
	}
	if w, ok := get("when").(time.Time); ok {
		st.When = &w
	}
	if n, ok := get("satoshis").(int64); ok {
		st.Satoshis = &n
	}
	st.ErrorLocal, _ = get("errorLocal").(string)
	st.ErrorOther, _ = get("errorOther").(string)
	// An empty text, like "{}", stands for a fresh map (EntitySyncState.fromStorage).
	text := get("syncMap").(string)
	if text == "" {
		text = "{}"
	}
	if err := json.Unmarshal([]byte(text), &st.SyncMap); err != nil {
		return SyncState{}, fmt.Errorf("decode sync state %d: syncMap: %w", st.SyncStateID, err)
	}
	return st, nil
}

// Row encodes the state as a sync_states row (in SyncStates column order).
func (st SyncState) Row() (wallet.Row, error) {
	syncMap, err := json.Marshal(st.SyncMap)
	if err != nil {
		return nil, fmt.Errorf("encode sync state %d: %w", st.SyncStateID, err)
	}
	t := wallet.SyncStates
	r := make(wallet.Row, len(t.Columns))
	set := func(name string, v any) { r[t.Col(name)] = v }
	set("created_at", st.CreatedAt)
	set("updated_at", st.UpdatedAt)
	set("syncStateId", st.SyncStateID)
	set("userId", st.UserID)
	set("storageIdentityKey", st.StorageIdentityKey)
	set("storageName", st.StorageName)
	set("status", st.Status)
	set("init", st.Init)
	set("refNum", st.RefNum)
	set("syncMap", string(syncMap))
	if st.When != nil {
		set("when", *st.When)
	}
	if st.Satoshis != nil {
		set("satoshis", *st.Satoshis)
	}
	if st.ErrorLocal != "" {
		set("errorLocal", st.ErrorLocal)
	}
	if st.ErrorOther != "" {
		set("errorOther", st.ErrorOther)
	}
	return r, nil
}

// Answers reports whether args are the request this state makes next (MakeRequestSyncChunkArgs):
// the same since and, for every offset args carry, the entity's count. A consumer checks it
// in the transaction that merges the chunk, as a compare-and-set: a chunk it merged already
// (a duplicate the network delivered twice, a repeat after a lost answer) or one of a run
// whose state another run moved on answers a state that is gone, and merging it again would
// move the counts past rows never received. It returns an error wrapping
// ErrCheckpointConflict, or nil.
func (st SyncState) Answers(args RequestSyncChunkArgs) error {
	// Compared in milliseconds, the precision since travels in (JavaScript's toISOString).
	if (st.When == nil) != (args.Since == nil) || (st.When != nil && st.When.UnixMilli() != args.Since.UnixMilli()) {
		return fmt.Errorf("chunk asked since %v, the sync state is at %v: %w", args.Since, st.When, wallet.ErrCheckpointConflict)
	}
	for i, o := range args.Offsets {
		var count int64
		if i < len(wallet.Entities) {
			if e := st.SyncMap.Entity(wallet.Entities[i]); e != nil {
				count = e.Count
			}
		}
		if o.Offset != count {
			return fmt.Errorf("chunk asked %s at offset %d, the sync state is at %d: %w", o.Name, o.Offset, count, wallet.ErrCheckpointConflict)
		}
	}
	return nil
}

// MakeRequestSyncChunkArgs builds the next request from the state, as the toolbox's
// EntitySyncState.makeRequestSyncChunkArgs does: since = When, one offset per entity from
// its Count, the producer as from and forStorageIdentityKey (the consumer) as to. A
// maxRoughSize or maxItems of 0 takes the toolbox's default.
func (st SyncState) MakeRequestSyncChunkArgs(forIdentityKey, forStorageIdentityKey string, maxRoughSize, maxItems int64) RequestSyncChunkArgs {
	if maxRoughSize == 0 {
		maxRoughSize = DefaultChunkMaxRoughSize
	}
	if maxItems == 0 {
		maxItems = DefaultChunkMaxItems
	}
	a := RequestSyncChunkArgs{
		FromStorageIdentityKey: st.StorageIdentityKey, ToStorageIdentityKey: forStorageIdentityKey,
		IdentityKey: forIdentityKey, Since: st.When, MaxRoughSize: maxRoughSize, MaxItems: maxItems,
		Offsets: make([]SyncOffset, len(wallet.Entities)),
	}
	for i, t := range wallet.Entities {
		a.Offsets[i] = SyncOffset{Name: t.Entity}
		if e := st.SyncMap.Entity(t); e != nil {
			a.Offsets[i].Offset = e.Count
		}
	}
	return a
}
