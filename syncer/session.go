package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"walletsync/scheduler"
	"walletsync/wallet"
)

// Run moves the rows of the user identityKey from src to dst and returns how it ended.
//
// It checks both chains before anything is written, asks dst for the session's durable
// checkpoint and plans from it: nothing when dst already holds the source's journal
// high-water mark, only the journal's changes when it can, else a full traversal. A run
// that finds an unfinished one continues it where its checkpoint stands, in a new view,
// after catching up from the journal what changed since the old view (see resume); only a
// source without a journal makes it begin again at the first table (Result.Resumed says
// which). It then reads one page at a time from a consistent view of src, outside every
// lock, and commits it with the next checkpoint; only the commit takes a grant
// (Options.Grants). A view that ends under the session is replaced the same way.
//
// Cancelling ctx stops at the next safe point: a read in flight drains, an uncommitted page
// is discarded, a commit already started is waited for, and nothing acknowledged is undone.
// The result is then StateCancelled and the error wraps ctx.Err(). Every other failure is
// StateFailed with the error. The result's checkpoint is the last one the destination
// acknowledged in a way the session accepted: after a refused acknowledgement the
// destination may hold one more page, which the next session reads from Begin.
func Run(ctx context.Context, src wallet.Source, dst wallet.Destination, identityKey string, opts Options) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{State: StateFailed}, fmt.Errorf("sync: %w", err)
	}
	if identityKey == "" {
		return Result{State: StateFailed}, fmt.Errorf("sync: empty identity key: %w", wallet.ErrInvalidArgument)
	}
	s := &session{src: src, dst: dst, opts: opts, start: time.Now(), res: Result{Access: AccessPaged}}
	err = s.run(ctx, identityKey)
	s.res.Elapsed = time.Since(s.start)
	s.res.Checkpoint = s.cp
	switch {
	case err == nil:
		s.res.State = StateCompleted
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		s.res.State = StateCancelled
	default:
		s.res.State = StateFailed
	}
	p := s.progress(s.res.State, "")
	if err != nil && s.res.State == StateFailed {
		p.Err = err.Error()
	}
	_ = s.emit(p) // the terminal report: the session has ended, its error cannot stop it
	if err != nil {
		return s.res, fmt.Errorf("sync %s: %w", s.key, err)
	}
	return s.res, nil
}

// session is one run of Run. It is not concurrent: one page is in flight at a time.
type session struct {
	src   wallet.Source
	dst   wallet.Destination
	opts  Options
	start time.Time
	key   wallet.SessionKey
	chain wallet.Chain
	res   Result
	cp    wallet.Checkpoint // the last durable checkpoint
	view  wallet.View
	held  *scheduler.Grant // the whole-run grant of exclusive access, if any
}

// plan is what a run reads: a catch-up, when it resumes an unfinished run in a newer view,
// then the traversal proper from (table, cursor) to the end of the last table.
type plan struct {
	mode      wallet.SyncMode
	since     int64 // incremental: changes above this journal sequence
	highWater int64 // the journal sequence of the view
	table     int   // where to start
	cursor    wallet.Cursor
	catchUp   []leg
	// base is the checkpoint resumed; catch-up pages keep its position.
	base wallet.Checkpoint
}

// leg is one stretch of a catch-up: the changes above since in tables first..last, from
// cursor in the first.
type leg struct {
	first, last int
	cursor      wallet.Cursor
	since       int64
	// advance: each page of this leg moves the checkpoint's catch-up mark to its end, since
	// everything before it then holds the view. A leg that re-reads what lies before the
	// mark moves it only with its last page, which brings the whole stretch before the mark
	// to the view.
	advance bool
}

func (s *session) run(ctx context.Context, identityKey string) error {
	srcSettings, srcCaps, err := s.src.Describe(ctx)
	if err != nil {
		return fmt.Errorf("describe source: %w", err)
	}
	s.res.Resumable = srcCaps.Journal
	s.key = wallet.SessionKey{SourceStorage: srcSettings.StorageIdentityKey, IdentityKey: identityKey}
	dst, err := s.dst.Begin(ctx, s.key)
	s.res.Requests++
	if err != nil {
		return fmt.Errorf("begin at destination: %w", err)
	}
	if err := wallet.CheckSameChain(srcSettings.Chain, dst.Settings.Chain); err != nil {
		return err
	}
	s.chain, s.cp = srcSettings.Chain, dst.Checkpoint

	if !srcCaps.Snapshots {
		// Without consistent views a copy is only safe under one grant for its whole length.
		s.res.Access = AccessExclusive
		if s.opts.Grants != nil {
			if s.held, err = s.opts.Grants.Acquire(ctx, scheduler.Background, scheduler.Write); err != nil {
				return fmt.Errorf("acquire exclusive access: %w", err)
			}
			defer s.opts.Grants.Release(s.held)
		}
	}
	defer func() {
		if s.view != nil {
			s.view.Close()
		}
	}()

	for restarts := 0; ; restarts++ {
		if s.view, err = s.src.OpenView(ctx, s.opts.SnapshotLifetime); err != nil {
			return fmt.Errorf("open source view: %w", err)
		}
		p, resumed := s.plan(srcCaps)
		if restarts == 0 {
			s.res.Resumed = resumed
		}
		if p.mode == "" {
			s.res.Kind = KindUnchanged
			return nil
		}
		s.res.Kind = KindFull
		if p.mode == wallet.ModeIncremental {
			s.res.Kind = KindIncremental
		}
		err = s.traverse(ctx, p)
		if !errors.Is(err, wallet.ErrSnapshotExpired) && !errors.Is(err, wallet.ErrSnapshotClosed) || ctx.Err() != nil || restarts == maxViewRestarts {
			return err
		}
		// The view ended under the session. A new view continues from the durable
		// checkpoint exactly as a new process would (see resume).
		s.view.Close()
		s.view = nil
	}
}

// plan decides what the run reads from the durable checkpoint and the new view, and how it
// continues an unfinished run (empty when there is none). It returns a plan with an empty
// mode when there is nothing to do.
func (s *session) plan(caps wallet.Capabilities) (plan, Resume) {
	cp := s.cp
	highWater, covered := s.view.Journal(cp.HighWater)
	full := plan{mode: wallet.ModeFull, highWater: highWater}
	switch {
	case cp.Seq == 0:
		return full, ""
	case cp.Done && caps.Journal && covered && highWater == cp.HighWater:
		return plan{}, "" // unchanged since the last run
	case cp.Done && caps.Journal && covered:
		return plan{mode: wallet.ModeIncremental, since: cp.HighWater, highWater: highWater}, ""
	case cp.Done:
		return full, ""
	}
	if caps.Journal {
		if p, ok := s.resume(cp, highWater); ok {
			return p, ResumeCheckpoint
		}
	}
	return full, ResumeFirstTable
}

// resume plans the continuation of the unfinished run whose durable checkpoint is cp, in
// the current view, whose journal high-water mark is highWater.
//
// The destination holds, for the tables before cp.Table and the rows of cp.Table up to
// cp.Cursor, the source as of cp.HighWater, and before the catch-up mark (see
// wallet.Checkpoint) as of the newer cp.CatchUpHighWater; after cp.Cursor it holds what
// the run's mode promises (in ModeIncremental, the source as of cp.Since). The new view is
// newer, so the run catches up first: it reads the changes above cp.CatchUpHighWater in
// the tables up to the mark, then the changes above cp.HighWater from the mark up to
// cp.Table inclusive, and only then continues the traversal at cp.Table after the cursor's
// key. The order is what keeps references whole: SyncOrder puts every table after the
// tables it refers to, a row read from the new view may refer to a row that appeared after
// the old view (an output of a transaction created in between), and the catch-up has put
// every such row of an earlier table at the destination before the traversal reads its
// first row of a later one. The catch-up reads cp.Table's changed rows past the cursor too,
// which the traversal then reads again: a few changed rows, never a table.
//
// A kill during the catch-up leaves it resumable in turn: each page read from the mark on
// moves the mark to where the page ends, with this view's high-water mark, so the next run
// re-reads before the mark only what changed since this view, and continues from the mark.
// That re-read moves the mark's high-water mark only with its last page, so a source that
// changes faster between kills than one attempt can read those changes never catches up;
// no sync could.
//
// It reports false when the journal cannot prove what changed since the checkpoint (it
// was pruned past it, or reinstalled after a toolbox rebuild) or the view cannot read a
// cursor; the run then begins again at the first table.
func (s *session) resume(cp wallet.Checkpoint, highWater int64) (plan, bool) {
	for _, since := range journalNeeds(cp) {
		if _, ok := s.view.Journal(since); !ok {
			return plan{}, false
		}
	}
	if cp.Table < 0 || cp.Table >= len(wallet.SyncOrder) || cp.CatchUpTable < 0 || cp.CatchUpTable > cp.Table {
		return plan{}, false
	}
	cursor, err := s.view.Resume(wallet.SyncOrder[cp.Table].Name, cp.Cursor)
	if err != nil {
		return plan{}, false
	}
	p := plan{mode: cp.Mode, since: cp.Since, highWater: highWater, table: cp.Table, cursor: cursor, base: cp}
	if highWater == cp.HighWater {
		return p, true // nothing changed since the checkpoint's view
	}
	mark := leg{last: cp.Table, since: cp.HighWater, advance: true}
	if cp.CatchUpHighWater > 0 {
		if mark.cursor, err = s.view.Resume(wallet.SyncOrder[cp.CatchUpTable].Name, cp.CatchUpCursor); err != nil {
			return plan{}, false
		}
		mark.first = cp.CatchUpTable
		if highWater > cp.CatchUpHighWater {
			p.catchUp = append(p.catchUp, leg{last: cp.CatchUpTable, since: cp.CatchUpHighWater})
		}
	}
	p.catchUp = append(p.catchUp, mark)
	return p, true
}

// journalNeeds returns the journal sequences above which the next run of cp's session reads
// changes: a finished run's high-water mark, or for an unfinished one every mark its resume
// catches up from (see resume).
func journalNeeds(cp wallet.Checkpoint) []int64 {
	needed := []int64{cp.HighWater}
	if cp.Done {
		return needed
	}
	if cp.Mode == wallet.ModeIncremental {
		needed = append(needed, cp.Since)
	}
	if cp.CatchUpHighWater > 0 {
		needed = append(needed, cp.CatchUpHighWater)
	}
	return needed
}

// JournalNeed returns the journal sequence through which a source may prune its change
// journal and still let the next run of the session whose durable checkpoint is cp read
// only what changed (incremental, or resumed at its checkpoint): the lowest sequence that
// run reads changes above. ok is false for a destination that holds nothing of the
// session (Seq 0), whose next run traverses everything whatever the journal holds. Pruning
// further only costs that destination one full traversal: the run finds its checkpoint
// no longer covered (wallet.View.Journal) and starts again at the first table.
func JournalNeed(cp wallet.Checkpoint) (seq int64, ok bool) {
	if cp.Seq == 0 {
		return 0, false
	}
	return slices.Min(journalNeeds(cp)), true
}

// stretch is one walk over consecutive tables, in one mode, from a cursor.
type stretch struct {
	first, last int
	cursor      wallet.Cursor
	mode        wallet.SyncMode
	since       int64
	// final: the walk ends the run, so its last page carries the done checkpoint.
	final bool
	// checkpoint is what a page of table pos that ends at next commits with (Seq aside);
	// end is true for the stretch's last page.
	checkpoint func(pos int, next wallet.Cursor, end bool) wallet.Checkpoint
}

// traverse runs p: its catch-up legs, then the traversal to the end of the last table.
func (s *session) traverse(ctx context.Context, p plan) error {
	for _, l := range p.catchUp {
		err := s.walk(ctx, stretch{first: l.first, last: l.last, cursor: l.cursor, mode: wallet.ModeIncremental, since: l.since,
			checkpoint: func(pos int, next wallet.Cursor, end bool) wallet.Checkpoint {
				cp := p.base
				cp.Done, cp.UpdatedAt = false, time.Time{}
				switch {
				case l.advance:
					cp.CatchUpTable, cp.CatchUpCursor, cp.CatchUpHighWater = pos, next, p.highWater
				case end:
					cp.CatchUpHighWater = p.highWater
				}
				return cp
			}})
		if err != nil {
			return err
		}
	}
	return s.walk(ctx, stretch{first: p.table, last: len(wallet.SyncOrder) - 1, cursor: p.cursor, mode: p.mode, since: p.since, final: true,
		checkpoint: func(pos int, next wallet.Cursor, end bool) wallet.Checkpoint {
			return wallet.Checkpoint{Session: s.key, Mode: p.mode, Since: p.since, HighWater: p.highWater,
				Table: pos, Cursor: next, View: s.view.ID(), Done: end}
		}})
}

// walk reads and commits the pages of st's tables, from st.cursor in the first.
func (s *session) walk(ctx context.Context, st stretch) error {
	for pos, cursor := st.first, st.cursor; pos <= st.last; {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := wallet.SyncOrder[pos]
		var tm Timings
		if err := s.emit(s.progress(StateReading, t.Name)); err != nil {
			return err
		}
		began := time.Now()
		page, err := s.readPage(ctx, t, cursor, st.mode, st.since)
		tm.Read = time.Since(began)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				// The cancel cut the read short: the view ends with the context it was opened
				// under (ErrSnapshotClosed) or the query is interrupted. That is the cancel.
				err = fmt.Errorf("%w: %w", cerr, err)
			}
			return err
		}
		end := pos == st.last && page.Done
		done := st.final && end
		if len(page.Rows) == 0 && !done {
			if !page.Done {
				return fmt.Errorf("%s: empty page that is not the table's last: %w", t.Name, wallet.ErrNoProgress)
			}
			pos, cursor = pos+1, "" // nothing to commit for this table
			continue
		}

		began = time.Now()
		pr := s.progress(StatePreparing, t.Name)
		pr.PageRows, pr.PageBytes = len(page.Rows), page.Bytes
		if err := s.emit(pr); err != nil {
			return err
		}
		cp := st.checkpoint(pos, page.Next, end)
		cp.Session, cp.Seq = s.key, s.cp.Seq+1
		b := wallet.Batch{Chain: s.chain, Expect: s.cp.Seq, Active: s.opts.Active, Mirror: s.opts.Mirror, Page: page, Checkpoint: cp}
		tm.Prepare = time.Since(began)

		pr.State = StateCommitting
		if err := s.emit(pr); err != nil {
			return err
		}
		ack, wait, took, err := s.commit(ctx, b)
		tm.QueueWait, tm.Commit = wait, took
		if err != nil {
			return err
		}
		s.cp = ack.Checkpoint
		s.res.Pages++
		if !st.final {
			s.res.CatchUpPages++
		}
		s.res.Rows += int64(len(page.Rows))
		s.res.Bytes += page.Bytes
		s.res.Inserts += ack.Inserts
		s.res.Updates += ack.Updates
		if s.opts.Budget != nil {
			s.opts.Budget.Observe(t.Name, len(page.Rows), page.Bytes, took)
		}
		pr = s.progress(StateCommitted, t.Name)
		pr.PageRows, pr.PageBytes, pr.Timings = len(page.Rows), page.Bytes, tm
		if err := s.emit(pr); err != nil {
			return err
		}
		if page.Done {
			pos, cursor = pos+1, ""
		} else {
			cursor = page.Next
		}
	}
	return nil
}

// readPage reads the next page of t; a first row too large for the page's budget is read
// alone, up to the frame ceiling, and a row above it fails the session without advancing.
func (s *session) readPage(ctx context.Context, t *wallet.Table, cursor wallet.Cursor, mode wallet.SyncMode, since int64) (wallet.Page, error) {
	limits := wallet.Limits{Rows: s.opts.MaxRows, Bytes: s.opts.MaxBytes}
	if s.opts.Bulk && mode == wallet.ModeFull {
		limits.Bytes = max(limits.Bytes, BulkMaxBytes)
	}
	if s.opts.Budget != nil {
		limits = s.opts.Budget.Next(t.Name, limits)
	}
	req := wallet.PageRequest{Table: t.Name, IdentityKey: s.key.IdentityKey, After: cursor, Limits: limits,
		Incremental: mode == wallet.ModeIncremental, Since: since}
	page, err := s.view.ReadPage(ctx, req)
	var big *wallet.RowTooLargeError
	if errors.As(err, &big) && big.Charge <= wallet.MaxFrameBytes {
		req.Limits = wallet.Limits{Rows: 1, Bytes: big.Charge}
		page, err = s.view.ReadPage(ctx, req)
	}
	if errors.As(err, &big) {
		return page, fmt.Errorf("a %s row is larger than the %d-byte frame ceiling: %w", t.Name, wallet.MaxFrameBytes, err)
	}
	return page, err
}

// commit sends one batch and returns its acknowledgement, the time spent waiting for a
// grant and the time the commit took. The commit runs under a context that ignores
// cancellation: once started it is waited for. When its outcome is unknown (an error that
// may have lost the acknowledgement) the destination's durable checkpoint decides: the batch
// landed, or it is sent again, a bounded number of times with backoff.
func (s *session) commit(ctx context.Context, b wallet.Batch) (wallet.Ack, time.Duration, time.Duration, error) {
	var wait, took time.Duration
	backoff := s.opts.Backoff
	for attempt := 0; ; attempt++ {
		grant, w, err := s.grant(ctx)
		wait += w
		if err != nil {
			return wallet.Ack{}, wait, took, err
		}
		began := time.Now()
		ack, err := s.dst.Commit(context.WithoutCancel(ctx), b)
		took += time.Since(began)
		s.res.Requests++
		if grant != nil {
			s.opts.Grants.Release(grant)
		}
		if err == nil {
			if err := ack.Match(b); err != nil {
				return ack, wait, took, err
			}
			return ack, wait, took, nil
		}
		if permanent(err) {
			return ack, wait, took, err
		}
		durable, cerr := s.dst.Checkpoint(context.WithoutCancel(ctx), s.key)
		s.res.Requests++
		if cerr == nil {
			switch {
			case durable.Seq == b.Checkpoint.Seq && durable.View == b.Checkpoint.View && durable.Cursor == b.Checkpoint.Cursor && durable.Table == b.Checkpoint.Table:
				return wallet.Ack{Checkpoint: durable, Duplicate: true}, wait, took, nil // it landed; its acknowledgement was lost
			case durable.Seq != b.Expect:
				return wallet.Ack{}, wait, took, fmt.Errorf("after a failed commit the destination holds sequence %d, not %d: %w", durable.Seq, b.Expect, wallet.ErrCheckpointConflict)
			}
		}
		if attempt >= s.opts.Retries || ctx.Err() != nil {
			return wallet.Ack{}, wait, took, fmt.Errorf("commit %s page %d: %w", b.Page.Table, b.Checkpoint.Seq, errors.Join(err, ctx.Err()))
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return wallet.Ack{}, wait, took, ctx.Err()
		}
		backoff *= 2
	}
}

// grant takes a background write grant for one commit, when the session has an access
// queue and does not already hold the whole store.
func (s *session) grant(ctx context.Context) (*scheduler.Grant, time.Duration, error) {
	if s.held != nil {
		return nil, 0, nil
	}
	return acquireWrite(ctx, s.opts.Grants)
}

// permanent reports errors that a retry cannot fix.
func permanent(err error) bool {
	for _, e := range []error{wallet.ErrInvalidArgument, wallet.ErrWrongChain, wallet.ErrCheckpointConflict,
		wallet.ErrDanglingReference, wallet.ErrCorrupt, wallet.ErrReadOnly, wallet.ErrDiskFull, wallet.ErrNotFound,
		wallet.ErrStaleSession, wallet.ErrUnknownSchema, wallet.ErrSchemaTooNew} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *session) progress(state State, table wallet.TableName) Progress {
	return Progress{State: state, Kind: s.res.Kind, Table: table, Counters: s.res.Counters, Checkpoint: s.cp}
}

// emit reports a state change. Sessions hold no lock here, so a callback may block or call
// back into the agent freely.
func (s *session) emit(p Progress) error {
	if s.opts.hook != nil {
		s.opts.hook(p)
	}
	if s.opts.Progress == nil {
		return nil
	}
	if err := s.opts.Progress(p); err != nil {
		return fmt.Errorf("progress callback: %w", err)
	}
	return nil
}
