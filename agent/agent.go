package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/scheduler"
	"walletsync/wallet"
)

// Options configure an Agent.
type Options struct {
	// Home is the folder under which the first run looks for wallet apps' wallets
	// (os.UserHomeDir when empty; see findWallets).
	Home string
	// Dir is the data folder: state database, secrets, token, lock (DefaultDataDir when
	// empty).
	Dir DataDir
	// ConfigPath is the config file (defaultConfigPath when empty).
	ConfigPath string
	// Addr is the API's loopback address. Empty (the command line's and the window's
	// default) means the stable one: the config's Addr, else DefaultAddr; when that is
	// taken, a neighbour port or any free one, which AddrNotice explains and the config
	// remembers (see newServer). An explicit address (127.0.0.1:0 for any free port, as
	// tests and the demo use) is used as it is, with no fallback, and not remembered.
	Addr string
	// Version is reported by GET /api/v1/status.
	Version string
	// Dashboard serves the dashboard's files at "/", behind the API's checks (the caller
	// passes frontend.Handler()). Nil serves the API alone: the daemon needs no UI bundle.
	Dashboard http.Handler
	// Logger receives the agent's log (discarded when nil).
	Logger *slog.Logger
	// Clock is the wall clock the agent's schedules and health read (time.Now when nil).
	Clock func() time.Time
	// RunAtStart names destinations to bring up to date as soon as the agent starts, as if
	// asked by hand. The timetable takes them before it looks at anything else, so a
	// destination that would run at start anyway (one that never ran) runs once, not once
	// for its schedule and again for the request. An unknown id fails Start.
	RunAtStart []string
	// SyncMaxRows caps the rows of a sync's pages (the syncer's default when 0). Small
	// pages make a long sync of a small wallet: tests stop one midway, and the dashboard's
	// screenshots show one in progress.
	SyncMaxRows int
	// ServerGiveUp is how long a run keeps trying a storage server that does not answer
	// before it fails (remote.GiveUp when 0). Tests of a stopped server set a short one.
	ServerGiveUp time.Duration

	// probeTicks is a test seam: the latency probe's ticks, so that a test decides when
	// the probe looks (a ticker of probeEvery when nil).
	probeTicks <-chan time.Time
	// maintainTicks is a test seam: the journal maintenance's looks (a ticker of
	// maintainLook when nil).
	maintainTicks <-chan time.Time
	// maintainLooked, a test seam, is told after each of those looks has ended, so that a
	// test changes nothing (the clock, the tasks) while a look is still under way.
	maintainLooked chan<- struct{}
}

// Agent is the running daemon: it owns the data folder, the wallets it keeps safe, the task
// manager, the event bus and the API server. Start makes one, Close ends it.
type Agent struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	lock    *DirLock
	state   *stateDB
	bus     *Bus
	tasks   *Manager
	secrets *Secrets
	srv     *api.Server
	// addrNotice says why the API listens elsewhere than it meant to (see newServer).
	addrNotice string
	sched      *timetable
	cancel     context.CancelFunc
	serving    sync.WaitGroup
	// kdf admits one Argon2id key derivation at a time across all tasks (see deriveGate).
	kdf chan struct{}

	mu      sync.Mutex // guards cfg, wallets and restoring
	cfg     api.Config
	wallets map[string]*walletHandle // open wallets by path
	// restoring holds the wallets a bundle restore is replacing, with its task's id: a.wallet
	// refuses them (see claimForRestore).
	restoring map[string]string
}

// walletHandle is an open wallet and the access queue every use of it goes through.
type walletHandle struct {
	store *localstore.Store
	queue *scheduler.Queue
}

// Start opens the data folder (one agent per folder: a second gets *AgentRunningError),
// loads the config, and serves the API until Close. The config's wallets are opened on
// first use, so that a missing or locked wallet shows as a problem in the API instead of
// stopping the agent.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	var err error
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Dir == "" {
		if opts.Dir, err = DefaultDataDir(); err != nil {
			return nil, err
		}
	}
	if opts.ConfigPath == "" {
		if opts.ConfigPath, err = defaultConfigPath(); err != nil {
			return nil, err
		}
	}
	a := &Agent{opts: opts, log: opts.Logger, now: opts.Clock, wallets: map[string]*walletHandle{}, kdf: make(chan struct{}, 1)}
	started := false
	defer func() {
		if !started { // release what was opened before the failure
			a.Close(context.Background())
		}
	}()
	if err = opts.Dir.Ensure(); err != nil {
		return nil, err
	}
	if a.lock, err = opts.Dir.Lock(); err != nil {
		return nil, err
	}
	if a.cfg, err = loadConfig(opts.ConfigPath); err != nil {
		return nil, err
	}
	for _, id := range opts.RunAtStart {
		if _, err = findDestination(a.cfg, id); err != nil {
			return nil, fmt.Errorf("run at start: %w", err)
		}
	}
	a.recoverRestores(ctx)
	if a.state, err = openState(ctx, opts.Dir.StatePath()); err != nil {
		return nil, err
	}
	a.bus = newBus(0)
	a.serving.Add(1)
	go func() {
		defer a.serving.Done()
		// Uncancelled on purpose: it drains the ring when the bus closes.
		if err := a.state.RecordEvents(context.Background(), a.bus, 0); err != nil {
			a.log.Error("event log stopped", "err", err)
		}
	}()
	a.secrets = NewSecrets(opts.Dir.SecretsPath())
	if a.tasks, err = newManager(ctx, managerOptions{Bus: a.bus, State: a.state, Redactor: a.secrets, Logger: a.log}); err != nil {
		return nil, err
	}
	if err := a.adoptPlaces(ctx, a.config()); err != nil {
		return nil, err
	}
	token, err := opts.Dir.Token()
	if err != nil {
		return nil, err
	}
	sessionKey, err := opts.Dir.SessionKey()
	if err != nil {
		return nil, err
	}
	a.srv, err = a.newServer(api.ServerOptions{Token: token, Bus: busEvents{a.bus}, Tasks: a.tasks, Secrets: a.secrets,
		Version: opts.Version, Logger: a.log, SessionKey: sessionKey, SignInCommand: a.openCommand()})
	if err != nil {
		return nil, err
	}
	a.routes()
	a.cleanAbandoned()
	if err = opts.Dir.PublishAddr(a.srv.Addr()); err != nil {
		return nil, err
	}
	if a.sched, err = newTimetable(timetableOptions{Run: a.scheduledRun, LastRun: a.lastSuccess, Logger: a.log,
		Now: a.now, EditConfig: func(_ context.Context, edit func(*api.Config) error) error {
			_, err := a.updateConfig(edit)
			return err
		}}); err != nil {
		return nil, err
	}
	if err = a.sched.Update(a.config()); err != nil {
		a.log.Warn("schedules not fully applied", "err", err)
	}
	for _, id := range opts.RunAtStart {
		if err := a.sched.RunNow(id); err != nil { // only when its schedule was not applied
			a.log.Warn("run at start", "destination", id, "err", err)
		}
	}
	serveCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.serving.Add(4)
	go func() {
		defer a.serving.Done()
		a.probeLatency(serveCtx)
	}()
	go func() {
		defer a.serving.Done()
		a.maintainJournals(serveCtx)
	}()
	go func() {
		defer a.serving.Done()
		if err := a.srv.Serve(serveCtx); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("API server stopped", "err", err)
		}
	}()
	go func() {
		defer a.serving.Done()
		if err := a.sched.Run(serveCtx); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("timetable stopped", "err", err)
		}
	}()
	a.log.Info("agent started", "api", a.srv.URL(), "data", string(opts.Dir))
	started = true
	return a, nil
}

// URL is the dashboard's address; LoginURL is a one-time URL that logs a browser in.
func (a *Agent) URL() string      { return a.srv.URL() }
func (a *Agent) LoginURL() string { return a.srv.LoginURL() }

// Bus is the agent's event bus (for in-process observers such as the demo's terminal).
func (a *Agent) Bus() *Bus { return a.bus }

// Tasks is the agent's task manager.
func (a *Agent) Tasks() *Manager { return a.tasks }

// Close stops at a safe point and releases everything, in the order doc.go gives: the API
// stops, running tasks are cancelled and waited for (acknowledged commits stay), the event
// log drains, the state database and wallets close, the folder lock goes. ctx bounds the
// wait for tasks.
func (a *Agent) Close(ctx context.Context) error {
	var errs []error
	if a.cancel != nil {
		a.cancel()
	}
	if a.tasks != nil {
		errs = append(errs, a.tasks.Shutdown(ctx))
	}
	if a.bus != nil {
		a.bus.Close()
	}
	a.serving.Wait()
	if a.state != nil {
		errs = append(errs, a.state.Close())
	}
	a.mu.Lock()
	for path, w := range a.wallets {
		errs = append(errs, w.store.Close())
		delete(a.wallets, path)
	}
	a.mu.Unlock()
	if a.srv != nil {
		errs = append(errs, a.opts.Dir.RemoveAddr())
	}
	if a.lock != nil {
		errs = append(errs, a.lock.Release())
	}
	return errors.Join(errs...)
}

// Run starts an agent, calls ready (when set) once it serves, and runs until ctx ends; then
// it closes the agent, giving running tasks up to a minute to reach a safe point.
func Run(ctx context.Context, opts Options, ready func(*Agent)) error {
	a, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(a)
	}
	<-ctx.Done()
	a.log.Info("agent stopping", "why", context.Cause(ctx))
	closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = a.Close(closeCtx)
	a.log.Info("agent stopped", "err", err)
	return err
}

// scheduledRun is the timetable's Run: it starts the destination's job (or the drill) and
// waits for it to end, which is how the timetable keeps one run per destination at a time.
func (a *Agent) scheduledRun(ctx context.Context, id string, reason api.Reason) {
	var t api.Task
	var err error
	if id == drillID {
		t, err = a.RunDrill(string(reason))
	} else {
		t, err = a.RunDestination(id, string(reason))
	}
	if err != nil {
		a.log.Warn("scheduled run not started", "destination", id, "reason", reason, "err", err)
		return
	}
	if _, err := a.tasks.Wait(ctx, t.ID); err != nil && ctx.Err() == nil {
		a.log.Warn("scheduled run not followed", "task", t.ID, "err", err)
	}
}

// lastSuccess is when destination id's (or the drill's) job last succeeded at the place it
// names now, zero if never: the timetable counts schedules from it, so a failed or
// interrupted run is retried once.
func (a *Agent) lastSuccess(id string) time.Time {
	kinds, place := backupKinds, ""
	if id == drillID {
		kinds = []api.TaskKind{api.KindDrill}
	} else if d, err := findDestination(a.config(), id); err == nil {
		place = a.placeOf(d)
	}
	for _, t := range a.tasks.List() { // newest first
		if t.Target == id && t.State == api.TaskSucceeded && slices.Contains(kinds, t.Kind) && t.Place == place {
			return t.StartedAt
		}
	}
	return time.Time{}
}

// config returns a copy of the current configuration.
func (a *Agent) config() api.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneConfig(a.cfg)
}

// updateConfig applies change to a copy of the configuration, validates it, writes it
// atomically, and only then makes it current and tells the timetable; nothing changes when
// any step fails.
func (a *Agent) updateConfig(change func(*api.Config) error) (api.Config, error) {
	a.mu.Lock()
	next := cloneConfig(a.cfg)
	err := change(&next)
	if err == nil {
		err = validateConfig(next)
	}
	if err == nil {
		err = SaveConfig(a.opts.ConfigPath, next)
	}
	if err != nil {
		cur := cloneConfig(a.cfg)
		a.mu.Unlock()
		return cur, err
	}
	prev := a.cfg
	a.cfg = next
	a.mu.Unlock()
	// A destination that now names another place holds nothing there yet: it runs at once
	// (unless paused), so that "not backed up here yet" lasts as short as it can.
	for _, id := range a.movedDestinations(prev, next) {
		if d, _ := findDestination(next, id); d.Paused(a.now()) {
			continue
		}
		if _, err := a.RunDestination(id, "moved"); err != nil {
			a.log.Warn("moved destination not run", "destination", id, "err", err)
		}
	}
	if a.sched != nil {
		if err := a.sched.Update(cloneConfig(next)); err != nil {
			a.log.Warn("schedules not fully applied", "err", err)
		}
	}
	a.bus.Publish(api.EventDestinationChanged, map[string]int{"destinations": len(next.Destinations)})
	return cloneConfig(next), nil
}

// cloneConfig copies the slices and pointers of c, so that callers never share state with
// the agent's current configuration.
func cloneConfig(c api.Config) api.Config {
	out := c
	out.Wallets = make([]api.WalletRef, len(c.Wallets))
	for i, w := range c.Wallets {
		w.Identities = append([]string(nil), w.Identities...)
		out.Wallets[i] = w
	}
	out.Destinations = make([]api.Destination, len(c.Destinations))
	for i, d := range c.Destinations {
		if d.Pause != nil {
			p := *d.Pause
			d.Pause = &p
		}
		out.Destinations[i] = d
	}
	return out
}

// wallet returns the open wallet at path, opening it (for writing: the agent is the wallet's
// one walletsync writer) on first use.
func (a *Agent) wallet(ctx context.Context, path string) (*walletHandle, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.wallets[path]; ok {
		return w, nil
	}
	if id, ok := a.restoring[path]; ok {
		return nil, &walletInUseError{Wallet: path, TaskID: id, Kind: api.KindBundleRestore, State: api.TaskRunning}
	}
	st, err := localstore.Open(ctx, path, localstore.Options{Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("open wallet %s: %w", path, err)
	}
	// The queue grants what the file promises now: reads beside a commit only in WAL mode.
	caps, err := st.Capabilities(ctx)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("open wallet %s: %w", path, err)
	}
	q, err := scheduler.New(caps, scheduler.Options{})
	if err != nil {
		st.Close()
		return nil, err
	}
	w := &walletHandle{store: st, queue: q}
	a.wallets[path] = w
	return w, nil
}

// releaseUnconfigured closes the wallets the agent holds open but no longer protects (one
// replaced by a restored wallet, say), so that it stops holding their writer lock, unless a
// task that may use one runs or waits: that wallet is released by a later call, once the
// task ended. The check and the removal are one step under a.mu, which a.wallet takes too.
func (a *Agent) releaseUnconfigured() {
	cfg := a.config()
	var release []*walletHandle
	a.mu.Lock()
	tasks := a.tasks.List() // under a.mu, as in claimForRestore: a task listed later cannot have a wallet yet
	for path, w := range a.wallets {
		if slices.ContainsFunc(cfg.Wallets, func(r api.WalletRef) bool { return r.Path == path }) ||
			slices.ContainsFunc(tasks, func(t api.Task) bool { return !t.State.Terminal() && taskMayUse(cfg, t, path) }) {
			continue
		}
		delete(a.wallets, path)
		release = append(release, w)
	}
	a.mu.Unlock()
	for _, w := range release {
		// Close waits for the reads that started before the wallet was taken out of the map.
		if err := w.store.Close(); err != nil {
			a.log.Warn("release a wallet no longer protected", "err", err)
		}
	}
}

// walletOf returns the wallet a destination backs up: the one it names, or the only one.
func walletOf(c api.Config, d api.Destination) (api.WalletRef, error) {
	for _, w := range c.Wallets {
		if w.Path == d.Wallet || (d.Wallet == "" && len(c.Wallets) == 1) {
			return w, nil
		}
	}
	return api.WalletRef{}, api.WithHint(fmt.Errorf("destination %s: no wallet %q configured: %w", d.ID, d.Wallet, wallet.ErrNotFound),
		"add the wallet first, or name it in the destination")
}

// findDestination returns the destination with id.
func findDestination(c api.Config, id string) (api.Destination, error) {
	for _, d := range c.Destinations {
		if d.ID == id {
			return d, nil
		}
	}
	return api.Destination{}, fmt.Errorf("destination %q: %w", id, wallet.ErrNotFound)
}

// identities returns the identities of w to back up: the configured ones, or every user in
// the wallet.
func (h *walletHandle) identities(ctx context.Context, ref api.WalletRef) ([]string, error) {
	if len(ref.Identities) > 0 {
		return ref.Identities, nil
	}
	info, err := h.store.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range info.Identities {
		out = append(out, id.IdentityKey)
	}
	if len(out) == 0 {
		return nil, api.WithHint(fmt.Errorf("wallet %s holds no identity: %w", ref.Path, wallet.ErrNotFound), "the wallet has no user yet")
	}
	return out, nil
}

// forgetBrowsers signs every browser out: a new sign-in key, in the data folder and in the
// server at once.
func (a *Agent) forgetBrowsers() error {
	key, err := a.opts.Dir.ForgetBrowsers()
	if err != nil {
		return fmt.Errorf("forget browsers: %w", err)
	}
	a.srv.SetSessionKey(key)
	a.log.Info("every browser signed out")
	return nil
}
