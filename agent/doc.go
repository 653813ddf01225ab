// Package agent is walletsync's daemon. Start opens a data folder (one agent per folder:
// a second gets *AgentRunningError) and runs, until Close, everything that keeps the
// configured wallets safe; Run does the same until its context ends, and RunService wraps
// it as the platform service.
//
// What it owns, file by file:
//
//   - the jobs (jobs.go, drill.go, imports.go): a sync of a wallet to a backup wallet
//     (package syncer), an encrypted backup file written into a folder and the folder's
//     retention (package portable, retention.go), the restore drill that restores the
//     newest backup file of each folder into a scratch wallet and compares its counts,
//     and exports and imports asked for by hand;
//   - the timetable (schedule.go), which starts each destination's job on its schedule
//     (an interval, daily, or when the wallet changes), by hand, never while paused, and
//     once for runs missed while the agent was stopped;
//   - the task manager (tasks.go): every job runs as a task with counters, a rate and an
//     ETA (internal/stats), a cancel at the next safe point, and a history in the agent's
//     state database (state.go);
//   - the event bus (events.go), with a sequence id and replay, which the dashboard, the
//     tray and the notifications follow, and the wallet latency probe (latency.go);
//   - the config, the secrets and the data folder (config.go, secrets.go, datadir.go);
//   - the loopback HTTP API that serves the dashboard (package agent/api, which holds the
//     routes, the bodies, the server and the Go client; handlers.go serves the agent's own
//     routes through it) at a stable address that the config remembers (address.go), and
//     the overview the dashboard and the tray show (overview.go).
//
// The wallets it opens are written only through it, each behind an access queue (package
// scheduler) that lets foreground reads through between the pages of background work.
//
// Close stops in this order, so that the last task events reach the event log: the API
// server (it ends the event streams), the timetable and the probe together; the tasks
// (running jobs stop at a safe point and are recorded as interrupted); the bus (the event
// log drains); the state database and the wallets; the published address; the lock.
//
// Secrets (the unattended backup password) travel as Secret values, which format, marshal
// and log as "[redacted]"; the manager and the server also scrub every text they publish
// of the stored secret values. Nothing but Secrets.Get returns a secret.
package agent
