package serve

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"walletsync/remote/wire"
)

// commitBuckets are the upper bounds, in seconds, of the commit latency histogram: a
// processSyncChunk of the toolbox fixture's 1,000-row chunks commits in tens of
// milliseconds on an idle SSD and in seconds on a busy disk, so the buckets span 5 ms to
// 30 s.
var commitBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics are the server's counters, written in Prometheus' text format by hand (no
// client library: the format is a few lines). Safe for concurrent use.
type metrics struct {
	mu       sync.Mutex
	calls    map[[2]string]uint64 // by (method, outcome)
	commits  []uint64             // per commitBuckets, not cumulative; one more for +Inf
	commitN  uint64
	commitS  float64
	bytesIn  atomic.Uint64
	bytesOut atomic.Uint64
	inFlight atomic.Int64
	conns    atomic.Int64      // connections admitted and open
	refused  map[string]uint64 // connections and requests refused, by reason
	// extra are mounted handlers that write their own metrics (see MetricsWriter).
	extra []MetricsWriter
	// budget is the server's memory budget, whose use is a gauge.
	budget *wire.MemoryBudget
}

// MetricsWriter is implemented by a mounted handler that has metrics of its own (the
// paged wire's open views, for one): its text is appended to /metrics.
type MetricsWriter interface {
	// WriteMetrics writes Prometheus text-format samples (with their HELP and TYPE lines).
	WriteMetrics(w io.Writer)
}

func newMetrics() *metrics {
	return &metrics{calls: map[[2]string]uint64{}, refused: map[string]uint64{}, commits: make([]uint64, len(commitBuckets)+1)}
}

// call records one answered toolbox call; a processSyncChunk that succeeded is also a
// commit.
func (m *metrics) call(method, outcome string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[[2]string{method, outcome}]++
	if method == "processSyncChunk" && outcome == "ok" {
		s := took.Seconds()
		i := sort.SearchFloat64s(commitBuckets, s)
		m.commits[i]++
		m.commitN++
		m.commitS += s
	}
}

// refuse counts one refusal for reason.
func (m *metrics) refuse(reason string) {
	m.mu.Lock()
	m.refused[reason]++
	m.mu.Unlock()
}

// ServeHTTP writes every metric.
func (m *metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.write(w)
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.calls))
	for k := range m.calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	fmt.Fprintln(w, "# HELP walletsync_serve_requests_total Toolbox JSON-RPC calls answered, by method and outcome (ok, a WERR_* name, invalid_request, method_not_found).")
	fmt.Fprintln(w, "# TYPE walletsync_serve_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "walletsync_serve_requests_total{method=%q,outcome=%q} %d\n", k[0], k[1], m.calls[k])
	}
	fmt.Fprintln(w, "# HELP walletsync_serve_commit_seconds Time to answer a processSyncChunk that committed.")
	fmt.Fprintln(w, "# TYPE walletsync_serve_commit_seconds histogram")
	var cum uint64
	for i, b := range commitBuckets {
		cum += m.commits[i]
		fmt.Fprintf(w, "walletsync_serve_commit_seconds_bucket{le=\"%g\"} %d\n", b, cum)
	}
	fmt.Fprintf(w, "walletsync_serve_commit_seconds_bucket{le=\"+Inf\"} %d\n", m.commitN)
	fmt.Fprintf(w, "walletsync_serve_commit_seconds_sum %g\n", m.commitS)
	fmt.Fprintf(w, "walletsync_serve_commit_seconds_count %d\n", m.commitN)
	fmt.Fprintln(w, "# HELP walletsync_serve_refused_total Connections and requests refused at a limit, by reason (see docs/serve.md, Limits).")
	fmt.Fprintln(w, "# TYPE walletsync_serve_refused_total counter")
	for _, reason := range []string{refusedConns, refusedConnsPerAddr} {
		fmt.Fprintf(w, "walletsync_serve_refused_total{reason=%q} %d\n", reason, m.refused[reason])
	}
	for _, reason := range quotaReasons {
		fmt.Fprintf(w, "walletsync_serve_refused_total{reason=%q} %d\n", reason, m.refused[reason])
	}
	if m.budget != nil {
		fmt.Fprintf(w, "walletsync_serve_refused_total{reason=%q} %d\n", refusedMemory, m.budget.Refused())
	}
	m.mu.Unlock()
	fmt.Fprintln(w, "# HELP walletsync_serve_connections Client connections open now (the listener's, not the metrics listener's).")
	fmt.Fprintln(w, "# TYPE walletsync_serve_connections gauge")
	fmt.Fprintf(w, "walletsync_serve_connections %d\n", m.conns.Load())
	fmt.Fprintln(w, "# HELP walletsync_serve_received_bytes_total Request body bytes read.")
	fmt.Fprintln(w, "# TYPE walletsync_serve_received_bytes_total counter")
	fmt.Fprintf(w, "walletsync_serve_received_bytes_total %d\n", m.bytesIn.Load())
	fmt.Fprintln(w, "# HELP walletsync_serve_sent_bytes_total Response body bytes written.")
	fmt.Fprintln(w, "# TYPE walletsync_serve_sent_bytes_total counter")
	fmt.Fprintf(w, "walletsync_serve_sent_bytes_total %d\n", m.bytesOut.Load())
	fmt.Fprintln(w, "# HELP walletsync_serve_in_flight_requests Requests being served now.")
	fmt.Fprintln(w, "# TYPE walletsync_serve_in_flight_requests gauge")
	fmt.Fprintf(w, "walletsync_serve_in_flight_requests %d\n", m.inFlight.Load())
	if m.budget != nil {
		fmt.Fprintln(w, "# HELP walletsync_serve_memory_budget_bytes The memory budget of request bodies and decompressed frames in flight (--memory-budget).")
		fmt.Fprintln(w, "# TYPE walletsync_serve_memory_budget_bytes gauge")
		fmt.Fprintf(w, "walletsync_serve_memory_budget_bytes %d\n", m.budget.Size())
		fmt.Fprintln(w, "# HELP walletsync_serve_memory_in_use_bytes Bytes of the memory budget charged now.")
		fmt.Fprintln(w, "# TYPE walletsync_serve_memory_in_use_bytes gauge")
		fmt.Fprintf(w, "walletsync_serve_memory_in_use_bytes %d\n", m.budget.InUse())
	}
	for _, x := range m.extra {
		x.WriteMetrics(w)
	}
}

// metricsFunc is a MetricsWriter of a function.
type metricsFunc func(w io.Writer)

// WriteMetrics calls f.
func (f metricsFunc) WriteMetrics(w io.Writer) { f(w) }

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Uint64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(uint64(n))
	return n, err
}

// countingWriter counts the bytes written to a response.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Uint64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(uint64(n))
	return n, err
}
