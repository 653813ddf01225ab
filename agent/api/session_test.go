package api

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSessions_CheckRefusesWhatThisServerDidNotSign(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSessions([]byte("key one"), DefaultSessionTTL)
	c := s.cookie("walletsync-7421", now)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != 30*24*60*60 || !c.Expires.Equal(now.Add(DefaultSessionTTL)) {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, 30 days", c)
	}
	exp, mac, _ := strings.Cut(strings.TrimPrefix(c.Value, sessionVersion+"."), ".")
	for _, tc := range []struct {
		name, cookie, value string
		sessions            *sessions
		at                  time.Time
		ok                  bool
	}{
		{"its own cookie", c.Name, c.Value, s, now, true},
		{"a day before it expires", c.Name, c.Value, s, now.Add(DefaultSessionTTL - 24*time.Hour), true},
		{"at its expiry", c.Name, c.Value, s, now.Add(DefaultSessionTTL), false},
		{"another key", c.Name, c.Value, newSessions([]byte("key two"), DefaultSessionTTL), now, false},
		{"another agent's name (port)", "walletsync-7422", c.Value, s, now, false},
		{"a later expiry, same MAC", c.Name, sessionVersion + "." + "1900000000." + mac, s, now, false},
		{"beyond a shorter TTL", c.Name, c.Value, newSessions([]byte("key one"), time.Hour), now, false},
		{"another version", c.Name, "s0." + exp + "." + mac, s, now, false},
		{"no MAC", c.Name, sessionVersion + "." + exp, s, now, false},
		{"a token", c.Name, strings.Repeat("ab", 32), s, now, false},
	} {
		if _, ok := tc.sessions.check(tc.cookie, tc.value, tc.at); ok != tc.ok {
			t.Errorf("%s: check = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

func TestSessions_RenewOncePerDay(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSessions(nil, DefaultSessionTTL)
	exp, ok := s.check("n", s.cookie("n", now).Value, now)
	if !ok {
		t.Fatal("a fresh cookie does not check")
	}
	if s.renew(exp, now.Add(23*time.Hour)) {
		t.Error("renewed within the day")
	}
	if !s.renew(exp, now.Add(25*time.Hour)) {
		t.Error("not renewed after a day")
	}
}

func TestWords_SaysDurationsAsAPersonWould(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Minute: "two minutes", 10 * time.Minute: "10 minutes", 30 * 24 * time.Hour: "30 days", 6 * time.Hour: "6 hours", 90 * time.Second: "1m30s",
	} {
		if got := words(d); got != want {
			t.Errorf("words(%v) = %q, want %q", d, got, want)
		}
	}
}
