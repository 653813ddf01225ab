package scheduler

import (
	"fmt"
	"math"
	"time"

	"walletsync/wallet"
)

// Page sizes of the adaptive budget (DESIGN.md, "Adaptive page budget").
const (
	// startRows is the first page of a table the budget knows nothing about.
	startRows = 64
	// proofMaxRows caps proven_txs and proven_tx_reqs pages: their rows carry raw
	// transactions and merkle paths, kilobytes to megabytes each. Other tables are capped at
	// wallet.MaxPageRows.
	proofMaxRows = 128
	// probeAfter is how many pages in a row a table may stay at the 1-row floor before the
	// budget tries 2 rows. At the floor every page has the same size, so the model cannot
	// tell fixed from per-row cost and would never notice that rows got cheaper; a probe
	// every 9th page costs at most one page of twice the floor's cost in 9.
	probeAfter = 8
	// margin: a page that cost more than 1.25x the most it was planned to cost is expensive
	// and shrinks the next page at once; one that cost more than 1.25x the fit's prediction
	// is a surprise (see learn). 25% sits above the jitter of a steady commit (fsync times
	// vary by some 10%), so jitter triggers neither and the budget does not oscillate, and
	// well below a real spike (2x and more).
	margin = 1.25
	// ridge is the weight, in pages, that a refit gives to the previous fit. See refit.
	ridge = 0.1
)

// BudgetOptions tune a Budget. Zero fields take the defaults; NewBudget refuses others out of
// range.
type BudgetOptions struct {
	// Target is the commit time a page aims for; default 20 ms. A foreground request waits
	// for at most one background commit, so this is its worst added latency.
	Target time.Duration
	// Window is how many recent pages of a table the cost model is fitted over; default 16,
	// at least 2 (a line needs two points). At 20 ms a page, 16 pages are a third of a
	// second of history: long enough to hold the whole 2x ramp from 64 to 1,000 rows (five
	// pages) with room to spare, short enough that a slower disk or link is fully learnt
	// within a second.
	Window int
}

func (o BudgetOptions) withDefaults() BudgetOptions {
	if o.Target == 0 {
		o.Target = 20 * time.Millisecond
	}
	if o.Window == 0 {
		o.Window = 16
	}
	return o
}

// Budget is the adaptive page budget of one page session: it tells the session how many rows
// and bytes the next page of a table may carry, so that committing the page takes about the
// target time. It keeps a cost model per table; a table seen again continues from its own
// history, a table first seen starts at 64 rows.
//
// The model is cost = fixed + perRow x rows + perByte x bytes. The fixed part (query, round
// trip, commit) is paid once per page whatever its size, so it is fitted separately rather
// than divided among the rows. The toolbox's old rule floor(records * 5000 / elapsedMs) did
// divide it: with 15 ms of fixed latency every page looks like 15 ms of row cost, and pages
// collapse towards one row, making the sync slower still. Here the rows may spend what the
// fixed part leaves of the target; when the fixed part takes more than half the target the
// rows still get half of it, because shrinking a page cannot make its fixed part cheaper,
// only the sync longer: with a cheap per-row cost the pages grow to the cap, and a commit
// costs at most the fixed part plus half the target.
//
// A Budget belongs to one page session, which has one page in flight: it is not safe for
// concurrent use. It holds no resources.
type Budget struct {
	target float64 // seconds
	window int
	tables map[wallet.TableName]*tableBudget
}

// NewBudget returns a budget that knows no table yet. A negative Target, or a Window that is
// negative or 1, is refused with an error wrapping wallet.ErrInvalidArgument.
func NewBudget(opts BudgetOptions) (*Budget, error) {
	opts = opts.withDefaults()
	if opts.Target < 0 || opts.Window < 2 {
		return nil, fmt.Errorf("new budget: target %v, window %d: %w", opts.Target, opts.Window, wallet.ErrInvalidArgument)
	}
	return &Budget{target: opts.Target.Seconds(), window: opts.Window, tables: make(map[wallet.TableName]*tableBudget)}, nil
}

// Next returns the limits for the next page of table. Asking again before Observe (a page
// retried) returns the same limits. They never exceed the caller's limits
// (zero fields of caller mean wallet's defaults, as everywhere), so the caller's row and byte
// limits always win; within them the row limit starts at 64 for a table first seen (the
// second page is twice or half the first, to learn the cost split), grows at most 2x from the
// previous page's, never exceeds 128 for proof tables or wallet.MaxPageRows for the others,
// and never goes below 1. A row larger than the byte limit
// is the page session's one-row case, as with any byte limit.
func (b *Budget) Next(table wallet.TableName, caller wallet.Limits) wallet.Limits {
	t := b.state(table)
	caller = caller.WithDefaults()
	plan := t.plan(b.target)
	l := wallet.Limits{Rows: min(plan.Rows, caller.Rows), Bytes: min(plan.Bytes, caller.Bytes)}
	t.inFlight = l.Rows
	return l
}

// Observe records a finished page of table: its rows, its byte charge and its cost, the time
// from the start of its commit (or round trip) to the acknowledgement, measured on a
// monotonic clock. A page that cost well over its plan shrinks the next page of the table at
// once. Negative values are a programming error and panic.
func (b *Budget) Observe(table wallet.TableName, rows int, bytes int64, cost time.Duration) {
	if rows < 0 || bytes < 0 || cost < 0 {
		panic(fmt.Sprintf("scheduler: observe %s page with rows %d, bytes %d, cost %v", table, rows, bytes, cost))
	}
	t := b.state(table)
	p := pageCost{rows: float64(rows), bytes: float64(bytes), cost: cost.Seconds()}
	t.learn(p, b.window)

	// An expensive page is scaled down by how far its row part overshot the share it was
	// allowed: one 3x spike at 900 rows makes the next page about 300 rows. The check uses
	// the latest fit, so that a page whose cost the fit explains as fixed cost (a slow link
	// seen for the first time) does not count as expensive; a table's first page had no plan
	// to overshoot, and a 1-row page cannot shrink.
	t.shrink = wallet.Limits{}
	share := t.model.share(b.target)
	if len(t.pages) > 1 && rows > 1 && p.cost > margin*(t.model.fixed+share) {
		f := share / (p.cost - t.model.fixed)
		t.shrink = wallet.Limits{Rows: max(1, int(p.rows*f)), Bytes: wallet.MaxPageBytes}
		if bytes > 0 {
			t.shrink.Bytes = max(1, int64(p.bytes*f))
		}
	}
	t.lastRows = t.inFlight
	if t.lastRows == 1 {
		t.floorPages++
	} else {
		t.floorPages = 0
	}
}

func (b *Budget) state(table wallet.TableName) *tableBudget {
	t, ok := b.tables[table]
	if !ok {
		// An unknown name is budgeted like an ordinary table; the reader refuses it anyway.
		t = &tableBudget{maxRows: wallet.MaxPageRows}
		if def, err := wallet.LookupTable(table); err == nil && def.IsProof() {
			t.maxRows = proofMaxRows
		}
		b.tables[table] = t
	}
	return t
}

// pageCost is one observed page, in rows, bytes and seconds.
type pageCost struct{ rows, bytes, cost float64 }

// costModel is a fitted page cost, in seconds, seconds per row and seconds per byte.
type costModel struct{ fixed, perRow, perByte float64 }

func (m costModel) cost(p pageCost) float64 {
	return m.fixed + m.perRow*p.rows + m.perByte*p.bytes
}

// share is the part of the target that a page's rows may spend: what the fixed part leaves,
// but never less than half the target (see Budget).
func (m costModel) share(target float64) float64 { return max(target-m.fixed, target/2) }

// tableBudget is the budget's state for one table.
type tableBudget struct {
	maxRows    int
	pages      []pageCost // the last Window pages, a ring
	next       int        // where the next page goes once pages is full
	model      costModel
	held       *pageCost     // a surprising page kept out of the fit until the next page
	inFlight   int           // the row limit the last Next handed out
	lastRows   int           // the row limit of the last observed page; 0 before the first
	shrink     wallet.Limits // ceilings for the page after an expensive one; zero otherwise
	floorPages int           // observed pages in a row limited to 1 row
}

// learn adds a page to the window and refits. A page that a full window's fit did not
// expect (cost above margin x prediction) is held back for one page instead, because one
// such page is either a spike or the first page of a new regime, and the next page tells
// which:
//   - a spike (an fsync stall, a retransmit) is dropped. Kept, it would bend the fit for a
//     whole window: after a 3x spike at 450 rows the fit would call for ever smaller pages
//     while the spike gained weight, then jump back when it aged out.
//   - a new regime (the disk got 10x slower) is confirmed when the next page surprises the
//     same way; then the older pages are forgotten. Kept, 15 pages of the old regime would
//     outvote the new one and the budget would swing between too large and shrunk for a
//     whole window.
//
// Pages cheaper than expected are never held: they only make the next pages smaller than
// they could be until the window catches up.
func (t *tableBudget) learn(p pageCost, window int) {
	surprise := len(t.pages) == window && p.cost > margin*t.model.cost(p)
	if t.held != nil {
		if surprise {
			t.pages, t.next = t.pages[:0], 0
			t.add(*t.held, window)
			surprise = false
		}
		t.held = nil
	}
	if surprise {
		t.held = &p
		return
	}
	t.add(p, window)
	t.refit()
}

func (t *tableBudget) add(p pageCost, window int) {
	if len(t.pages) < window {
		t.pages = append(t.pages, p)
		return
	}
	t.pages[t.next] = p
	t.next = (t.next + 1) % window
}

// meanRowBytes is the average byte charge of a row over the window, 0 before any row.
func (t *tableBudget) meanRowBytes() float64 {
	var rows, bytes float64
	for _, p := range t.pages {
		rows += p.rows
		bytes += p.bytes
	}
	if rows == 0 {
		return 0
	}
	return bytes / rows
}

// plan returns the table's own limits for its next page, before the caller's. It changes
// nothing: only observed pages move the budget.
func (t *tableBudget) plan(target float64) wallet.Limits {
	if t.lastRows == 0 {
		return wallet.Limits{Rows: startRows, Bytes: wallet.MaxPageBytes}
	}
	share := t.model.share(target)
	rowBytes := t.meanRowBytes()
	rows := float64(t.maxRows)
	if perRow := t.model.perRow + t.model.perByte*rowBytes; perRow > 0 {
		rows = share / perRow
	}
	bytes := float64(wallet.MaxPageBytes)
	if t.model.perByte > 0 {
		bytes = share / t.model.perByte
	}
	if t.shrink.Rows > 0 {
		rows = min(rows, float64(t.shrink.Rows))
		bytes = min(bytes, float64(t.shrink.Bytes))
	}
	n := max(1, int(min(rows, float64(2*t.lastRows), float64(t.maxRows))))
	if len(t.pages) == 1 {
		// One page cannot tell fixed from per-row cost: any fit of it guesses. The second
		// page is an experiment instead, a different size in the safe direction: twice the
		// first if it met the target, half if not. Guessing would take 200 ms of fixed
		// latency for 3 ms a row and send 4-row pages; halving sends 32 and learns.
		n = max(1, t.lastRows/2)
		if t.pages[0].cost <= target {
			n = min(2*t.lastRows, t.maxRows)
		}
	}
	if n == 1 && t.floorPages >= probeAfter {
		n = 2 // the probe; observing it restarts floorPages
	}
	// The byte limit guards against unusually large rows, the row limit against many small
	// ones: a page of average rows always reaches its row limit. (The model's limits already
	// agree on this; the floor is for the probe, which overrides the model.)
	return wallet.Limits{Rows: n, Bytes: int64(min(max(bytes, math.Ceil(float64(n)*rowBytes), 1), wallet.MaxPageBytes))}
}

// refit fits the model to the window by least squares, pulled towards the previous fit
// (ridge regression with the previous fit as prior, weight ridge = 0.1 page).
//
// Why a prior at all: pages of one size cannot separate fixed from per-row cost, and once the
// budget has settled most pages have nearly the same size. Plain least squares would then
// split the cost at random, by noise; the prior keeps the last good split in every direction
// the window says nothing about. A settled budget is not hurt by keeping an old split: at its
// operating point the fit passes through the observed cost, so any split gives the same page
// size there.
//
// Why so light a prior: it must give way as soon as sizes differ. On the ramp's first two
// pages (64 and 128 rows) the size spread is worth 0.22 pages in the scaled units below, so
// a prior of 0.1 lets the data decide about 70% of the split at once (a prior of 1 page
// would let it decide 18%, and with 15 ms of fixed cost the budget would crawl up from 128
// rows for several pages instead of doubling).
//
// Rows and bytes are scaled by their window means before fitting, so that the prior's weight
// means the same for 1-row pages and 1,000-row pages: sizes 1 and 2 at the floor are as
// informative as 500 and 1,000, while 895 and 905 (jitter around a settled size) are not,
// and do not let noise pull the split around. Negative coefficients, which noise can produce,
// are cut to zero: no cost shrinks with size.
func (t *tableBudget) refit() {
	if len(t.pages) == 1 {
		// One page cannot be split; plan sizes the second page without the model. Until a
		// second size says otherwise, the page is taken as all fixed cost: that is the prior
		// of the next fit, and the one that cannot shrink pages for a slow link.
		t.model = costModel{fixed: t.pages[0].cost}
		return
	}
	var meanRows, meanBytes float64
	for _, p := range t.pages {
		meanRows += p.rows
		meanBytes += p.bytes
	}
	n := float64(len(t.pages))
	sr, sb := max(meanRows/n, 1), max(meanBytes/n, 1)

	prior := [3]float64{t.model.fixed, t.model.perRow * sr, t.model.perByte * sb}
	var a [3][3]float64
	var v [3]float64
	for i := range 3 {
		a[i][i] = ridge
		v[i] = ridge * prior[i]
	}
	for _, p := range t.pages {
		x := [3]float64{1, p.rows / sr, p.bytes / sb}
		for i := range 3 {
			for j := range 3 {
				a[i][j] += x[i] * x[j]
			}
			v[i] += x[i] * p.cost
		}
	}
	theta := solve3(a, v)
	t.model = costModel{fixed: max(theta[0], 0), perRow: max(theta[1], 0) / sr, perByte: max(theta[2], 0) / sb}
}

// solve3 solves a x = v by Cramer's rule: three unknowns do not justify a general solver, and
// the ridge term makes a positive definite, so its determinant is never zero.
func solve3(a [3][3]float64, v [3]float64) [3]float64 {
	det := det3(a)
	var x [3]float64
	for i := range 3 {
		m := a
		for r := range 3 {
			m[r][i] = v[r]
		}
		x[i] = det3(m) / det
	}
	return x
}

func det3(m [3][3]float64) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}
