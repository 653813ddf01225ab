package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"

	"walletsync/remote/auth"
)

// GiveUp is how long a sync keeps trying a storage server that does not answer before it
// fails, for the command line and the agent alike: long enough to ride out a server's
// restart (Node starting and migrating a toolbox store takes about 20 s on a busy machine,
// see toolbox.ClientOptions), short enough that a person watching a run learns within a
// minute that the server is down. The next scheduled run tries again.
const GiveUp = 60 * time.Second

// Host is the host (and port) of a storage server's URL, as a person names the server in a
// sentence; the URL itself when it has none.
func Host(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		return u.Host
	}
	return rawURL
}

// Reason says in a few words why a request to a server got no answer: "connection
// refused", "no such host", "no answer in time", "it answered HTTP 503", or the innermost
// error's own text.
func Reason(err error) string {
	var errno syscall.Errno
	var dns *net.DNSError
	var rej *auth.RejectedError
	var netErr net.Error
	switch {
	case errors.As(err, &rej):
		return fmt.Sprintf("it answered HTTP %d", rej.Status)
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host"
		}
		return "the name " + dns.Name + " does not resolve"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "no answer in time"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// Waiting is what a sync shows while the server at rawURL does not answer: "cannot reach
// HOST (attempt 5, next try in 4 s)".
func Waiting(rawURL string, attempt int, wait time.Duration) string {
	return fmt.Sprintf("cannot reach %s (attempt %d, next try in %s)", Host(rawURL), attempt, seconds(wait))
}

// CannotReach says why a sync failed on a server that did not answer: "cannot reach URL:
// connection refused", and with after set, "; gave up after 60 s".
func CannotReach(rawURL string, err error, after time.Duration) string {
	text := fmt.Sprintf("cannot reach %s: %s", rawURL, Reason(err))
	if after > 0 {
		text += "; gave up after " + seconds(after)
	}
	return text
}

// seconds says d as a person reads a short wait: "4 s", "0.2 s".
func seconds(d time.Duration) string {
	if d < 10*time.Second && d%time.Second != 0 {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
}
