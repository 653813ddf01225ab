package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSessionTTL is how long a browser stays signed in after a login URL or its last
// visit to a page of the dashboard. Thirty days: long enough that a person who looks at
// their backups once a week or once a month never meets the sign-in page, short enough
// that a browser profile copied off a machine, or one that stopped being used, is
// worthless within a month. Anyone who can read the browser's cookie jar can already read
// the files of the same user, the agent's token among them, so a longer life would not
// widen what such a reader gets; but an expiry bounds what a cookie is worth once copied.
// Every browser can be signed out at once by replacing the session key (see
// ServerOptions.SessionKey).
const DefaultSessionTTL = 30 * 24 * time.Hour

// sessionRenewAfter is how old a session may get before a page visit renews it: at most one
// Set-Cookie a day per browser, not one per request.
const sessionRenewAfter = 24 * time.Hour

// sessionVersion prefixes every session cookie value, so that a later format can be told
// apart (and an old cookie, holding the token itself, is refused).
const sessionVersion = "s1"

// sessions signs and checks the sign-in cookies of browsers. A cookie's value is
// "s1.<expiry, Unix seconds>.<HMAC-SHA256 of the cookie's name and expiry, hex>": the
// token never leaves the agent's data folder, the cookie proves only that this agent
// signed this browser in, until its expiry; and it works only under its own name (one
// agent's port).
type sessions struct {
	ttl time.Duration

	mu  sync.RWMutex
	key []byte
	// forgotten is closed when the key is replaced, which ends the event streams that a
	// cookie of the old key opened.
	forgotten chan struct{}
}

// newSessions returns sessions signed with key, or with a fresh random key (sessions that
// end with the server) when key is empty.
func newSessions(key []byte, ttl time.Duration) *sessions {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key) // never fails (crypto/rand)
	}
	return &sessions{key: key, ttl: ttl, forgotten: make(chan struct{})}
}

// setKey replaces the key: every cookie signed before stops working.
func (s *sessions) setKey(key []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = append([]byte(nil), key...)
	close(s.forgotten)
	s.forgotten = make(chan struct{})
}

// forgottenChan returns the channel that is closed when the current key is replaced.
func (s *sessions) forgottenChan() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.forgotten
}

func (s *sessions) mac(name string, expiry int64) string {
	s.mu.RLock()
	m := hmac.New(sha256.New, s.key)
	s.mu.RUnlock()
	m.Write([]byte("walletsync browser session\x00" + name + "\x00" + strconv.FormatInt(expiry, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// cookie returns a new session cookie named name, valid for ttl from now.
func (s *sessions) cookie(name string, now time.Time) *http.Cookie {
	exp := now.Add(s.ttl).Unix()
	return &http.Cookie{Name: name, Value: sessionVersion + "." + strconv.FormatInt(exp, 10) + "." + s.mac(name, exp),
		Path: "/", MaxAge: int(s.ttl / time.Second), Expires: time.Unix(exp, 0),
		HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// check returns the expiry of the session cookie value v of cookie name, and whether it is
// one this server signed and unexpired at now.
func (s *sessions) check(name, v string, now time.Time) (time.Time, bool) {
	ver, rest, ok := strings.Cut(v, ".")
	if !ok || ver != sessionVersion {
		return time.Time{}, false
	}
	expText, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return time.Time{}, false
	}
	exp, err := strconv.ParseInt(expText, 10, 64)
	if err != nil || !hmac.Equal([]byte(mac), []byte(s.mac(name, exp))) {
		return time.Time{}, false
	}
	expiry := time.Unix(exp, 0)
	// A cookie whose expiry lies beyond what this server's ttl could have given is refused:
	// a shorter ttl applies to the cookies of a longer one too.
	if !now.Before(expiry) || expiry.After(now.Add(s.ttl)) {
		return time.Time{}, false
	}
	return expiry, true
}

// renew reports whether a session of expiry should be given a fresh cookie at now: once it
// is older than sessionRenewAfter.
func (s *sessions) renew(expiry, now time.Time) bool {
	return expiry.Sub(now) < s.ttl-sessionRenewAfter
}
