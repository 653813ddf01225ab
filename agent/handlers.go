package agent

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"
	"walletsync/agent/api"

	"walletsync/scheduler"
	"walletsync/wallet"
)

// routes serves the agent's own routes on top of the server's built-in ones, and the
// dashboard's files (Options.Dashboard) at "/".
func (a *Agent) routes() {
	if a.opts.Dashboard != nil {
		a.srv.HandleHTTP("GET /", a.opts.Dashboard)
	}
	a.srv.HandleUpload(api.RouteImportUpload, func(r *http.Request) (any, error) { return a.receiveUpload(r) })
	id := func(r *http.Request) string { return r.PathValue("id") }
	for route, h := range map[api.Route]api.HandlerFunc{
		api.RouteOverview:       func(r *http.Request) (any, error) { return a.Overview(r.Context()) },
		api.RouteConfig:         func(*http.Request) (any, error) { return a.config(), nil },
		api.RouteSettings:       api.WithBody(func(_ *http.Request, s api.SettingsRequest) (any, error) { return a.saveSettings(s) }),
		api.RouteWalletsFound:   func(r *http.Request) (any, error) { return a.findWallets(r.Context()) },
		api.RouteForgetBrowsers: func(*http.Request) (any, error) { return api.Reply{Status: http.StatusNoContent}, a.forgetBrowsers() },
		api.RouteWalletAdd:      api.WithBody(func(r *http.Request, ref api.WalletRef) (any, error) { return a.addWallet(r.Context(), ref) }),
		api.RouteDestinationAdd: api.WithBody(func(_ *http.Request, d api.Destination) (any, error) { return a.addDestination(d) }),
		api.RouteDestinationPut: api.WithBody(func(r *http.Request, d api.Destination) (any, error) {
			d.ID = id(r)
			return a.updateDestination(d.ID, func(old *api.Destination) { *old = d })
		}),
		api.RouteDestinationDelete: func(r *http.Request) (any, error) { return a.removeDestination(id(r)) },
		api.RouteRun:               func(r *http.Request) (any, error) { return a.runByHand(id(r)) },
		api.RoutePause: func(r *http.Request) (any, error) {
			d, err := decodePause(r)
			if err != nil {
				return nil, err
			}
			return a.configAfter(a.sched.Pause(r.Context(), id(r), d))
		},
		api.RouteResume: func(r *http.Request) (any, error) { return a.configAfter(a.sched.Resume(r.Context(), id(r))) },
		api.RoutePauseAll: func(r *http.Request) (any, error) {
			d, err := decodePause(r)
			if err != nil {
				return nil, err
			}
			return a.configAfter(a.sched.PauseAll(r.Context(), d))
		},
		api.RouteResumeAll: func(r *http.Request) (any, error) { return a.configAfter(a.sched.ResumeAll(r.Context())) },
		api.RouteBackups:   func(r *http.Request) (any, error) { return a.backupListing(r.Context(), id(r)) },
		api.RouteBackupVerify: api.WithBody(func(r *http.Request, req api.VerifyRequest) (any, error) {
			return a.VerifyBackup(id(r), req.Name)
		}),
		api.RouteDrill:  func(*http.Request) (any, error) { return a.RunDrill("manual") },
		api.RouteExport: api.WithBody(func(_ *http.Request, req api.ExportRequest) (any, error) { return a.Export(req) }),
		api.RouteImportPreview: api.WithBody(func(_ *http.Request, req api.ImportRequest) (any, error) {
			return a.startImport(api.KindImportPreview, req)
		}),
		api.RouteImport: api.WithBody(func(_ *http.Request, req api.ImportRequest) (any, error) {
			if !req.Confirm {
				return nil, api.WithHint(fmt.Errorf("import without confirm: %w", wallet.ErrInvalidArgument), "look at the preview first, then confirm")
			}
			return a.startImport(api.KindImport, req)
		}),
		api.RouteImportAbandon:    api.WithBody(func(_ *http.Request, req api.AbandonRequest) (any, error) { return a.AbandonImport(req.Wallet) }),
		api.RouteService:          func(*http.Request) (any, error) { return serviceInfo(), nil },
		api.RouteServiceInstall:   func(*http.Request) (any, error) { return serviceAction((*Service).Install) },
		api.RouteServiceUninstall: func(*http.Request) (any, error) { return serviceAction((*Service).Uninstall) },
		api.RoutePathCheck:        api.WithBody(func(r *http.Request, req api.PathCheckRequest) (any, error) { return a.CheckPath(r.Context(), req) }),
		api.RouteWalletReplace: api.WithBody(func(r *http.Request, req api.WalletReplaceRequest) (any, error) {
			return a.replaceWallet(r.Context(), req)
		}),
		api.RoutePasswordTest: api.WithBody(func(r *http.Request, req api.PasswordTestRequest) (any, error) {
			return a.TestPassword(r.Context(), req.Password)
		}),
		api.RouteBundlePreview: api.WithBody(func(_ *http.Request, req api.BundleRequest) (any, error) { return a.PreviewBundle(req) }),
		api.RouteBundleRestore: api.WithBody(func(_ *http.Request, req api.BundleRequest) (any, error) { return a.RestoreBundle(req) }),
		api.RouteWalletCensus:  api.WithBody(func(r *http.Request, ref api.WalletRef) (any, error) { return a.walletCensus(r.Context(), ref) }),
	} {
		a.srv.Handle(route, h)
	}
	a.storageServerRoutes()
}

// decodePause reads how long to pause; an empty body means until resumed.
func decodePause(r *http.Request) (time.Duration, error) {
	var req api.PauseRequest
	if r.ContentLength != 0 {
		if err := api.DecodeJSON(r, &req); err != nil {
			return 0, err
		}
	}
	return time.Duration(req.For), nil
}

// saveSettings applies the Settings page's edits to the config.
func (a *Agent) saveSettings(s api.SettingsRequest) (api.Config, error) {
	return a.updateConfig(func(c *api.Config) error {
		c.Retention, c.Drill, c.LogLevel = s.Retention, s.Drill, s.LogLevel
		return nil
	})
}

// addWallet adds (or replaces) the wallet ref, once checkWalletFile passes it and it opens
// as a toolbox wallet. Destinations added before any wallet was chosen (their Wallet is
// empty) back up this one from now on.
func (a *Agent) addWallet(ctx context.Context, ref api.WalletRef) (api.Config, error) {
	if err := a.openAsWallet(ctx, ref.Path); err != nil {
		return api.Config{}, err
	}
	return a.updateConfig(func(c *api.Config) error {
		c.Wallets = slices.DeleteFunc(c.Wallets, func(w api.WalletRef) bool { return w.Path == ref.Path })
		c.Wallets = append(c.Wallets, ref)
		for j := range c.Destinations {
			if c.Destinations[j].Wallet == "" {
				c.Destinations[j].Wallet = ref.Path
			}
		}
		return nil
	})
}

// openAsWallet checks that path is a toolbox wallet and opens it, with the words a person
// needs when it is not one.
func (a *Agent) openAsWallet(ctx context.Context, path string) error {
	if err := checkWalletFile(path); err != nil {
		return api.AtPath(path, err)
	}
	if _, err := a.wallet(ctx, path); err != nil {
		return api.AtPath(path, api.WithHint(err, "give the path of a @bsv/wallet-toolbox SQLite wallet"))
	}
	return nil
}

// replaceWallet makes the agent protect req.New in place of req.Old, once New opens as a
// wallet: the same destinations back it up from now on. Old is left as it is, and the agent
// lets go of it (see releaseUnconfigured).
func (a *Agent) replaceWallet(ctx context.Context, req api.WalletReplaceRequest) (api.Config, error) {
	if req.Old == "" && len(a.config().Wallets) == 0 {
		// Nothing was protected yet: the restored wallet becomes the first one.
		return a.addWallet(ctx, api.WalletRef{Path: req.New})
	}
	if err := a.openAsWallet(ctx, req.New); err != nil {
		return api.Config{}, err
	}
	cfg, err := a.updateConfig(func(c *api.Config) error {
		i := slices.IndexFunc(c.Wallets, func(w api.WalletRef) bool { return w.Path == req.Old })
		if i < 0 {
			return fmt.Errorf("wallet %q: %w", req.Old, wallet.ErrNotFound)
		}
		c.Wallets[i] = api.WalletRef{Path: req.New}
		for j := range c.Destinations {
			if c.Destinations[j].Wallet == req.Old {
				c.Destinations[j].Wallet = req.New
			}
		}
		return nil
	})
	if err == nil {
		a.releaseUnconfigured() // Old is no longer the agent's to hold
	}
	return cfg, err
}

// addDestination adds d; an id already in use is refused.
func (a *Agent) addDestination(d api.Destination) (api.Config, error) {
	return a.updateConfig(func(c *api.Config) error {
		if _, err := findDestination(*c, d.ID); err == nil {
			return fmt.Errorf("destination %q exists: %w", d.ID, wallet.ErrInvalidArgument)
		}
		c.Destinations = append(c.Destinations, d)
		return placeFree(*c, d)
	})
}

// removeDestination removes destination id.
func (a *Agent) removeDestination(id string) (api.Config, error) {
	return a.updateConfig(func(c *api.Config) error {
		if _, err := findDestination(*c, id); err != nil {
			return err
		}
		c.Destinations = slices.DeleteFunc(c.Destinations, func(d api.Destination) bool { return d.ID == id })
		// Its id may be given to a new destination, which has written nowhere yet.
		return a.state.ForgetPlaces(context.Background(), id)
	})
}

// runByHand starts destination id's job as the person asked, and tells the scheduler, so
// that a schedule counts from this run.
func (a *Agent) runByHand(id string) (api.Task, error) {
	t, err := a.RunDestination(id, "manual")
	if err == nil {
		a.sched.Ran(t.Target)
	}
	return t, err
}

// updateDestination applies change to destination id and saves the config.
func (a *Agent) updateDestination(id string, change func(*api.Destination)) (api.Config, error) {
	return a.updateConfig(func(c *api.Config) error {
		for i := range c.Destinations {
			if c.Destinations[i].ID == id {
				old := c.Destinations[i]
				change(&c.Destinations[i])
				if d := c.Destinations[i]; filepath.Clean(d.Path) != filepath.Clean(old.Path) || d.Kind != old.Kind {
					return placeFree(*c, d)
				}
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
