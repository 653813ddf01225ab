// Package httpproxy puts real HTTP proxies on 127.0.0.1 between a client and the servers a
// test starts, for what a network and a load balancer do to walletsync's clients:
//
//   - Proxy (Start) breaks the requests a test scripts (Fault): it drops a connection before
//     the request reaches the server, loses the answer after the server has acted on it,
//     delays, truncates or corrupts a body, resets a connection (RST), delivers a request
//     twice, or moves the client to another upstream after a given request (SwitchAfter).
//   - Switcher (StartSwitcher) moves the client to another upstream after every answered
//     request, as a round-robin balancer without session affinity does at its worst.
//
// The client talks to the proxy's URL as it would to the server; everything not scripted
// passes through unchanged.
package httpproxy
