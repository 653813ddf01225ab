package agent

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"walletsync/frontend"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// routes adds the agent's own API on top of the server's built-in routes (status, tasks,
// events, secrets). The dashboard and the command line use exactly these.
func (a *Agent) routes() {
	a.srv.HandleHTTP("GET /", frontend.Handler())
	a.moreRoutes()
	a.importRoutes()
	a.srv.Handle("GET", "/api/v1/overview", func(r *http.Request) (any, error) { return a.Overview(r.Context()) })
	a.srv.Handle("GET", "/api/v1/config", func(r *http.Request) (any, error) { return a.config(), nil })

	a.srv.Handle("POST", "/api/v1/wallets", func(r *http.Request) (any, error) {
		var ref WalletRef
		if err := DecodeJSON(r, &ref); err != nil {
			return nil, err
		}
		if _, err := a.wallet(r.Context(), ref.Path); err != nil {
			return nil, WithHint(err, "give the path of a @bsv/wallet-toolbox SQLite wallet")
		}
		return a.updateConfig(func(c *Config) error {
			c.Wallets = slices.DeleteFunc(c.Wallets, func(w WalletRef) bool { return w.Path == ref.Path })
			c.Wallets = append(c.Wallets, ref)
			return nil
		})
	})

	a.srv.Handle("POST", "/api/v1/destinations", func(r *http.Request) (any, error) {
		var d Destination
		if err := DecodeJSON(r, &d); err != nil {
			return nil, err
		}
		return a.updateConfig(func(c *Config) error {
			if _, err := c.destination(d.ID); err == nil {
				return fmt.Errorf("destination %q exists: %w", d.ID, wallet.ErrInvalidArgument)
			}
			c.Destinations = append(c.Destinations, d)
			return nil
		})
	})
	a.srv.Handle("PUT", "/api/v1/destinations/{id}", func(r *http.Request) (any, error) {
		var d Destination
		if err := DecodeJSON(r, &d); err != nil {
			return nil, err
		}
		d.ID = r.PathValue("id")
		return a.updateDestination(d.ID, func(old *Destination) { *old = d })
	})
	a.srv.Handle("DELETE", "/api/v1/destinations/{id}", func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		return a.updateConfig(func(c *Config) error {
			if _, err := c.destination(id); err != nil {
				return err
			}
			c.Destinations = slices.DeleteFunc(c.Destinations, func(d Destination) bool { return d.ID == id })
			return nil
		})
	})
	a.srv.Handle("POST", "/api/v1/destinations/{id}/run", func(r *http.Request) (any, error) {
		t, err := a.RunDestination(r.PathValue("id"), "manual")
		if err == nil {
			a.sched.Ran(t.Target)
		}
		return t, err
	})
	a.srv.Handle("POST", "/api/v1/destinations/{id}/pause", func(r *http.Request) (any, error) {
		d, err := decodePause(r)
		if err != nil {
			return nil, err
		}
		return a.configAfter(a.sched.Pause(r.Context(), r.PathValue("id"), d))
	})
	a.srv.Handle("POST", "/api/v1/destinations/{id}/resume", func(r *http.Request) (any, error) {
		return a.configAfter(a.sched.Resume(r.Context(), r.PathValue("id")))
	})
	a.srv.Handle("POST", "/api/v1/pause", func(r *http.Request) (any, error) {
		d, err := decodePause(r)
		if err != nil {
			return nil, err
		}
		return a.configAfter(a.sched.PauseAll(r.Context(), d))
	})
	a.srv.Handle("POST", "/api/v1/resume", func(r *http.Request) (any, error) {
		return a.configAfter(a.sched.ResumeAll(r.Context()))
	})

	a.srv.Handle("PUT", "/api/v1/settings", func(r *http.Request) (any, error) {
		var s Settings
		if err := DecodeJSON(r, &s); err != nil {
			return nil, err
		}
		return a.updateConfig(func(c *Config) error {
			c.Retention, c.Drill, c.LogLevel = s.Retention, s.Drill, s.LogLevel
			return nil
		})
	})

	a.srv.Handle("POST", "/api/v1/export", func(r *http.Request) (any, error) {
		var req ExportRequest
		if err := DecodeJSON(r, &req); err != nil {
			return nil, err
		}
		return a.Export(req)
	})
}

// Settings is the body of PUT /api/v1/settings: what the Settings page edits besides the
// backup password (which goes to the secrets API) and the service.
type Settings struct {
	Retention Retention `json:"retention"`
	Drill     Schedule  `json:"drill"`
	LogLevel  LogLevel  `json:"logLevel"`
}

// PauseRequest is the body of a pause: for a duration ("1h", "8h"), or, empty, until resumed.
type PauseRequest struct {
	For Duration `json:"for,omitzero"`
}

// decodePause reads how long to pause; an empty body means until resumed.
func decodePause(r *http.Request) (time.Duration, error) {
	var req PauseRequest
	if r.ContentLength != 0 {
		if err := DecodeJSON(r, &req); err != nil {
			return 0, err
		}
	}
	return time.Duration(req.For), nil
}

// updateDestination applies change to destination id and saves the config.
func (a *Agent) updateDestination(id string, change func(*Destination)) (Config, error) {
	return a.updateConfig(func(c *Config) error {
		for i := range c.Destinations {
			if c.Destinations[i].ID == id {
				change(&c.Destinations[i])
				return nil
			}
		}
		return fmt.Errorf("destination %q: %w", id, wallet.ErrNotFound)
	})
}

// foreground runs a read of the wallet at path under a foreground grant of its access queue.
func (a *Agent) foreground(ctx context.Context, path string, read func(*walletHandle) error) error {
	w, err := a.wallet(ctx, path)
	if err != nil {
		return err
	}
	s := w.queue.NewSession("dashboard", path)
	g, err := s.Acquire(ctx, scheduler.Foreground, scheduler.Read)
	if err != nil {
		return err
	}
	defer s.Release(g)
	return read(w)
}

// configAfter answers a request that changed the config: the new config, or err.
func (a *Agent) configAfter(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return a.config(), nil
}
