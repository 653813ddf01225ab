package agent

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"walletsync/agent/api"
)

// DefaultPort is the loopback port the agent's API and dashboard listen on when its
// config remembers none: 7421, below Linux's ephemeral range (32768-60999, where an
// outgoing connection of any program may hold a port at boot) and, as far as IANA's
// registry and the BSV wallets' own defaults (3321 for a BRC-100 wallet) go, nobody
// else's.
const DefaultPort = 7421

// DefaultAddr is the address of DefaultPort, on 127.0.0.1.
var DefaultAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultPort))

// addrFallbacks is how many ports after a taken one the agent tries before it takes any
// free port: a neighbour keeps the address easy to recognise (127.0.0.1:7422), and ten
// cover a handful of agents of other data folders and a stray program.
const addrFallbacks = 9

// checkStableAddr reports why addr cannot be a remembered address: it must be a loopback
// host:port with a port of 1-65535 (port 0 would move on every start).
func checkStableAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("not host:port")
	}
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return errors.New("not a loopback address (127.0.0.1, ::1 or localhost)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("the port must be 1-65535")
	}
	return nil
}

// addrCandidates returns the addresses to try, in order, for the stable address wanted:
// wanted, the next addrFallbacks ports (up to 65535), then any free port.
func addrCandidates(wanted string) []string {
	host, port, _ := net.SplitHostPort(wanted) // checked by checkStableAddr
	n, _ := strconv.Atoi(port)
	out := []string{wanted}
	for p := n + 1; p <= n+addrFallbacks && p <= 65535; p++ {
		out = append(out, net.JoinHostPort(host, strconv.Itoa(p)))
	}
	return append(out, net.JoinHostPort(host, "0"))
}

// isListenError reports a failure to listen on an address (taken, or refused by the
// system, as Windows does for its reserved port ranges), as opposed to an address the
// server refuses outright.
func isListenError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "listen"
}

// newServer starts the API server. An explicit opts.Addr is used as it is. Without one
// the agent listens where its config says (Config.Addr), else at DefaultAddr; when that
// address is taken it tries the next ports and then any free one, says so in a.addrNotice
// and the log, and remembers the address it took in the config, so that the next start,
// and the dashboards left open in browsers, find it there again.
func (a *Agent) newServer(so api.ServerOptions) (*api.Server, error) {
	if a.opts.Addr != "" {
		so.Addr = a.opts.Addr
		return api.NewServer(so)
	}
	wanted := a.config().Addr
	if wanted == "" {
		wanted = DefaultAddr
	}
	var srv *api.Server
	var first error
	for _, addr := range addrCandidates(wanted) {
		so.Addr = addr
		var err error
		if srv, err = api.NewServer(so); err == nil {
			break
		}
		if !isListenError(err) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if srv == nil {
		return nil, first
	}
	got := srv.Addr()
	if first != nil {
		why := fmt.Sprintf("cannot be listened on (%v)", errors.Unwrap(first))
		if errors.Is(first, syscall.EADDRINUSE) {
			why = "is taken by another program"
		}
		a.addrNotice = fmt.Sprintf("%s %s; the dashboard is at %s instead", wanted, why, srv.URL())
		a.log.Warn("dashboard address taken: listening on another", "wanted", wanted, "addr", got, "err", first)
	}
	if got == a.config().Addr {
		return srv, nil
	}
	if err := a.rememberAddr(got); err != nil {
		a.log.Warn("dashboard address not remembered", "addr", got, "err", err)
		if first != nil {
			a.addrNotice += fmt.Sprintf(", for this run only: it could not be remembered in %s (%v)", a.opts.ConfigPath, err)
		}
		return srv, nil
	}
	if first != nil {
		a.addrNotice += fmt.Sprintf(", from now on (remembered as \"addr\" in %s: change it there to choose another port)", a.opts.ConfigPath)
	}
	return srv, nil
}

// rememberAddr writes addr into the config as its Addr. Nothing runs yet that would
// need telling (the timetable, the pages): the config only gains the address it serves.
func (a *Agent) rememberAddr(addr string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := cloneConfig(a.cfg)
	next.Addr = addr
	if err := SaveConfig(a.opts.ConfigPath, next); err != nil {
		return err
	}
	a.cfg = next
	return nil
}

// AddrNotice says, in words for the person, that the agent could not listen at its usual
// address and where the dashboard is instead; "" when it listens where it meant to.
func (a *Agent) AddrNotice() string { return a.addrNotice }
