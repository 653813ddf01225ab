package api

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// loginPage leads the browser on to the dashboard. It is a page rather than a redirect
// because a SameSite=Strict cookie is not sent on a redirect that began on another site
// (a link in a mail, a chat): the page's own navigation is same-site.
const loginPage = `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">` +
	`<title>walletsync</title><p><a href="/">Open the walletsync dashboard</a></p>` + "\n"

// DefaultLoginTTL is how long a login URL works, unless it is used first.
const DefaultLoginTTL = 2 * time.Minute

// maxLoginCodes bounds the outstanding codes; issuing one more drops the one that expires
// first.
const maxLoginCodes = 16

// loginCodes are the one-time codes of login URLs. A code is 128 random bits, works once
// and expires after ttl: it travels through a terminal, a browser's history and perhaps
// a screenshot, so it must be worthless soon after. The token it trades for never appears
// in a URL.
type loginCodes struct {
	ttl time.Duration

	mu    sync.Mutex
	codes map[string]time.Time // code -> expiry
}

func newLoginCodes(ttl time.Duration) *loginCodes {
	return &loginCodes{ttl: ttl, codes: map[string]time.Time{}}
}

// issue returns a new code.
func (l *loginCodes) issue() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	code := hex.EncodeToString(b[:])
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c, exp := range l.codes {
		if !now.Before(exp) {
			delete(l.codes, c)
		}
	}
	if len(l.codes) >= maxLoginCodes {
		first := ""
		for c, exp := range l.codes {
			if first == "" || exp.Before(l.codes[first]) {
				first = c
			}
		}
		delete(l.codes, first)
	}
	l.codes[code] = now.Add(l.ttl)
	return code
}

// redeem reports whether code is outstanding and unexpired, and spends it either way.
func (l *loginCodes) redeem(code string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.codes[code]
	delete(l.codes, code)
	return ok && time.Now().Before(exp)
}
