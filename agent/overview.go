package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"walletsync/agent/api"

	"walletsync/wallet"
)

// Overview gathers the overview from the config, the wallets (read under foreground
// grants) and the task history.
func (a *Agent) Overview(ctx context.Context) (api.Overview, error) {
	cfg := a.config()
	now := a.now()
	ov := api.Overview{Now: now.UTC(), Wallets: []api.WalletView{}, Destinations: []api.DestinationView{}, Tasks: []api.Task{}, Alerts: []api.Alert{}}
	for _, ref := range cfg.Wallets {
		wv := api.WalletView{Path: ref.Path, Identities: []wallet.Summary{}}
		err := a.foreground(ctx, ref.Path, func(w *walletHandle) error {
			var busy *wallet.ImportInProgressError
			if err := w.store.ImportInProgress(ctx); errors.As(err, &busy) {
				wv.ImportInProgress = &busy.Record
			} else if err != nil {
				return err
			}
			ids, err := w.identities(ctx, ref)
			if err != nil {
				return err
			}
			for _, id := range ids {
				sum, err := w.store.Summary(ctx, id)
				if err != nil {
					return err
				}
				wv.Chain = sum.Chain
				wv.Identities = append(wv.Identities, sum)
			}
			return nil
		})
		if err != nil {
			ex := api.Explain(api.AtPath(ref.Path, err))
			wv.Error, wv.ErrorHint, wv.ErrorDetail = ex.Message, ex.Hint, ex.Detail
		}
		ov.Wallets = append(ov.Wallets, wv)
	}
	tasks := a.tasks.List() // newest first
	for _, t := range tasks {
		if !t.State.Terminal() {
			ov.Tasks = append(ov.Tasks, t)
		}
	}
	for _, d := range cfg.Destinations {
		v := destinationView(d, a.placeOf(d), tasks, now)
		if a.sched != nil {
			v.NextRun, v.NextReason, _ = a.sched.Next(d.ID)
		}
		if d.Kind == api.DestinationFolder || d.Kind == api.DestinationBundles {
			if err := a.verification(ctx, d, &v); err != nil {
				return ov, err
			}
		}
		var write time.Time
		if ref, err := walletOf(cfg, d); err == nil && d.Schedule.Kind == api.ScheduleChange {
			write = lastModified(ref.Path)
		}
		v.LateAt = lateAt(v, write)
		if v.Alert = alertFor(v, now); v.Alert != nil {
			ov.Alerts = append(ov.Alerts, *v.Alert)
		}
		ov.Destinations = append(ov.Destinations, v)
	}
	ov.Health, ov.Healthy = health(ov, now)
	ov.StartCommand = a.startCommand()
	return ov, nil
}

// verification fills v's LastVerified and LastVerifyError from the backup records of d's
// folder (newest first).
func (a *Agent) verification(ctx context.Context, d api.Destination, v *api.DestinationView) error {
	recs, err := a.backupsHere(ctx, d)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.VerifiedAt.After(v.LastVerified) {
			v.LastVerified = r.VerifiedAt
		}
	}
	if len(recs) > 0 {
		v.LastVerifyError = recs[0].VerifyError
	}
	return nil
}

// startCommand is the command line that starts this agent: `walletsync agent`, with the
// data folder and config it runs with when they are not the defaults.
func (a *Agent) startCommand() string {
	cmd := a.command("agent")
	if def, err := defaultConfigPath(); err != nil || def != a.opts.ConfigPath {
		cmd += " --config " + shellQuote(a.opts.ConfigPath)
	}
	return cmd
}

// openCommand is the command line that signs a browser in to this agent: `walletsync
// open`, with the data folder when it is not the default (open finds the agent there).
func (a *Agent) openCommand() string { return a.command("open") }

// command is `walletsync VERB`, with --data-dir when this agent's is not the default.
func (a *Agent) command(verb string) string {
	cmd := "walletsync " + verb
	if def, err := DefaultDataDir(); err != nil || def != a.opts.Dir {
		cmd += " --data-dir " + shellQuote(string(a.opts.Dir))
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@,", r))
	}
	if s != "" && strings.IndexFunc(s, plain) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// destinationView reads a destination's last success and later failure at place, its
// place now, from the task history (newest first): the runs of a place it named before
// tell nothing about this one, but a run still going there is shown as running.
func destinationView(d api.Destination, place string, tasks []api.Task, now time.Time) api.DestinationView {
	v := api.DestinationView{Destination: d, Paused: d.Paused(now)}
	for _, t := range tasks {
		if t.Target != d.ID || !slices.Contains(backupKinds, t.Kind) || t.State.Terminal() && t.Place != place {
			continue
		}
		switch {
		case !t.State.Terminal():
			if v.Running == nil {
				tc := t
				v.Running = &tc
			}
		case t.State == api.TaskSucceeded:
			v.LastSuccess = t.FinishedAt
			if d.Kind == api.DestinationStorageServer {
				v.LastConfirmed = confirmedAt(t)
			}
			return v
		case t.State == api.TaskFailed && v.LastFailure.IsZero():
			v.LastFailure, v.LastError, v.LastMessage, v.LastPath, v.LastHint = t.FinishedAt, t.Error, t.Message, t.Path, t.Hint
		}
	}
	return v
}

// health is the overview in one sentence, and whether it is good news.
func health(ov api.Overview, now time.Time) (string, bool) {
	if len(ov.Wallets) == 0 {
		return "No wallet yet: add one to start keeping it safe.", false
	}
	for _, w := range ov.Wallets {
		if w.Error != "" {
			return fmt.Sprintf("The wallet %s cannot be opened: %s", w.Path, w.Error), false
		}
		if w.ImportInProgress != nil {
			return fmt.Sprintf("Import in progress into %s: finish it (import the same file again) or abandon it (Restore page); until then nothing syncs or exports it.", w.Path), false
		}
	}
	if len(ov.Destinations) == 0 {
		return "Nothing backs this wallet up yet: add a destination.", false
	}
	var newest time.Time
	var red, never, paused []api.DestinationView
	backed := 0
	for _, d := range ov.Destinations {
		switch {
		case d.Alert != nil:
			red = append(red, d)
		case d.LastSuccess.IsZero():
			never = append(never, d)
		case d.Paused:
			paused = append(paused, d)
		}
		if !d.LastSuccess.IsZero() {
			backed++
			if d.LastSuccess.After(newest) {
				newest = d.LastSuccess
			}
		}
	}
	if len(red) > 0 {
		text := red[0].Alert.Text + " " + red[0].Alert.Fix
		if more := len(red) - 1; more > 0 {
			text += fmt.Sprintf(" %d more destination%s late or failing too.", more, plural(more, " is", "s are"))
		}
		return text, false
	}
	var text string
	if backed == 0 {
		text = "Not backed up yet."
	} else {
		text = fmt.Sprintf("Backed up %s to %d of %d destinations.", ago(now.Sub(newest)), backed, len(ov.Destinations))
		if backed == len(ov.Destinations) {
			text = fmt.Sprintf("Backed up %s to %d destination%s.", ago(now.Sub(newest)), backed, plural(backed, "", "s"))
		}
	}
	for _, d := range never {
		switch {
		case d.Running != nil:
			text += fmt.Sprintf(" %s (%s): the first backup is running.", d.Name, d.Path)
		case d.Paused:
			text += fmt.Sprintf(" %s (%s) has never completed a backup, and is paused.", d.Name, d.Path)
		default:
			text += fmt.Sprintf(" %s (%s) has never completed a backup.", d.Name, d.Path)
		}
	}
	switch {
	case len(paused) == len(ov.Destinations):
		text += " Every destination is paused: nothing new is backed up until you resume them."
	case len(paused) > 0:
		text += fmt.Sprintf(" Paused: %s.", names(paused))
	}
	return text, len(never) == 0 && backed > 0
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// names lists the destinations' names: "A", "A and B", "A, B and C".
func names(ds []api.DestinationView) string {
	var ns []string
	for _, d := range ds {
		ns = append(ns, d.Name)
	}
	if len(ns) == 1 {
		return ns[0]
	}
	return strings.Join(ns[:len(ns)-1], ", ") + " and " + ns[len(ns)-1]
}

// ago says how long ago something happened, in the words a person uses.
func ago(d time.Duration) string {
	unit := func(n int, word string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s ago", word)
		}
		return fmt.Sprintf("%d %ss ago", n, word)
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int(d/time.Hour), "hour")
	}
	return unit(int(d/(24*time.Hour)), "day")
}
