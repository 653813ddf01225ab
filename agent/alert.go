package agent

import (
	"cmp"
	"fmt"
	"time"
	"walletsync/agent/api"
)

// minLateMargin is the least a destination may fall behind its schedule before it is late.
// A run takes time of its own: a backup file costs an Argon2id derivation (seconds on a
// busy machine), a first sync of a big wallet minutes, and the timetable looks at least
// once a minute (once a minute after a laptop wakes). Fifteen minutes covers all of them,
// so that a 1-minute or 5-minute interval does not flash red while its run is on the way.
const minLateMargin = 15 * time.Minute

// lateMargin is how much later than its expected interval every a destination's last good
// backup may be before it is late: half the interval, and at least minLateMargin. Half the
// interval keeps a daily backup, which runs when the agent next starts if the computer
// was off at its time, from showing red until a day and a half has gone by without one;
// an hourly one is red after 90 minutes.
func lateMargin(every time.Duration) time.Duration {
	return max(every/2, minLateMargin)
}

// expectedEvery is how often schedule s brings a destination up to date: an interval's
// Every, a day for a daily schedule, and for an on-change schedule the longest the
// timetable waits after a write (debounceCeiling debounces).
func expectedEvery(s api.Schedule) time.Duration {
	switch s.Kind {
	case api.ScheduleInterval:
		return time.Duration(s.Every)
	case api.ScheduleDaily:
		return 24 * time.Hour
	}
	return debounceCeiling * time.Duration(cmp.Or(s.Debounce, api.Duration(api.DefaultDebounce)))
}

// lateAt returns when v becomes late without another good backup, zero when it cannot be
// late: it has never succeeded (that is amber, "not backed up yet"), or, on change, the
// wallet has not been written since (walletWrite, the wallet file's last write, zero when
// unknown).
func lateAt(v api.DestinationView, walletWrite time.Time) time.Time {
	if v.LastSuccess.IsZero() {
		return time.Time{}
	}
	every, from := expectedEvery(v.Schedule), v.LastSuccess
	if v.Schedule.Kind == api.ScheduleChange {
		if !walletWrite.After(v.LastSuccess) {
			return time.Time{}
		}
		from = walletWrite
	}
	return from.Add(every + lateMargin(every))
}

// alertFor returns v's red state at now, nil when it has none. A failure after the last
// good backup makes it failing; a last good backup past v.LateAt makes it late, paused or
// not: a pause holds new backups back, so the backups there age all the same, and the fix
// then says to resume.
func alertFor(v api.DestinationView, now time.Time) *api.Alert {
	where := fmt.Sprintf("%s (%s)", v.Name, v.Path)
	if !v.LastFailure.IsZero() {
		fix := v.LastHint
		if fix == "" {
			fix = fmt.Sprintf("Open Destinations, fix what the error says, then Run now (or walletsync run %s).", v.ID)
		}
		return &api.Alert{Destination: v.ID, Kind: api.AlertFailing, Since: v.LastFailure,
			Text: fmt.Sprintf("Backups to %s are failing since %s: %s", where, v.LastFailure.Local().Format("Jan 2 15:04"), cmp.Or(v.LastMessage, v.LastError)),
			Fix:  fix}
	}
	if v.LateAt.IsZero() || now.Before(v.LateAt) {
		return nil
	}
	var fix string
	switch {
	case v.Paused:
		fix = fmt.Sprintf("It is paused: resume it on the Destinations page (or walletsync resume %s).", v.ID)
	case v.Running != nil:
		fix = "A backup is running there now; if it does not finish, look at its log on the Activity page, cancel it and run it again."
	default:
		fix = fmt.Sprintf("Run it now on the Destinations page (or walletsync run %s), and look at its log on the Activity page if it does not succeed.", v.ID)
	}
	return &api.Alert{Destination: v.ID, Kind: api.AlertLate, Since: v.LateAt,
		Text: fmt.Sprintf("Backups to %s are late: the last good backup was %s, and one is expected %s.", where, ago(now.Sub(v.LastSuccess)), expectation(v.Schedule)),
		Fix:  fix}
}

// expectation says in words how often schedule s expects a good backup.
func expectation(s api.Schedule) string {
	switch s.Kind {
	case api.ScheduleInterval:
		return "every " + durationWords(time.Duration(s.Every))
	case api.ScheduleDaily:
		return "every day"
	}
	return "within " + durationWords(expectedEvery(s)) + " of a change to the wallet"
}

// durationWords says a duration as a person does: "1 hour", "90 minutes", "2 days".
func durationWords(d time.Duration) string {
	unit := func(n int64, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return unit(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute:
		return unit(int64(d/time.Minute), "minute")
	}
	return unit(int64(d/time.Second), "second")
}
