package api

import (
	"time"
	"walletsync/wallet"
)

// Overview answers, at a glance, "is my wallet backed up, where, and when was the last good
// backup?". It is the body of GET /api/v1/overview.
type Overview struct {
	// Health is the answer in one sentence, without jargon; Healthy says whether it is good
	// news.
	Health  string `json:"health"`
	Healthy bool   `json:"healthy"`
	// Alerts are the destinations that need the person now, in the order of Destinations:
	// each is late or failing. The dashboard, the tray and `walletsync status --check`
	// show them in red; an empty list is never red.
	Alerts       []Alert           `json:"alerts"`
	Wallets      []WalletView      `json:"wallets"`
	Destinations []DestinationView `json:"destinations"`
	// Tasks are the running and queued tasks.
	Tasks []Task    `json:"tasks"`
	Now   time.Time `json:"now"`
	// StartCommand is the command that starts this agent again (with its data folder and
	// config when they are not the defaults): the dashboard shows it when the agent stops.
	StartCommand string `json:"startCommand"`
}

// WalletView is a configured wallet and, when it opens, its identities' summaries.
type WalletView struct {
	Path       string           `json:"path"`
	Chain      wallet.Chain     `json:"chain,omitempty"`
	Identities []wallet.Summary `json:"identities"`
	// Error says in plain words why the wallet does not open, ErrorHint what to do, and
	// ErrorDetail the technical text.
	Error       string `json:"error,omitempty"`
	ErrorHint   string `json:"errorHint,omitempty"`
	ErrorDetail string `json:"errorDetail,omitempty"`
	// ImportInProgress is the merge into the wallet that started and did not finish: the
	// wallet holds part of a backup until it is finished or abandoned.
	ImportInProgress *wallet.ImportRecord `json:"importInProgress,omitempty"`
}

// DestinationView is a destination with what its task history says about it.
type DestinationView struct {
	Destination
	Paused      bool      `json:"paused"`
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	// LastFailure, LastError (technical), LastMessage (plain words), LastPath and LastHint
	// describe the newest failure after the last success.
	LastFailure time.Time `json:"lastFailure,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
	LastMessage string    `json:"lastMessage,omitempty"`
	LastPath    string    `json:"lastPath,omitempty"`
	LastHint    string    `json:"lastHint,omitempty"`
	// Running is the destination's running or queued task.
	Running *Task `json:"running,omitempty"`
	// NextRun is when the schedule next brings the destination up to date, and why.
	NextRun    time.Time `json:"nextRun,omitzero"`
	NextReason Reason    `json:"nextReason,omitempty"`
	// LastVerified is when a restore drill (or a verify) last proved one of a backup
	// folder's files good; LastVerifyError says why the newest file's check failed, if it
	// did. Both are empty for a backup wallet file, which drills do not check.
	LastVerified    time.Time `json:"lastVerified,omitzero"`
	LastVerifyError string    `json:"lastVerifyError,omitempty"`
	// LastConfirmed, for a storage server, is when the server acknowledged the final
	// chunk of the newest push that completed: when it last confirmed holding the backup.
	LastConfirmed time.Time `json:"lastConfirmed,omitzero"`
	// LateAt is when the destination becomes late if no backup succeeds before it: the
	// last good backup plus the schedule's expected interval and a margin (see
	// Alert). Zero when it cannot be late: it never succeeded, or it waits for the wallet
	// to change.
	LateAt time.Time `json:"lateAt,omitzero"`
	// Alert is set when the destination is late or failing: its red state.
	Alert *Alert `json:"alert,omitempty"`
}

// AlertKind says why a destination is red. The strings are a wire format.
type AlertKind string

// Alert kinds.
const (
	// AlertFailing: the newest run after the last good backup failed.
	AlertFailing AlertKind = "failing"
	// AlertLate: the last good backup is older than the schedule's expected interval plus
	// the margin, half the interval and at least 15 minutes. An interval schedule expects
	// a backup every Every, a daily one every 24 hours, and an on-change one within ten
	// debounces of the wallet's last write.
	AlertLate AlertKind = "late"
)

// Alert is a destination's red state, distinct from the amber of "not backed up yet":
// backups there were good and are now late, or are failing.
type Alert struct {
	Destination string    `json:"destination"` // the destination's ID
	Kind        AlertKind `json:"kind"`
	// Since is when it turned red: the failure's time, or the moment it became late.
	Since time.Time `json:"since"`
	// Text names the destination and says what is wrong; Fix says what to do about it.
	Text string `json:"text"`
	Fix  string `json:"fix"`
}

// Reason says why the timetable started a run. The strings are a wire format (task logs,
// the API) and never change.
type Reason string

// Reasons for a run. The first three are the schedule kinds.
const (
	ReasonInterval Reason = "interval" // an interval schedule's time came
	ReasonDaily    Reason = "daily"    // a daily schedule's time came
	ReasonChange   Reason = "change"   // the wallet was written, and then left alone for the debounce
	// ReasonMissed: the run's time passed while it could not start (the agent was stopped,
	// the machine slept, the destination was paused, its previous run was still going), or
	// the destination has never run. It runs once, however many times were missed.
	ReasonMissed Reason = "missed"
	ReasonManual Reason = "manual" // a person asked for it ("run now"); pauses do not hold it back
)
