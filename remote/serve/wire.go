package serve

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"walletsync/remote/wire"
)

// WireMount is walletsync's paged wire (package wire) over the server's store, mounted at
// wire.Prefix: walletsync agents sync through it with consistent views, keyset pages and
// atomic page+checkpoint commits, beside the toolbox wire on POST /. Its retained views add
// their gauges to /metrics, and are released when the server stops.
func WireMount(views wire.ViewOptions, log *slog.Logger) Mount {
	return Mount{
		Prefix:       wire.Prefix,
		MaxBodyBytes: wire.MaxBodyBytes,
		Hello:        wire.Hello,
		Views:        views.Normalized().MaxViews,
		New: func(backend wire.Backend, budget *wire.MemoryBudget) (http.Handler, error) {
			return wireHandler{wire.NewHandler(backend, wire.HandlerOptions{Views: views, Logger: log, Budget: budget})}, nil
		},
	}
}

// wireBackend returns the server's store as the paged wire's backend.
func (s *Server) wireBackend() wire.Backend {
	if s.local != nil {
		return wire.StoreBackend{Store: s.local}
	}
	return s.pg
}

// wireHandler adds the wire's view gauges to /metrics.
type wireHandler struct{ *wire.Handler }

// WriteMetrics writes the retained views open now (with shared views, those this process
// holds), the views released for being idle, and the bytes their reads reserve.
func (h wireHandler) WriteMetrics(w io.Writer) {
	st := h.Stats()
	fmt.Fprintf(w, "# HELP walletsync_serve_views_open Retained views of the paged wire open now (held by this process).\n# TYPE walletsync_serve_views_open gauge\nwalletsync_serve_views_open %d\n", st.Open)
	fmt.Fprintf(w, "# HELP walletsync_serve_views_idle_released_total Retained views released because no request used them for the idle timeout.\n# TYPE walletsync_serve_views_idle_released_total counter\nwalletsync_serve_views_idle_released_total %d\n", st.IdleReleases)
	fmt.Fprintf(w, "# HELP walletsync_serve_views_reserved_bytes Byte limits of the page reads in flight on retained views.\n# TYPE walletsync_serve_views_reserved_bytes gauge\nwalletsync_serve_views_reserved_bytes %d\n", st.ReservedBytes)
}
