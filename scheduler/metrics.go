package scheduler

import "time"

// Sample is one grant's life in the queue, recorded when it is released.
type Sample struct {
	Class Class         `json:"class"`
	Mode  Mode          `json:"mode"`
	Wait  time.Duration `json:"wait"` // from Acquire to the grant
	Hold  time.Duration `json:"hold"` // from the grant to its release
}

// ClassMetrics are one class's totals since the queue was made.
type ClassMetrics struct {
	Grants    uint64        `json:"grants"`    // grants released
	Cancelled uint64        `json:"cancelled"` // requests whose context ended before they got a grant
	Stale     uint64        `json:"stale"`     // requests refused with wallet.ErrStaleSession
	TotalWait time.Duration `json:"totalWait"` // summed over released grants
	MaxWait   time.Duration `json:"maxWait"`
	TotalHold time.Duration `json:"totalHold"`
	MaxHold   time.Duration `json:"maxHold"`
}

// Metrics is a snapshot of the queue's grant history, for the dashboard and benchmarks.
// Recent holds the last released grants, oldest first, at most Options.RecentSamples of
// them: enough for percentiles of the last few seconds without growing with uptime.
type Metrics struct {
	Foreground ClassMetrics `json:"foreground"`
	Background ClassMetrics `json:"background"`
	Recent     []Sample     `json:"recent"`
}

// Metrics returns a snapshot; the caller owns the returned slice.
func (q *Queue) Metrics() Metrics {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.metrics
	recent := make([]Sample, 0, len(m.ring))
	if len(m.ring) == cap(m.ring) {
		recent = append(recent, m.ring[m.next:]...)
	}
	recent = append(recent, m.ring[:m.next]...)
	return Metrics{Foreground: m.fg, Background: m.bg, Recent: recent}
}

// metrics accumulates under the queue's mutex.
type metrics struct {
	fg, bg ClassMetrics
	ring   []Sample // grows to its capacity, then wraps at next
	next   int
}

func newMetrics(samples int) metrics { return metrics{ring: make([]Sample, 0, samples)} }

func (m *metrics) of(c Class) *ClassMetrics {
	if c == Foreground {
		return &m.fg
	}
	return &m.bg
}

func (m *metrics) record(s Sample) {
	c := m.of(s.Class)
	c.Grants++
	c.TotalWait += s.Wait
	c.MaxWait = max(c.MaxWait, s.Wait)
	c.TotalHold += s.Hold
	c.MaxHold = max(c.MaxHold, s.Hold)
	if len(m.ring) < cap(m.ring) {
		m.ring = append(m.ring, s)
	} else {
		m.ring[m.next] = s
	}
	m.next = (m.next + 1) % cap(m.ring)
}
