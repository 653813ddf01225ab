// Package scheduler decides who may touch the local wallet store, and when, and how big each
// background page may be.
//
// Two parts, both per DESIGN.md section 4:
//
//   - Queue, the access queue. Every access to the wallet asks it for a Grant through a Session:
//     foreground before background, readers shared (as far as the store's capabilities
//     allow, beside one writer on a store with wallet.Capabilities.ReadsBesideWriter),
//     writers exclusive among writers, background never starved, sessions fenced by
//     destination generation.
//     See queue.go for the scheduling rules, grant.go for Acquire and Release, session.go for
//     sessions, fencing and destination switches, metrics.go for what the dashboard sees.
//   - Budget, the adaptive page budget (budget.go). It picks each background page's row and
//     byte limits from a fitted cost model so that a commit stays near a target time, which
//     keeps a foreground request's wait to at most one short commit.
//
// The package holds no global state and performs no I/O; its only clock is the time package,
// so tests run it inside testing/synctest bubbles.
package scheduler
