package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"walletsync/agent/api"
)

// Notification is one desktop notification: a title a person takes in at a glance, and a
// line saying what happened.
type Notification struct {
	Title string
	Body  string
}

// ErrNoNotifications: the system has no desktop notification service walletsync can use
// (no D-Bus session on Linux, say).
var ErrNoNotifications = errors.New("no desktop notification service")

// Notifier shows desktop notifications. SystemNotifier returns the platform's; the App
// and the tray take any, so that tests can watch what would be shown. Notify returns an
// error when the platform refused or has no notification service; the caller logs it,
// since a notification is never worth stopping for.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// notificationFor returns the notification an agent event deserves, if any. Two things
// are worth interrupting a person for: a backup that failed (a sync to a backup wallet or a
// backup file), because "it's backed up" is no longer true, and a restore that finished,
// because they are waiting for it. Everything else shows in the window and the tray.
// destinationName turns a destination id into the name the person gave it.
func notificationFor(ev api.StreamedEvent, destinationName func(id string) string) (Notification, bool) {
	if ev.Type != api.EventTaskFinished {
		return Notification{}, false
	}
	var t api.Task
	if err := json.Unmarshal(ev.Data, &t); err != nil {
		return Notification{}, false
	}
	switch {
	case (t.Kind == api.KindSync || t.Kind == api.KindBackup) && t.State == api.TaskFailed:
		return Notification{Title: "Backup failed", Body: withHint("The backup to "+destinationName(t.Target)+" failed: "+t.Error, t.Hint)}, true
	case t.Kind == api.KindImport && t.State == api.TaskSucceeded:
		return Notification{Title: "Restore finished", Body: "Your wallet has been restored from the backup file."}, true
	case t.Kind == api.KindImport && t.State == api.TaskFailed:
		return Notification{Title: "Restore failed", Body: withHint("Nothing was changed in your wallet: "+t.Error, t.Hint)}, true
	}
	return Notification{}, false
}

// destinationName returns the name of destination id from the agent's config, or id
// itself when the agent cannot say.
func destinationName(ctx context.Context, endpoint EndpointFunc, id string) string {
	e, err := endpoint(ctx)
	var dests []api.Destination
	if err == nil {
		dests, err = api.NewClient(e).Destinations(ctx)
	}
	for _, d := range dests {
		if err == nil && d.ID == id && d.Name != "" {
			return d.Name
		}
	}
	return id
}

func withHint(text, hint string) string {
	if hint == "" {
		return text
	}
	return text + " " + hint
}

// NotifyEvents follows the agent's events after cursor (see followEvents) and shows the
// notifications they deserve, until ctx ends. A notification that cannot be shown is logged
// and skipped.
func NotifyEvents(ctx context.Context, endpoint EndpointFunc, cursor string, n Notifier, log *slog.Logger) {
	err := followEvents(ctx, endpoint, cursor, log, func(ev api.StreamedEvent) {
		note, ok := notificationFor(ev, func(id string) string { return destinationName(ctx, endpoint, id) })
		if !ok {
			return
		}
		if err := n.Notify(ctx, note); err != nil {
			log.Warn("desktop notification not shown", "title", note.Title, "err", err)
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("agent events stopped", "err", err)
	}
}
