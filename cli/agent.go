package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/frontend"
	"walletsync/syncer"
)

// agentFlags are the flags every command that runs or reaches the agent shares.
type agentFlags struct {
	dataDir, config *string
}

func addAgentFlags(fs *flag.FlagSet) agentFlags {
	return agentFlags{
		dataDir: fs.String("data-dir", "", "the agent's data folder (default: the platform's data folder)/walletsync"),
		config:  fs.String("config", "", "the config file (default: the platform's config folder/walletsync/config.json)"),
	}
}

func (f agentFlags) dir() (agent.DataDir, error) {
	if *f.dataDir != "" {
		return agent.DataDir(*f.dataDir), nil
	}
	return agent.DefaultDataDir()
}

// client finds the running agent through the port and token files in its data folder.
func (f agentFlags) client() (*api.Client, error) {
	dir, err := f.dir()
	if err != nil {
		return nil, err
	}
	e, err := dir.Endpoint()
	if err != nil {
		return nil, err
	}
	return api.NewClient(e), nil
}

// runAgent runs the agent in the foreground until SIGINT or SIGTERM, under the platform's
// service library (so the same path serves `walletsync service` and a terminal).
func runAgent(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("agent", "[--data-dir D] [--config F] [--addr 127.0.0.1:PORT]", out)
	af := addAgentFlags(fs)
	addr := fs.String("addr", "", "the API's loopback address for this run only, e.g. 127.0.0.1:0 for any free port (default: the one the config remembers, first "+agent.DefaultAddr+")")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	dir, err := af.dir()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// First, so that a service log names the binary that wrote everything after it.
	fmt.Fprintln(out, currentBuild())
	return agent.RunService(ctx, func(ctx context.Context) error {
		return agent.Run(ctx, agent.Options{Dir: dir, ConfigPath: *af.config, Addr: *addr, Version: Version, Logger: log, Dashboard: frontend.Handler()},
			func(a *agent.Agent) {
				if n := a.AddrNotice(); n != "" {
					fmt.Fprintln(out, n)
				}
				fmt.Fprintf(out, "walletsync agent running; dashboard: %s\n", a.LoginURL())
			})
	})
}

// runService installs, removes, starts, stops or reports the platform service that runs
// `walletsync agent`.
func runService(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("service", "install|uninstall|start|stop|status [--data-dir D]", out)
	af := addAgentFlags(fs)
	if err := command.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: say install, uninstall, start, stop or status", command.ErrUsage)
	}
	agentArgs := []string{"agent"}
	if *af.dataDir != "" {
		agentArgs = append(agentArgs, "--data-dir", *af.dataDir)
	}
	if *af.config != "" {
		agentArgs = append(agentArgs, "--config", *af.config)
	}
	svc, err := agent.NewService(agent.ServiceOptions{Arguments: agentArgs})
	if err != nil {
		return err
	}
	switch verb := fs.Arg(0); verb {
	case "install":
		err = svc.Install()
	case "uninstall":
		err = svc.Uninstall()
	case "start":
		err = svc.Start()
	case "stop":
		err = svc.Stop()
	case "status":
		st, err := svc.Status()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "service (%s): %s\n", svc.Platform(), st)
		return nil
	default:
		return fmt.Errorf("%w: unknown service action %q", command.ErrUsage, verb)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "service %s: done\n", fs.Arg(0))
	return nil
}

// runWalletProtect asks the running agent to protect a wallet file, as the dashboard's
// first-run step does; a relative path is taken from the current folder.
func runWalletProtect(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("wallet protect", "--db FILE [--data-dir D] [--json]", out)
	af := addAgentFlags(fs)
	db := fs.String("db", "", "the wallet app's SQLite wallet file")
	asJSON := fs.Bool("json", false, "print the agent's config as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("db", *db); err != nil {
		return err
	}
	path, err := filepath.Abs(*db)
	if err != nil {
		return fmt.Errorf("protect wallet %s: %w", *db, err)
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	cfg, err := c.AddWallet(ctx, api.WalletRef{Path: path})
	if err != nil {
		return err
	}
	return command.Report(out, *asJSON, cfg, func(w io.Writer) {
		fmt.Fprintf(w, "walletsync now protects %s\n", path)
		if len(cfg.Destinations) == 0 {
			fmt.Fprintln(w, "next: add a destination in the dashboard to make the first backup")
		}
	})
}

// errNeedsAttention is `walletsync status --check`'s failure: a destination is late or
// failing (exit code 1).
var errNeedsAttention = errors.New("backups need attention")

// runStatus prints the agent's overview. With --check it is for scripts that monitor:
// one line per late or failing destination and exit code 1, or one OK line and 0; an
// agent that does not answer fails too, since then nothing is being backed up.
func runStatus(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("status", "[--check] [--data-dir D] [--json]", out)
	af := addAgentFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	check := fs.Bool("check", false, "print only what is late or failing, one line each, and exit 1 if anything is")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	ov, err := c.Overview(ctx)
	if err != nil {
		return err
	}
	if *check {
		return checkAlerts(out, *asJSON, ov)
	}
	return command.Report(out, *asJSON, ov, func(w io.Writer) {
		fmt.Fprintln(w, ov.Health)
		fmt.Fprintf(w, "  dashboard %s (to sign in: walletsync open, the tray, or the desktop window)\n", c.Address())
		if len(ov.Wallets) == 0 {
			fmt.Fprintln(w, "  first, choose the wallet to protect: walletsync wallet protect --db FILE (or on the dashboard)")
		}
		for _, d := range ov.Destinations {
			state := "not backed up here yet"
			if !d.LastSuccess.IsZero() {
				state = "last good " + d.LastSuccess.Local().Format("2006-01-02 15:04")
			}
			if !d.LastConfirmed.IsZero() {
				state += ", server confirmed " + d.LastConfirmed.Local().Format("2006-01-02 15:04")
			}
			if d.Alert != nil {
				state += ", " + strings.ToUpper(string(d.Alert.Kind))
			}
			if d.Paused {
				state += ", paused"
			}
			if d.Running != nil {
				state += ", " + string(d.Running.State) + " " + d.Running.Detail
			}
			fmt.Fprintf(w, "  %-12s %-7s %s: %s\n", d.ID, d.Kind, d.Path, state)
		}
	})
}

// checkAlerts is `walletsync status --check`'s report: each alert of ov on one line ("late
// backup-folder: Backups to ... are late ... Run it now ..."), failing with
// errNeedsAttention when there is any, or one OK line. An agent with no wallet or no
// destination fails as well, with its health sentence: nothing is backed up there.
func checkAlerts(out io.Writer, asJSON bool, ov api.Overview) error {
	if len(ov.Wallets) == 0 || len(ov.Destinations) == 0 {
		if err := command.Report(out, asJSON, ov.Alerts, func(w io.Writer) { fmt.Fprintln(w, "unprotected: "+ov.Health) }); err != nil {
			return err
		}
		return fmt.Errorf("check status: nothing is backed up: %w", errNeedsAttention)
	}
	if err := command.Report(out, asJSON, ov.Alerts, func(w io.Writer) {
		for _, a := range ov.Alerts {
			fmt.Fprintf(w, "%s %s: %s %s\n", a.Kind, a.Destination, a.Text, a.Fix)
		}
		if len(ov.Alerts) == 0 {
			fmt.Fprintf(w, "OK: no destination is late or failing (%d checked)\n", len(ov.Destinations))
		}
	}); err != nil {
		return err
	}
	if n := len(ov.Alerts); n > 0 {
		return fmt.Errorf("check status: %d of %d destinations late or failing: %w", n, len(ov.Destinations), errNeedsAttention)
	}
	return nil
}

// runTasks lists the agent's tasks, newest first, under a header: when each started, how
// long it took (or has run so far), and its outcome; a finished task shows how it ended,
// never the step it was on.
func runTasks(ctx context.Context, args []string, out io.Writer) error {
	return askAgent(ctx, args, out, "tasks", (*api.Client).Tasks, func(w io.Writer, _ *api.Client, tasks []api.Task) {
		writeTasks(w, tasks, time.Now())
	})
}

// writeTasks prints tasks as `walletsync tasks` does, newest first by when each was queued.
func writeTasks(w io.Writer, tasks []api.Task, now time.Time) {
	if len(tasks) == 0 {
		fmt.Fprintln(w, "no tasks yet")
		return
	}
	tasks = slices.Clone(tasks)
	slices.SortStableFunc(tasks, func(a, b api.Task) int { return b.QueuedAt.Compare(a.QueuedAt) })
	fmt.Fprintf(w, "%-16s  %-8s  %-7s  %-12s  %8s  %-16s  %s\n", "STARTED", "TOOK", "KIND", "TARGET", "ROWS", "ID", "OUTCOME")
	for _, t := range tasks {
		started := "not yet"
		if !t.StartedAt.IsZero() {
			started = t.StartedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "%-16s  %-8s  %-7s  %-12s  %8d  %-16s  %s\n", started, taskDuration(t, now), t.Kind, t.Target, t.Counters.Rows, t.ID, taskOutcome(t))
	}
}

// taskDuration is how long t ran, or has run so far; "-" before it started.
func taskDuration(t api.Task, now time.Time) string {
	if t.StartedAt.IsZero() {
		return "-"
	}
	end := now
	if t.State.Terminal() && !t.FinishedAt.IsZero() {
		end = t.FinishedAt
	}
	switch d := end.Sub(t.StartedAt); {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// taskOutcome says how t ended (with the reason in words when it failed), or, while it
// runs, the step it is on.
func taskOutcome(t api.Task) string {
	switch {
	case t.State == api.TaskFailed || t.State == api.TaskInterrupted:
		return string(t.State) + ": " + firstNonEmpty(t.Message, t.Error)
	case t.Skipped() != "":
		return "skipped: " + t.Skipped()
	case t.State.Terminal():
		return string(t.State)
	case t.Detail != "":
		return string(t.State) + ": " + t.Detail
	}
	return string(t.State)
}

// askAgent is a command that reads one answer from the running agent (status, tasks): it
// takes the agent flags and --json, makes the one call, and prints the answer as JSON or
// with text.
func askAgent[T any](ctx context.Context, args []string, out io.Writer, name string, call func(*api.Client, context.Context) (T, error), text func(io.Writer, *api.Client, T)) error {
	fs := command.NewFlags(name, "[--data-dir D] [--json]", out)
	af := addAgentFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	v, err := call(c, ctx)
	if err != nil {
		return err
	}
	return command.Report(out, *asJSON, v, func(w io.Writer) { text(w, c, v) })
}

// runRun asks the agent to bring a destination up to date now; with --wait it watches the
// run on the progress line `sync` draws and returns the run's outcome: nil when it
// succeeded, command.ErrCancelled when it was cancelled, else the failure in words.
func runRun(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("run", "DEST [--wait] [--data-dir D] [--json]", out)
	af := addAgentFlags(fs)
	asJSON := fs.Bool("json", false, "print the task as JSON (with --wait: the finished task)")
	wait := fs.Bool("wait", false, "watch the run and exit with its outcome: 0 when it succeeds, 1 when it fails, 130 when it is cancelled")
	if err := command.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one destination", command.ErrUsage)
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	t, err := c.Run(ctx, fs.Arg(0))
	if err != nil {
		return unknownDestination(ctx, c, fs.Arg(0), err)
	}
	if !*wait {
		return command.Report(out, *asJSON, t, func(w io.Writer) {
			fmt.Fprintf(w, "task %s: %s %s %s\n", t.ID, t.Kind, t.Target, t.State)
		})
	}
	if !*asJSON {
		fmt.Fprintf(out, "task %s: %s %s %s\n", t.ID, t.Kind, t.Target, t.State)
	}
	t, err = watchTask(ctx, c, t, command.NewProgressLine(out), *asJSON)
	if err != nil {
		return err
	}
	if err := command.Report(out, *asJSON, t, func(w io.Writer) { fmt.Fprintln(w, taskSummary(t)) }); err != nil {
		return err
	}
	return taskErr(t)
}

// taskPoll is how often `run --wait` asks the agent about the task: the agent publishes a
// task's progress at most 4 times a second, so asking more often shows nothing new.
const taskPoll = 250 * time.Millisecond

// watchTask asks the agent about t until it ends, drawing its progress on bar: a sync's
// phase, table, pages, bytes, rows, rate and time left as `sync` draws them; any other
// step (a storage server that does not answer, a key being derived) as a note, which is
// printed off a terminal too. It returns the ended task, or, when ctx ends first (Ctrl-C),
// an error matching command.ErrCancelled that says the run goes on.
func watchTask(ctx context.Context, c *api.Client, t api.Task, bar *command.ProgressLine, quiet bool) (api.Task, error) {
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	for !t.State.Terminal() {
		if !quiet {
			drawTask(bar, t)
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("stopped watching task %s, which goes on (walletsync cancel %s stops it): %w", t.ID, t.ID, command.ErrCancelled)
		case <-tick.C:
		}
		next, err := c.Task(ctx, t.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue // said above, on the next turn
			}
			return t, fmt.Errorf("watch task %s: %w", t.ID, err)
		}
		t = next
	}
	return t, nil
}

// drawTask draws a running task on bar.
func drawTask(bar *command.ProgressLine, t api.Task) {
	phase, table, _ := strings.Cut(t.Detail, " ")
	switch {
	case isPagePhase(syncer.State(phase)):
		bar.Update(false, "%s", progressLine(phase, table, t.Counters.Pages, "pages", t.Counters.Bytes,
			command.ProgressText(t.Counters.Rows, t.Total, t.RowsPerSec)))
	case t.Detail != "":
		bar.Note(t.Detail)
	}
}

// isPagePhase reports whether s is a page session's step (not its end).
func isPagePhase(s syncer.State) bool {
	switch s {
	case syncer.StateReading, syncer.StatePreparing, syncer.StateCommitting, syncer.StateCommitted:
		return true
	}
	return false
}

// taskSummary is the line that says how a watched task ended.
func taskSummary(t api.Task) string {
	took := taskDuration(t, time.Now())
	switch {
	case t.State == api.TaskSucceeded && t.Kind == api.KindSync && t.Counters.Rows == 0:
		return fmt.Sprintf("succeeded: %s %s, already up to date (nothing new to copy), in %s", t.Kind, t.Target, took)
	case t.State == api.TaskSucceeded && t.Counters.Pages > 0:
		return fmt.Sprintf("succeeded: %s %s, %d pages, %d rows (%d inserted, %d updated), %s in %s",
			t.Kind, t.Target, t.Counters.Pages, t.Counters.Rows, t.Counters.Inserts, t.Counters.Updates, command.HumanBytes(t.Counters.Bytes), took)
	case t.State == api.TaskSucceeded:
		return fmt.Sprintf("succeeded: %s %s, %d rows, %s in %s", t.Kind, t.Target, t.Counters.Rows, command.HumanBytes(t.Counters.Bytes), took)
	case t.State == api.TaskCancelled:
		return fmt.Sprintf("cancelled: %s %s after %s; what was acknowledged is kept", t.Kind, t.Target, took)
	}
	return fmt.Sprintf("%s: %s %s after %s", t.State, t.Kind, t.Target, took)
}

// taskErr is an ended task's outcome as a command's error: nil for a success,
// command.ErrCancelled for a cancel, else why it failed, in the agent's plain words, with
// its hint.
func taskErr(t api.Task) error {
	switch t.State {
	case api.TaskSucceeded:
		return nil
	case api.TaskCancelled:
		return command.ErrCancelled
	}
	err := fmt.Errorf("%s %s %s: %s", t.Kind, t.Target, t.State, firstNonEmpty(t.Message, t.Error, "no reason given"))
	if t.Hint != "" {
		return api.WithHint(err, t.Hint)
	}
	return err
}

// runPause holds a destination's (or every destination's) scheduled runs back.
func runPause(ctx context.Context, args []string, out io.Writer) error {
	return pauseOrResume(ctx, "pause", args, out)
}

// runResume lets scheduled runs go again.
func runResume(ctx context.Context, args []string, out io.Writer) error {
	return pauseOrResume(ctx, "resume", args, out)
}

func pauseOrResume(ctx context.Context, verb string, args []string, out io.Writer) error {
	fs := command.NewFlags(verb, "DEST|--all [--for 2h] [--data-dir D]", out)
	af := addAgentFlags(fs)
	all := fs.Bool("all", false, "every destination")
	var forDur time.Duration
	if verb == "pause" {
		fs.DurationVar(&forDur, "for", 0, "how long (default: until resumed)")
	}
	if err := command.ParseFlags(fs, args); err != nil {
		return err
	}
	if *all == (fs.NArg() == 1) || fs.NArg() > 1 {
		return fmt.Errorf("%w: name one destination or say --all", command.ErrUsage)
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	switch {
	case verb == "pause" && *all:
		_, err = c.PauseAll(ctx, forDur)
	case verb == "pause":
		_, err = c.Pause(ctx, fs.Arg(0), forDur)
	case *all:
		_, err = c.ResumeAll(ctx)
	default:
		_, err = c.Resume(ctx, fs.Arg(0))
	}
	if err != nil {
		return unknownDestination(ctx, c, fs.Arg(0), err)
	}
	what := "every destination"
	if !*all {
		what = fs.Arg(0)
	}
	fmt.Fprintf(out, "%sd %s\n", verb, what)
	return nil
}

// unknownDestination gives an agent's "not found" for a destination name the hint a person
// needs: the name they probably meant and every valid one. Any other error, and nil, is
// returned as it is.
func unknownDestination(ctx context.Context, c *api.Client, name string, err error) error {
	if ae, ok := errors.AsType[*api.APIError](err); !ok || ae.Code != "not_found" {
		return err
	}
	dests, lerr := c.Destinations(ctx)
	if lerr != nil {
		return err
	}
	ids := make([]string, len(dests))
	for i, d := range dests {
		ids[i] = d.ID
	}
	return api.WithHint(err, command.DidYouMean("destination", name, ids))
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
