package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSignInCommand is the command a sign-in page offers when ServerOptions names none.
const DefaultSignInCommand = "walletsync open"

// signInReason says why a sign-in page is shown. The strings are the page's data-reason,
// which tests read.
type signInReason string

const (
	signInNoCookie signInReason = "signed-out" // no cookie, a wrong one, or an expired session
	signInLinkUsed signInReason = "link-used"  // a login URL used before, expired or wrong
)

// signInStyle is the sign-in page's only style sheet, inline: the dashboard's files sit
// behind the sign-in they would explain. The page's Content-Security-Policy allows exactly
// this text, by its hash, and nothing else at all (no script).
const signInStyle = `:root{color-scheme:light dark;--bg:#f6f7f9;--fg:#1d2430;--muted:#5b6575;--card:#fff;--line:#d9dde4;--accent:#1f6feb;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--bg:#11151b;--fg:#e4e8ee;--muted:#9aa4b2;--card:#1a2029;--line:#2c3440;--accent:#6ea8fe;--warn:#e3b341}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:40rem;margin:8vh auto;padding:2rem;background:var(--card);border:1px solid var(--line);border-radius:12px}
h1{margin:0 0 .5rem;font-size:1.5rem}p,li{margin:.5rem 0}.muted{color:var(--muted);font-size:.9rem}
.reason{border-left:4px solid var(--warn);padding:.25rem .75rem}ol{padding-left:1.25rem}
code{font:.95em ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:.1em .35em;user-select:all}`

var signInTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in to walletsync</title><style>{{.Style}}</style></head>
<body><main data-page="signin" data-reason="{{.Reason}}">
<h1>Sign in to walletsync</h1>
{{if eq .Reason "link-used"}}<p class="reason" data-testid="signin-reason">This sign-in link has already been used or has expired: each link works once, within {{.LinkTTL}}, so that one left in a terminal, a browser history or a screenshot is soon worth nothing.</p>
{{else}}<p class="reason" data-testid="signin-reason">This browser is not signed in to the walletsync agent at {{.URL}}, or its sign-in has expired.</p>
{{end}}<p>Get a fresh sign-in link in one of these ways:</p>
<ol data-testid="signin-ways">
<li>In a terminal, run <code data-testid="signin-command">{{.Command}}</code>: it opens the dashboard here, signed in (with <code>--print-only</code> it prints the link instead).</li>
<li>In the walletsync tray icon's menu, choose <strong>Open dashboard</strong>.</li>
<li>Open the walletsync desktop window: it is always signed in.</li>
</ol>
<p class="muted">Once signed in, this browser stays signed in for {{.SessionTTL}}, renewed each day you open the dashboard. Your wallet and its backups carry on while you are signed out.</p>
</main></body></html>
`))

// signInCSP is the sign-in page's Content-Security-Policy: its own inline style and
// nothing else.
func signInCSP() string {
	sum := sha256.Sum256([]byte(signInStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// isPageRequest reports whether r asks for a page of the dashboard (a GET or HEAD outside
// /api/), which a sign-in page answers instead of a JSON error.
func isPageRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && !strings.HasPrefix(r.URL.Path, "/api/")
}

// signIn answers with the sign-in page, status 401: why this browser is not signed in,
// and the ways to get a fresh link.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, reason signInReason) {
	s.log.Debug("sign-in page", "path", r.URL.Path, "reason", string(reason))
	var buf bytes.Buffer
	err := signInTemplate.Execute(&buf, map[string]any{
		"Style": template.CSS(signInStyle), "Reason": string(reason), "URL": s.URL(), "Command": s.opts.SignInCommand,
		"LinkTTL": words(s.opts.LoginTTL), "SessionTTL": words(s.opts.SessionTTL),
	})
	if err != nil { // the template is fixed and its data plain strings: a bug
		s.writeError(w, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", signInCSP())
	w.WriteHeader(http.StatusUnauthorized)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes()) // the status is sent: a failed body has nobody to tell
	}
}

// words says d as a person would: "two minutes", "30 days".
func words(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= 2*time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	case d == 2*time.Minute:
		return "two minutes"
	case d >= 2*time.Minute && d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return d.String()
}
