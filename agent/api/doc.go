// Package api is the agent's HTTP API, everything a client needs to talk to a running
// agent and nothing of the daemon behind it:
//
//   - the route table (routes.go), the one definition that the server serves, the Client
//     builds its requests from, and the dashboard's web/api.js names;
//   - the request and response bodies (requests.go, results.go, config.go, task.go,
//     overview.go, paths.go, events.go), whose JSON is the wire format;
//   - the typed Client (client.go) and the event stream it reads;
//   - the Server (server.go): the loopback listener, its Host, token, Origin and body
//     checks, the built-in status, task, event and secret routes, and the plumbing
//     (Handle, WithBody, DecodeJSON) that the daemon serves its own routes through;
//   - the one-time login URLs (login.go), the browsers' signed 30-day sign-in cookies
//     (session.go) and the HTML sign-in page a page request gets without one (signin.go),
//     and the errors and their stable codes and plain
//     words (errors.go), which API error bodies and failed tasks carry.
//
// The daemon (package agent) serves it: its event bus, task manager and secrets are the
// Server's EventSource, TaskSource and SecretStore, and it adds its routes with Handle.
// This package never imports agent, so the command line, the window and the tests that
// only talk to an agent need nothing of the daemon.
package api
