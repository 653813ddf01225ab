package scheduler

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"walletsync/wallet"
)

// simTable is a simulated table behind a simulated destination: every row carries rowBytes,
// and a page costs fixed + perRow x rows + perKiB x KiB, times jitter. Costs are simulated
// durations, never measured ones.
type simTable struct {
	table         wallet.TableName
	rowBytes      int64
	fixed, perRow time.Duration
	perKiB        time.Duration
	jitter        float64                                                    // cost varies by up to ±jitter, from a fixed seed
	costAt        func(page int, rows int, base time.Duration) time.Duration // optional change of regime
	caller        wallet.Limits
	rng           *rand.Rand
}

// pages drives b through n pages of s and returns the row limits it handed out. On every page
// it checks the rules that hold whatever the cost: the limits stay within the caller's and
// within 1..cap, and the row limit at most doubles from one page to the next.
func (s *simTable) pages(t *testing.T, b *Budget, n int) []int {
	t.Helper()
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(1, 2))
	}
	caller := s.caller.WithDefaults()
	maxRows := wallet.MaxPageRows
	if def, _ := wallet.LookupTable(s.table); def.IsProof() {
		maxRows = proofMaxRows
	}
	var limits []int
	for i := range n {
		l := b.Next(s.table, s.caller)
		if l.Rows < 1 || l.Rows > min(caller.Rows, maxRows) || l.Bytes < 1 || l.Bytes > caller.Bytes {
			t.Fatalf("page %d of %s: limits %+v outside caller %+v and 1..%d rows", i, s.table, l, caller, maxRows)
		}
		if len(limits) > 0 && l.Rows > 2*limits[len(limits)-1] {
			t.Fatalf("page %d of %s: %d rows after %d, more than 2x", i, s.table, l.Rows, limits[len(limits)-1])
		}
		limits = append(limits, l.Rows)
		rows := min(l.Rows, max(1, int(l.Bytes/s.rowBytes)))
		bytes := int64(rows) * s.rowBytes
		cost := s.fixed + time.Duration(rows)*s.perRow + time.Duration(float64(s.perKiB)*float64(bytes)/1024)
		if s.costAt != nil {
			cost = s.costAt(i, rows, cost)
		}
		cost = time.Duration(float64(cost) * (1 + s.jitter*(2*s.rng.Float64()-1)))
		b.Observe(s.table, rows, bytes, cost)
	}
	return limits
}

func mustBudget(t *testing.T, opts BudgetOptions) *Budget {
	t.Helper()
	b, err := NewBudget(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wide lets the budget, not the caller, decide: the most rows and bytes a caller may allow.
var wide = wallet.Limits{Rows: wallet.MaxPageRows, Bytes: wallet.MaxPageBytes}

func TestBudget_HighFixedLatencyGrowsToLargePages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fixed  time.Duration
		within int // pages until the cap is reached
	}{
		{"15ms fixed, under the 20ms target", 15 * time.Millisecond, 8},
		// The fixed part alone exceeds the target: shrinking cannot help, growing can.
		{"30ms fixed, over the 20ms target", 30 * time.Millisecond, 10},
		{"200ms fixed, a far-away provider", 200 * time.Millisecond, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: tc.fixed, perRow: 5 * time.Microsecond, caller: wide}
			limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 40)
			for i, n := range limits {
				if n < 16 {
					t.Fatalf("page %d: %d rows: fixed latency taken for per-row cost (limits %v)", i, n, limits)
				}
				if i >= tc.within && n != wallet.MaxPageRows {
					t.Fatalf("page %d: %d rows, want the cap %d from page %d on (limits %v)", i, n, wallet.MaxPageRows, tc.within, limits)
				}
			}
		})
	}
}

func TestBudget_ConvergesToTarget(t *testing.T) {
	// 2 ms fixed + 40 µs a row: the 20 ms target allows (20-2)/0.04 = 450 rows.
	sim := &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 40 * time.Microsecond, caller: wide}
	limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 30)
	for i, n := range limits[6:] {
		if n < 427 || n > 450 {
			t.Fatalf("page %d: %d rows, want 427..450 (limits %v)", i+6, n, limits)
		}
	}
	// A different target moves the operating point: 10 ms allows (10-2)/0.04 = 200 rows.
	sim = &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 40 * time.Microsecond, caller: wide}
	limits = sim.pages(t, mustBudget(t, BudgetOptions{Target: 10 * time.Millisecond}), 30)
	if n := limits[len(limits)-1]; n < 190 || n > 200 {
		t.Fatalf("target 10ms: settled at %d rows, want 190..200 (limits %v)", n, limits)
	}
}

func TestBudget_SteadyCostDoesNotOscillate(t *testing.T) {
	// ±10% jitter on every page, as fsync times vary; the operating point is 450 rows.
	sim := &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 40 * time.Microsecond, jitter: 0.10, caller: wide}
	limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 300)
	settled := limits[10:]
	var sum, sumSq float64
	for i, n := range settled {
		if n < 360 || n > 540 {
			t.Fatalf("page %d: %d rows, more than 20%% from 450 (limits %v)", i+10, n, limits)
		}
		if i > 0 {
			if step := math.Abs(float64(n-settled[i-1])) / float64(settled[i-1]); step > 0.10 {
				t.Fatalf("page %d: %d rows after %d, a swing of %.0f%% (limits %v)", i+10, n, settled[i-1], step*100, limits)
			}
		}
		sum += float64(n)
		sumSq += float64(n) * float64(n)
	}
	mean := sum / float64(len(settled))
	if cv := math.Sqrt(sumSq/float64(len(settled))-mean*mean) / mean; cv > 0.05 {
		t.Fatalf("coefficient of variation %.3f after settling, want at most 0.05 (limits %v)", cv, limits)
	}
}

func TestBudget_CostSpikeShrinksNextPageAtOnce(t *testing.T) {
	const spikeAt = 30
	sim := &simTable{
		table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 40 * time.Microsecond, caller: wide,
		costAt: func(page, _ int, base time.Duration) time.Duration {
			if page == spikeAt {
				return 3 * base // one fsync stall
			}
			return base
		},
	}
	limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 60)
	before, after := limits[spikeAt], limits[spikeAt+1]
	if after > before/2 {
		t.Fatalf("page after a 3x spike: %d rows after %d, want at most half (limits %v)", after, before, limits)
	}
	// Recovery is smooth: it climbs without dipping, back to where it was, and stays.
	for i := spikeAt + 2; i < len(limits); i++ {
		if limits[i] < limits[i-1] && limits[i-1] < before {
			t.Fatalf("page %d: %d rows after %d while recovering to %d (limits %v)", i, limits[i], limits[i-1], before, limits)
		}
		if i >= spikeAt+4 && limits[i] < before*95/100 {
			t.Fatalf("page %d: %d rows, not back near %d three pages after the spike (limits %v)", i, limits[i], before, limits)
		}
	}
}

func TestBudget_SlowerRegimeSettlesWithoutSwinging(t *testing.T) {
	const changeAt = 20
	sim := &simTable{
		table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 10 * time.Microsecond, caller: wide,
		costAt: func(page, rows int, base time.Duration) time.Duration {
			if page >= changeAt {
				return 2*time.Millisecond + time.Duration(rows)*100*time.Microsecond // the disk got 10x slower
			}
			return base
		},
	}
	limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 60)
	// The new regime allows (20-2)/0.1 = 180 rows. The old window must not pull the budget
	// back up into expensive pages.
	for i := changeAt + 1; i < len(limits); i++ {
		if limits[i] < 144 || limits[i] > 216 {
			t.Fatalf("page %d: %d rows, want within 20%% of 180 once the slowdown was seen (limits %v)", i, limits[i], limits)
		}
	}
}

func TestBudget_ProofTablesStayAtOrBelow128(t *testing.T) {
	for _, table := range []wallet.TableName{wallet.TableProvenTxs, wallet.TableProvenTxReqs} {
		t.Run(string(table), func(t *testing.T) {
			// Large rows (20 KB of raw transaction and merkle path), cheap enough that
			// only the cap stops them.
			sim := &simTable{table: table, rowBytes: 20_000, fixed: 2 * time.Millisecond, perRow: 5 * time.Microsecond, perKiB: time.Microsecond, caller: wide}
			limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 30)
			if last := limits[len(limits)-1]; last != proofMaxRows {
				t.Fatalf("settled at %d rows, want the proof cap %d (limits %v)", last, proofMaxRows, limits)
			}
		})
	}
	t.Run("control: outputs are not capped at 128", func(t *testing.T) {
		sim := &simTable{table: wallet.TableOutputs, rowBytes: 20_000, fixed: 2 * time.Millisecond, perRow: 5 * time.Microsecond, perKiB: time.Microsecond, caller: wide}
		limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 30)
		if last := limits[len(limits)-1]; last <= proofMaxRows {
			t.Fatalf("outputs settled at %d rows, want above %d (limits %v)", last, proofMaxRows, limits)
		}
	})
}

func TestBudget_NewTableStartsAt64(t *testing.T) {
	b := mustBudget(t, BudgetOptions{})
	outputs := &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: time.Millisecond, perRow: time.Microsecond, caller: wide}
	if got := outputs.pages(t, b, 10); got[len(got)-1] != wallet.MaxPageRows {
		t.Fatalf("outputs did not reach the cap: %v", got)
	}
	// The next table in sync order starts fresh, whatever outputs learnt.
	if l := b.Next(wallet.TableTxLabelsMap, wide); l.Rows != startRows {
		t.Fatalf("first page of a new table: %d rows, want %d", l.Rows, startRows)
	}
	b.Observe(wallet.TableTxLabelsMap, startRows, startRows*100, 50*time.Millisecond)
	// A table seen again keeps its own history: outputs resumes at its cap.
	if l := b.Next(wallet.TableOutputs, wide); l.Rows != wallet.MaxPageRows {
		t.Fatalf("outputs seen again: %d rows, want its history's %d", l.Rows, wallet.MaxPageRows)
	}
}

func TestBudget_ProbesUpFromFloor(t *testing.T) {
	const cheapAt = 30
	sim := &simTable{
		table: wallet.TableOutputs, rowBytes: 300, fixed: 2 * time.Millisecond, perRow: 30 * time.Millisecond, caller: wide,
		costAt: func(page, rows int, base time.Duration) time.Duration {
			if page >= cheapAt {
				return 2*time.Millisecond + time.Duration(rows)*10*time.Microsecond // the rows got cheap
			}
			return base
		},
	}
	limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 70)
	// 30 ms a row: after the second page (half the first, to learn), the floor, with a
	// 2-row probe after every probeAfter pages there.
	if limits[1] != startRows/2 {
		t.Fatalf("second page after an expensive first: %d rows, want %d (limits %v)", limits[1], startRows/2, limits)
	}
	floor := 0
	for i, n := range limits[2:cheapAt] {
		switch n {
		case 1:
			floor++
			if floor > probeAfter {
				t.Fatalf("page %d: %d pages at the floor without a probe (limits %v)", i+2, floor, limits)
			}
		case 2:
			if floor != probeAfter {
				t.Fatalf("page %d: probe after %d pages at the floor, want %d (limits %v)", i+2, floor, probeAfter, limits)
			}
			floor = 0
		default:
			t.Fatalf("page %d: %d rows at 30 ms a row (limits %v)", i+2, n, limits)
		}
	}
	// Once rows are cheap, a probe shows it and the budget climbs to the cap.
	if last := limits[len(limits)-1]; last != wallet.MaxPageRows {
		t.Fatalf("rows got cheap at page %d, budget still at %d rows (limits %v)", cheapAt, last, limits)
	}
}

func TestBudget_CallerLimitsWin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		caller   wallet.Limits
		wantRows int // the row limit once settled
	}{
		{"rows", wallet.Limits{Rows: 10, Bytes: wallet.MaxPageBytes}, 10},
		{"zero means wallet's defaults", wallet.Limits{}, wallet.DefaultPageRows},
		{"one row", wallet.Limits{Rows: 1, Bytes: wallet.MaxFrameBytes}, 1},
		// 4 KiB hold 13 rows of 300 bytes: the byte limit binds, the row limit may not.
		{"bytes", wallet.Limits{Rows: wallet.MaxPageRows, Bytes: 4096}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Cheap pages: left alone the budget would grow to 1,000 rows. pages checks
			// every limit against the caller's.
			sim := &simTable{table: wallet.TableOutputs, rowBytes: 300, fixed: time.Millisecond, perRow: time.Microsecond, caller: tc.caller}
			limits := sim.pages(t, mustBudget(t, BudgetOptions{}), 20)
			if tc.wantRows != 0 && limits[len(limits)-1] != tc.wantRows {
				t.Fatalf("settled at %d rows, want the caller's %d (limits %v)", limits[len(limits)-1], tc.wantRows, limits)
			}
		})
	}
}

func TestBudget_RetriedPageKeepsLimits(t *testing.T) {
	b := mustBudget(t, BudgetOptions{})
	b.Next(wallet.TableOutputs, wide)
	b.Observe(wallet.TableOutputs, 64, 64*300, 2*time.Millisecond)
	first := b.Next(wallet.TableOutputs, wide)
	if again := b.Next(wallet.TableOutputs, wide); again != first {
		t.Fatalf("Next asked twice for one page: %+v then %+v", first, again)
	}
	if first.Rows != 2*startRows {
		t.Fatalf("cheap first page: next %d rows, want %d", first.Rows, 2*startRows)
	}
}

func TestBudget_ObservePanicsOnNegative(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rows  int
		bytes int64
		cost  time.Duration
	}{
		{"rows", -1, 0, time.Millisecond},
		{"bytes", 1, -1, time.Millisecond},
		{"cost", 1, 1, -time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			mustBudget(t, BudgetOptions{}).Observe(wallet.TableOutputs, tc.rows, tc.bytes, tc.cost)
		})
	}
}

func TestNewBudget_RejectsInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts BudgetOptions
	}{
		{"negative target", BudgetOptions{Target: -time.Millisecond}},
		{"negative window", BudgetOptions{Window: -1}},
		{"window of one page", BudgetOptions{Window: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewBudget(tc.opts); !errors.Is(err, wallet.ErrInvalidArgument) {
				t.Fatalf("NewBudget(%+v) = %v, want ErrInvalidArgument", tc.opts, err)
			}
		})
	}
}
