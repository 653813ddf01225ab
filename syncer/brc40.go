package syncer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"walletsync/brc40"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// BRC-40 sessions: the toolbox's own sync loop (WalletStorageManager.syncToWriter and
// syncFromReader) between two brc40.ChunkStores, with the page session's progress states,
// cancel and adaptive budget. It is how walletsync pushes a local wallet to a toolbox
// StorageServer and pulls it back, since that server speaks nothing else.

// Chunk session limits and defaults.
const (
	// DefaultChunkItems is the toolbox's maxItems, and the most rows a chunk carries.
	DefaultChunkItems = brc40.DefaultChunkMaxItems
	// DefaultChunkRoughSize is the toolbox's maxRoughSize (rough JSON length of the rows):
	// with the row that crosses it, a chunk stays well inside the StorageServer's 30 MB body
	// limit unless one row is larger than 20 MB, and the consumer refuses a chunk that does
	// not fit (wallet.ErrChunkTooLarge) before anything is sent, after which the session
	// halves the chunk.
	DefaultChunkRoughSize = brc40.DefaultChunkMaxRoughSize
	// DefaultChunkTarget is the time the adaptive budget aims for per chunk (request and
	// merge). A toolbox server's merge is nearly all of it, since it commits each row on its
	// own: about 2 to 5 ms a row on this machine, more when its disk is busy. 10 s keeps the
	// chunks at the 1,000-row cap there (fewer requests than the toolbox's own client, which
	// sends 1,000 rows and reads the state twice per chunk), lets the 64 proofs of 120 KB
	// that open the toolbox fixture (about 5 s) pass without shrinking the label chunks
	// after them, and still bounds a merge on a slow server: a cancel waits for at most
	// one such merge.
	DefaultChunkTarget = 10 * time.Second
	// DefaultSettle is how long after its last save a run distrusts a sync state (see
	// ChunkOptions.Settle): twice the time a chunk's merge aims for.
	DefaultSettle = 2 * DefaultChunkTarget
	// DefaultMaxBackoff caps the delay between retries.
	DefaultMaxBackoff = 4 * time.Second
	// DefaultChunkRetries bounds the retries after the consumer or the producer was
	// unavailable: with DefaultBackoff doubling up to DefaultMaxBackoff, about 30 s.
	DefaultChunkRetries = 10
	// chunkBudgetTable is the name the budget keeps its cost model under: a chunk spans
	// tables, and its cost is one request and one merge whatever they are.
	chunkBudgetTable = wallet.TableName("brc40 chunk")
)

// ChunkOptions tune RunChunks. The zero value is the defaults, except Active, which the
// caller must choose.
type ChunkOptions struct {
	// Active says whose users.activeStorage survives: wallet.KeepSourceActive for a push
	// (the consumer learns the producer's active store), wallet.KeepDestinationActive for a
	// pull (the toolbox's syncFromReader: the consumer's active store stays).
	Active wallet.ActivePolicy
	// MaxItems bounds a chunk's rows: 1..DefaultChunkItems (default DefaultChunkItems).
	MaxItems int64
	// MaxRoughSize bounds a chunk's rough JSON size, the row that crosses it included:
	// 1..wallet.MaxPageBytes (default DefaultChunkRoughSize).
	MaxRoughSize int64
	// Budget, when set, sizes chunks adaptively within MaxItems and MaxRoughSize, from the
	// cost of each chunk's request and merge (fixed cost per chunk against cost per row).
	Budget *scheduler.Budget
	// Grants, when set, is the access-queue session that every merge takes a background
	// write grant from: set it when the consumer is the local wallet.
	Grants *scheduler.Session
	// Retries, Backoff and MaxBackoff bound the retries after a store was unavailable
	// (wallet.ErrUnavailable): defaults DefaultChunkRetries, DefaultBackoff,
	// DefaultMaxBackoff; each retry doubles the delay up to MaxBackoff. -1 Retries: none.
	Retries    int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// GiveUp, when set, bounds how long a store may stay unavailable: the session ends with
	// an *UnreachableError once its failures in a row have lasted GiveUp (from the first
	// one; a success starts the count again), the last wait cut to end there. With GiveUp
	// set, Retries 0 sets no count: the time alone decides.
	GiveUp time.Duration
	// OnRetry, when set, is called before each wait after a store was unavailable, on the
	// session's goroutine, so that a front end can say the store is not answering (rather
	// than show the step it was on).
	OnRetry func(Retry)
	// Settle guards a resumed run against its predecessor's last chunk: a server keeps
	// merging a chunk after the process that sent it was killed, and a run that read the
	// state before that chunk landed would send it again, which the server counts twice
	// (its offsets then skip rows). So a run that finds the state saved less than Settle ago
	// (by its updated_at, the server's clock, against this one's) watches it until it moves
	// (that chunk landed) or Settle has passed since the save (none was in flight).
	// Default DefaultSettle; -1: never (a consumer whose merge dies with the process, such
	// as the local wallet). A server clock more than Settle behind this one's defeats it.
	Settle time.Duration
	// Total, when known, is the number of rows the run will move, for progress and ETA.
	Total int64
	// Progress, when set, is called at every state change, outside every lock. Returning an
	// error stops the session at the next safe point. The last call reports the session's
	// end (completed, cancelled or failed), and its error is ignored.
	Progress func(Progress) error
}

// Validate returns the error RunChunks would refuse these options with (wrapping
// wallet.ErrInvalidArgument), or nil, without touching any store.
func (o ChunkOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o ChunkOptions) withDefaults() (ChunkOptions, error) {
	if o.MaxItems == 0 {
		o.MaxItems = DefaultChunkItems
	}
	if o.MaxRoughSize == 0 {
		o.MaxRoughSize = DefaultChunkRoughSize
	}
	switch {
	case o.Retries == 0 && o.GiveUp > 0:
		o.Retries = math.MaxInt
	case o.Retries == 0:
		o.Retries = DefaultChunkRetries
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	switch {
	case o.MaxItems < 1 || o.MaxItems > DefaultChunkItems:
		return o, fmt.Errorf("max items %d outside 1..%d: %w", o.MaxItems, DefaultChunkItems, wallet.ErrInvalidArgument)
	case o.MaxRoughSize < 1 || o.MaxRoughSize > wallet.MaxPageBytes:
		return o, fmt.Errorf("max rough size %d outside 1..%d: %w", o.MaxRoughSize, wallet.MaxPageBytes, wallet.ErrInvalidArgument)
	case o.Retries < -1 || o.Backoff < 0 || o.MaxBackoff < 0 || o.Settle < -1 || o.Total < 0 || o.GiveUp < 0:
		return o, fmt.Errorf("negative retries, backoff, give-up, settle or total: %w", wallet.ErrInvalidArgument)
	}
	if o.Retries == -1 {
		o.Retries = 0
	}
	switch o.Active {
	case wallet.KeepSourceActive, wallet.KeepDestinationActive:
	default:
		return o, fmt.Errorf("active storage policy %q: %w", o.Active, wallet.ErrInvalidArgument)
	}
	return o, nil
}

// RunChunks moves the rows of the user identityKey from the producer from to the consumer
// to with BRC-40 chunks, as the toolbox's WalletStorageManager does, and returns how it
// ended.
//
// Before anything is written it reads both stores' settings and refuses two chains
// (wallet.ErrWrongChain), then finds or inserts the user on both (a toolbox server
// refuses an identity its client did not authenticate as: wallet.ErrUnauthorized). The
// active store is then settled as the toolbox settles it:
//
//   - a pull (wallet.KeepDestinationActive) overwrites the incoming user row's
//     activeStorage with the consumer's, as syncFromReader does: a pull never switches the
//     consumer's active store;
//   - a push (wallet.KeepSourceActive) to a consumer whose user names the producer's active
//     store is a plain syncToWriter. A consumer that never took part in a sync (its user is
//     the 1971 row findOrInsertUser made, naming the consumer itself) is a new backup,
//     which the toolbox's WalletStorageManager reports as a conflicting active and resolves
//     with setActive(the current active): it first merges the consumer into the producer
//     (a pull, which keeps the producer's active store), then sets the producer's user row
//     to its own activeStorage with updated_at now, so that the push carries the active
//     store's name to the consumer as the newer row. A consumer that names another active
//     store than the producer's, having synced before, is refused with
//     wallet.ErrNotActive, as the toolbox's updateBackups refuses it (WERR_NOT_ACTIVE):
//     only the person can say which store is active.
//
// The loop then takes one chunk at a time: it reads the consumer's durable sync state for
// the producer (before every chunk, never from its own counters), asks the producer for
// the chunk that state asks for, and hands it to the consumer. While the consumer merges a
// chunk, the producer is already asked for the next one: the request the consumer's state
// will ask for once the merge lands (the same since, each entity's offset moved on by the
// rows the chunk carried, as the consumer moves its counts). That answer is used only when
// the state read after the merge asks exactly for it, and dropped otherwise (a refused or
// lost merge, another writer of the state), so the state advances as without it. One
// request is in flight per store, and each store gets one call at a time.
// Reads (settings, users, states, chunks) are retried when a store is unavailable, with
// capped exponential backoff; a merge is never sent again blindly: after a merge whose
// answer was lost the loop reads the state again, which says whether it landed, and
// produces the next chunk from there. A merge the consumer refuses for its size
// (wallet.ErrChunkTooLarge) was not sent; the loop halves the chunk, down to one row.
// The run ends when the consumer reports a complete chunk (done).
//
// Cancelling ctx stops between chunks; a merge already sent is waited for (it runs under
// a context without cancellation), so a cancel never leaves a merge of unknown outcome.
// The result is then StateCancelled and the error wraps ctx.Err().
func RunChunks(ctx context.Context, from, to brc40.ChunkStore, identityKey string, opts ChunkOptions) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{State: StateFailed}, fmt.Errorf("brc40 sync: %w", err)
	}
	if identityKey == "" {
		return Result{State: StateFailed}, fmt.Errorf("brc40 sync: empty identity key: %w", wallet.ErrInvalidArgument)
	}
	// Resumable: the consumer keeps its state durably, so the next run continues there.
	s := &chunkSession{from: from, to: to, identity: identityKey, opts: opts, start: time.Now(), res: Result{Access: AccessPaged, Resumable: true}}
	err = s.run(ctx)
	s.res.Elapsed = time.Since(s.start)
	switch {
	case err == nil:
		s.res.State = StateCompleted
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		s.res.State = StateCancelled
	default:
		s.res.State = StateFailed
	}
	p := s.progress(s.res.State)
	if err != nil && s.res.State == StateFailed {
		p.Err = err.Error()
	}
	_ = s.emit(p) // the terminal report: the session has ended, its error cannot stop it
	if err != nil {
		return s.res, fmt.Errorf("brc40 sync: %w", err)
	}
	return s.res, nil
}

// chunkSession is one run of RunChunks: its loop goroutine owns every field; a prefetch
// goroutine only calls the producer (see prefetch).
type chunkSession struct {
	from, to     brc40.ChunkStore
	identity     string
	opts         ChunkOptions
	start        time.Time
	res          Result
	fromSettings wallet.Settings
	toSettings   wallet.Settings
	// active, for a pull, is the consumer's activeStorage, which every incoming user row
	// carries.
	active string
	// itemsCap is the most rows a chunk may carry after the consumer refused a larger one.
	itemsCap int64
	// failures counts the store's unavailable answers in a row, since failingSince.
	failures     int
	failingSince time.Time
}

func (s *chunkSession) run(ctx context.Context) error {
	var err error
	if s.fromSettings, err = retry(ctx, s, s.from.MakeAvailable); err != nil {
		return fmt.Errorf("producer settings: %w", err)
	}
	if s.toSettings, err = retry(ctx, s, s.to.MakeAvailable); err != nil {
		return fmt.Errorf("consumer settings: %w", err)
	}
	if err := wallet.CheckSameChain(s.fromSettings.Chain, s.toSettings.Chain); err != nil {
		return err
	}
	if s.fromSettings.StorageIdentityKey == s.toSettings.StorageIdentityKey {
		return fmt.Errorf("producer and consumer are the same store %s: %w", wallet.ShortKey(s.fromSettings.StorageIdentityKey, 16), wallet.ErrInvalidArgument)
	}
	findUser := func(st brc40.ChunkStore) func(context.Context) (brc40.SyncUser, error) {
		return func(ctx context.Context) (brc40.SyncUser, error) { return st.FindOrInsertUser(ctx, s.identity) }
	}
	fromUser, err := retry(ctx, s, findUser(s.from))
	if err != nil {
		return fmt.Errorf("producer user: %w", err)
	}
	toUser, err := retry(ctx, s, findUser(s.to))
	if err != nil {
		return fmt.Errorf("consumer user: %w", err)
	}
	if s.opts.Active == wallet.KeepDestinationActive {
		s.active = toUser.ActiveStorage
	} else if err := s.settleActive(ctx, fromUser, toUser); err != nil {
		return err
	}
	return s.loop(ctx)
}

// userEpoch is the updated_at of a user row that the toolbox's findOrInsertUser made and
// nothing has touched since.
var userEpoch = time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC)

// settleActive makes a push's consumer learn the producer's active store (see RunChunks).
func (s *chunkSession) settleActive(ctx context.Context, fromUser, toUser brc40.SyncUser) error {
	if toUser.ActiveStorage == fromUser.ActiveStorage {
		return nil
	}
	if toUser.ActiveStorage != s.toSettings.StorageIdentityKey || !toUser.UpdatedAt.Equal(userEpoch) {
		return fmt.Errorf("%s names %s as the wallet's active store, %s names %s: choose which store is active first: %w",
			s.toSettings.StorageName, wallet.ShortKey(toUser.ActiveStorage, 16), s.fromSettings.StorageName,
			wallet.ShortKey(fromUser.ActiveStorage, 16), wallet.ErrNotActive)
	}
	// The toolbox's setActive(current active) with the new backup as a conflicting active:
	// merge it into the producer first (it holds nothing but its default rows, so this is
	// two small requests), then make the producer's user row the newer one. The merge is a
	// pull: the producer's active store stays.
	merge := s.opts
	merge.Progress, merge.Total, merge.Budget = nil, 0, nil
	sub := &chunkSession{from: s.to, to: s.from, identity: s.identity, opts: merge, start: time.Now(),
		fromSettings: s.toSettings, toSettings: s.fromSettings, active: fromUser.ActiveStorage}
	err := sub.loop(ctx)
	s.res.Requests += sub.res.Requests
	s.res.Retries += sub.res.Retries
	if err != nil {
		return fmt.Errorf("merge the new backup into %s: %w", s.fromSettings.StorageName, err)
	}
	if err := s.from.SetActive(ctx, s.identity, fromUser.ActiveStorage); err != nil {
		return err
	}
	s.res.Requests++
	return nil
}

// loop runs chunks until the consumer reports a complete one.
func (s *chunkSession) loop(ctx context.Context) error {
	s.itemsCap = s.opts.MaxItems
	state, err := s.readState(ctx)
	if err != nil {
		return err
	}
	if state, err = s.settle(ctx, state); err != nil {
		return err
	}
	s.res.Kind = KindFull
	if state.When != nil {
		s.res.Kind = KindIncremental
	}
	var ahead *prefetch
	defer func() { ahead.discard() }()
	for first := true; ; first = false {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !first {
			if state, err = s.readState(ctx); err != nil {
				return err
			}
		}
		var done bool
		done, ahead, err = s.chunk(ctx, state, ahead)
		if err != nil || done {
			return err
		}
	}
}

// prefetch is the getSyncChunk of the chunk after the one being merged, asked while the
// merge runs: the request the toolbox would send next, since the consumer moves its state
// exactly by the rows it merges (see nextArgs). The loop uses its answer only when the
// state it reads after the merge asks for the same rows; anything else (a refused or lost
// merge, another writer of the state) discards it.
type prefetch struct {
	args   brc40.RequestSyncChunkArgs
	cancel context.CancelFunc
	done   chan struct{} // closed when chunk, err and took are set
	chunk  brc40.SyncChunk
	err    error
	took   time.Duration
}

// startPrefetch asks the producer for args in the background, once: a failure is left to
// the loop, which asks again with its retries.
func (s *chunkSession) startPrefetch(ctx context.Context, args brc40.RequestSyncChunkArgs) *prefetch {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{args: args, cancel: cancel, done: make(chan struct{})}
	s.res.Requests++ // sent, whether its answer is used or not
	go func() {
		defer close(p.done)
		began := time.Now()
		p.chunk, p.err = s.from.GetSyncChunk(ctx, args)
		p.took = time.Since(began)
	}()
	return p
}

// take waits for the prefetched chunk if it answers args, and reports whether it did;
// either way the prefetch is finished afterwards.
func (p *prefetch) take(ctx context.Context, args brc40.RequestSyncChunkArgs) (brc40.SyncChunk, bool) {
	if p == nil {
		return brc40.SyncChunk{}, false
	}
	if !sameRows(p.args, args) {
		p.discard()
		return brc40.SyncChunk{}, false
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.discard()
		return brc40.SyncChunk{}, false
	}
	p.cancel()
	return p.chunk, p.err == nil
}

// discard stops the prefetch and waits for its call to return, so that none outlives the
// session.
func (p *prefetch) discard() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}

// nextArgs is the request that follows args once its chunk is merged: the same since and
// limits, each entity's offset moved on by the rows the chunk carried for it, as the
// consumer's ProcessSyncChunk moves its counts (a complete chunk ends the cycle instead).
func nextArgs(args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) brc40.RequestSyncChunkArgs {
	next := args
	next.Offsets = slices.Clone(args.Offsets)
	for i := range next.Offsets {
		next.Offsets[i].Offset += int64(len(chunk.Rows[wallet.Entities[i].Name]))
	}
	return next
}

// sameRows reports whether two requests ask for the same rows from the same position;
// their limits may differ (a prefetch answers within the limits it was sent with, which
// the loop chose).
func sameRows(a, b brc40.RequestSyncChunkArgs) bool {
	sameSince := (a.Since == nil) == (b.Since == nil) && (a.Since == nil || a.Since.Equal(*b.Since))
	return sameSince && a.IdentityKey == b.IdentityKey && a.FromStorageIdentityKey == b.FromStorageIdentityKey &&
		a.ToStorageIdentityKey == b.ToStorageIdentityKey && slices.Equal(a.Offsets, b.Offsets)
}

// chunk moves one chunk from state's position and reports whether it completed the cycle,
// with the prefetch of the next chunk it started (nil when none). ahead is the previous
// chunk's prefetch, used when it answers state. A merge whose outcome is unknown, or that
// the consumer refused for its size, returns nil and false: the next state read says where
// to go on.
func (s *chunkSession) chunk(ctx context.Context, state brc40.SyncState, ahead *prefetch) (bool, *prefetch, error) {
	var tm Timings
	if err := s.emit(s.progress(StateReading)); err != nil {
		ahead.discard()
		return false, nil, err
	}
	limits := s.limits()
	args := state.MakeRequestSyncChunkArgs(s.identity, s.toSettings.StorageIdentityKey, limits.Bytes, int64(limits.Rows))
	began := time.Now()
	chunk, ok := ahead.take(ctx, args)
	if ok {
		args.MaxItems, args.MaxRoughSize = ahead.args.MaxItems, ahead.args.MaxRoughSize
	} else {
		var err error
		chunk, err = retry(ctx, s, func(ctx context.Context) (brc40.SyncChunk, error) { return s.from.GetSyncChunk(ctx, args) })
		if err != nil {
			return false, nil, fmt.Errorf("get chunk: %w", err)
		}
	}
	// Read is the time the loop waited for the chunk; a prefetch's own time went by under
	// the previous merge.
	tm.Read = time.Since(began)
	cost := tm.Read
	if ok {
		cost = ahead.took
	}

	began = time.Now()
	rows, bytes, err := chunkSize(chunk)
	if err != nil {
		return false, nil, err
	}
	if chunk.User != nil && s.active != "" {
		chunk.User[wallet.Users.Col("activeStorage")] = s.active
	}
	tm.Prepare = time.Since(began)
	pr := s.progress(StatePreparing)
	pr.PageRows, pr.PageBytes, pr.Table = rows, bytes, firstTable(chunk)
	if err := s.emit(pr); err != nil {
		return false, nil, err
	}
	pr.State = StateCommitting
	if err := s.emit(pr); err != nil {
		return false, nil, err
	}

	var next *prefetch
	if !chunk.Complete() {
		n := nextArgs(args, chunk)
		l := s.limits()
		n.MaxItems, n.MaxRoughSize = int64(l.Rows), l.Bytes
		next = s.startPrefetch(ctx, n)
	}
	res, wait, took, err := s.merge(ctx, args, chunk)
	tm.QueueWait, tm.Commit = wait, took
	switch {
	case errors.Is(err, wallet.ErrChunkTooLarge) && rows > 1:
		s.itemsCap = max(1, int64(rows)/2)
		next.discard()
		return false, nil, nil
	case errors.Is(err, wallet.ErrUnavailable):
		// The merge may or may not have landed: the state says which, and whether the
		// prefetch answers it.
		return false, next, s.backoff(ctx, err)
	case err != nil:
		next.discard()
		return false, nil, err
	}
	s.failures = 0
	s.res.Pages++
	s.res.Rows += int64(rows)
	s.res.Bytes += bytes
	s.res.Inserts += res.Inserts
	s.res.Updates += res.Updates
	if s.opts.Budget != nil {
		s.opts.Budget.Observe(chunkBudgetTable, rows, bytes, cost+took)
	}
	pr = s.progress(StateCommitted)
	pr.PageRows, pr.PageBytes, pr.Table, pr.Timings = rows, bytes, firstTable(chunk), tm
	if err := s.emit(pr); err != nil {
		next.discard()
		return false, nil, err
	}
	if res.Done {
		next.discard()
	}
	return res.Done, next, nil
}

// limits are the next chunk's: within MaxItems (and the cap after a refusal) and
// MaxRoughSize, sized by the budget when there is one.
func (s *chunkSession) limits() wallet.Limits {
	limits := wallet.Limits{Rows: int(s.itemsCap), Bytes: s.opts.MaxRoughSize}
	if s.opts.Budget != nil {
		limits = s.opts.Budget.Next(chunkBudgetTable, limits)
	}
	return limits
}

// merge hands one chunk to the consumer, under a write grant when the consumer is the
// local wallet, and waits for it even when ctx is cancelled.
func (s *chunkSession) merge(ctx context.Context, args brc40.RequestSyncChunkArgs, chunk brc40.SyncChunk) (brc40.ProcessSyncChunkResult, time.Duration, time.Duration, error) {
	grant, wait, err := acquireWrite(ctx, s.opts.Grants)
	if err != nil {
		return brc40.ProcessSyncChunkResult{}, wait, 0, err
	}
	began := time.Now()
	res, err := s.to.ProcessSyncChunk(context.WithoutCancel(ctx), args, chunk)
	took := time.Since(began)
	s.res.Requests++
	if grant != nil {
		s.opts.Grants.Release(grant)
	}
	if err != nil {
		return res, wait, took, fmt.Errorf("process chunk: %w", err)
	}
	return res, wait, took, nil
}

// readState reads the consumer's durable state for the producer.
func (s *chunkSession) readState(ctx context.Context) (brc40.SyncState, error) {
	st, err := retry(ctx, s, func(ctx context.Context) (brc40.SyncState, error) {
		return s.to.FindOrInsertSyncState(ctx, s.identity, s.fromSettings.StorageIdentityKey, s.fromSettings.StorageName)
	})
	if err != nil {
		return st, fmt.Errorf("read the consumer's sync state: %w", err)
	}
	return st, nil
}

// settle returns the state once no earlier chunk can still be landing (ChunkOptions.Settle):
// at once when it was not saved within Settle; else as soon as it moves (the one chunk a
// killed run can have left in flight has landed), or once Settle has passed since its save
// with no move. It reads the state about once a second meanwhile.
func (s *chunkSession) settle(ctx context.Context, st brc40.SyncState) (brc40.SyncState, error) {
	if s.opts.Settle < 0 || !st.UpdatedAt.After(st.CreatedAt) {
		return st, nil // never advanced: no chunk of an earlier run landed, none can be landing
	}
	saved := st.UpdatedAt
	for {
		wait := time.Until(saved.Add(s.opts.Settle))
		if wait <= 0 {
			return st, nil
		}
		select {
		case <-time.After(min(wait, time.Second)):
		case <-ctx.Done():
			return st, ctx.Err()
		}
		again, err := s.readState(ctx)
		if err != nil {
			return st, err
		}
		if !again.UpdatedAt.Equal(saved) {
			return again, nil
		}
	}
}

// backoff waits before the next attempt after a store was unavailable: Backoff, doubled
// for each failure in a row, up to MaxBackoff, and never past GiveUp. It returns an
// *UnreachableError wrapping cause once Retries failures in a row are used up or they have
// lasted GiveUp (a success resets both; see retry and chunk).
func (s *chunkSession) backoff(ctx context.Context, cause error) error {
	now := time.Now()
	if s.failures == 0 {
		s.failingSince = now
	}
	s.failures++
	s.res.Retries++
	failing := now.Sub(s.failingSince)
	if s.failures > s.opts.Retries {
		return &UnreachableError{Attempts: s.failures, After: failing, Err: cause}
	}
	if s.opts.GiveUp > 0 && failing >= s.opts.GiveUp {
		return &UnreachableError{Attempts: s.failures, After: s.opts.GiveUp, Err: cause}
	}
	d := min(s.opts.Backoff<<min(s.failures-1, 20), s.opts.MaxBackoff)
	if s.opts.GiveUp > 0 {
		d = min(d, s.opts.GiveUp-failing)
	}
	if s.opts.OnRetry != nil {
		s.opts.OnRetry(Retry{Attempt: s.failures, Wait: d, Failing: failing, Err: cause})
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return errors.Join(cause, ctx.Err())
	}
}

// retry runs a call that may be repeated (a read, a find-or-insert), again while its store
// is unavailable.
func retry[T any](ctx context.Context, s *chunkSession, call func(context.Context) (T, error)) (T, error) {
	for {
		v, err := call(ctx)
		s.res.Requests++
		if err == nil {
			s.failures = 0
			return v, nil
		}
		if !errors.Is(err, wallet.ErrUnavailable) || ctx.Err() != nil {
			return v, err
		}
		if berr := s.backoff(ctx, err); berr != nil {
			return v, berr
		}
	}
}

// chunkSize counts a chunk's rows (the user row aside) and their rough JSON size, the
// measure maxRoughSize bounds.
func chunkSize(c brc40.SyncChunk) (int, int64, error) {
	rows, size := 0, int64(0)
	for _, t := range wallet.Entities {
		for _, r := range c.Rows[t.Name] {
			n, err := brc40.RowJSONSize(t, r)
			if err != nil {
				return 0, 0, fmt.Errorf("%s row %v: %w", t.Name, t.KeyOf(r), err)
			}
			rows++
			size += n
		}
	}
	return rows, size, nil
}

// firstTable names the first table with rows in the chunk, for progress.
func firstTable(c brc40.SyncChunk) wallet.TableName {
	for _, t := range wallet.Entities {
		if len(c.Rows[t.Name]) > 0 {
			return t.Name
		}
	}
	return ""
}

func (s *chunkSession) progress(state State) Progress {
	return Progress{State: state, Kind: s.res.Kind, Counters: s.res.Counters, Total: s.opts.Total}
}

func (s *chunkSession) emit(p Progress) error {
	if s.opts.Progress == nil {
		return nil
	}
	if err := s.opts.Progress(p); err != nil {
		return fmt.Errorf("progress callback: %w", err)
	}
	return nil
}

// acquireWrite takes a background write grant from g for one commit; nil g takes none.
func acquireWrite(ctx context.Context, g *scheduler.Session) (*scheduler.Grant, time.Duration, error) {
	if g == nil {
		return nil, 0, nil
	}
	began := time.Now()
	grant, err := g.Acquire(ctx, scheduler.Background, scheduler.Write)
	wait := time.Since(began)
	if err != nil {
		return nil, wait, fmt.Errorf("wait for the write grant: %w", err)
	}
	if !g.Valid() {
		g.Release(grant)
		return nil, wait, wallet.ErrStaleSession
	}
	return grant, wait, nil
}
