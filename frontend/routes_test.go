package frontend_test

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"walletsync/agent/api"
	"walletsync/frontend"
)

var (
	// tableRoute is one constant of agent/api/routes.go: Route = "METHOD /api/v1/...".
	tableRoute = regexp.MustCompile(`Route\s*=\s*"([A-Z]+) (/api/v1/[^"]*)"`)
	// jsRoute is one route api.js calls: request('METHOD', '/api/v1/...' or `...${...}...`).
	jsRoute = regexp.MustCompile("request\\('([A-Z]+)', ['`](/api/v1/[^'`]*)['`]")
	// wildcard is a path segment filled in: {id} in Go, ${enc(id)} in JavaScript.
	wildcard = regexp.MustCompile(`\$?\{[^}]*\}`)
)

// web/api.js is the only file of the dashboard that names an API path, and every route it
// calls is one of the agent's route table, method and path.
func TestAPIJS_NamesOnlyTheAgentsRoutes(t *testing.T) {
	src, err := os.ReadFile("../agent/api/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]bool{}
	for _, m := range tableRoute.FindAllStringSubmatch(string(src), -1) {
		table[m[1]+" "+wildcard.ReplaceAllString(m[2], "{}")] = true
	}
	if len(table) < 30 {
		t.Fatalf("found %d routes in agent/api/routes.go", len(table))
	}

	web := frontend.Assets()
	js, err := fs.ReadFile(web, "api.js")
	if err != nil {
		t.Fatal(err)
	}
	calls := jsRoute.FindAllStringSubmatch(string(js), -1)
	if len(calls) < 20 {
		t.Fatalf("api.js calls %d routes", len(calls))
	}
	for _, m := range calls {
		if r := m[1] + " " + wildcard.ReplaceAllString(m[2], "{}"); !table[r] {
			t.Errorf("api.js calls %s %s, which is not in agent/api/routes.go", m[1], m[2])
		}
	}
	if !table["GET /api/v1/events"] || !strings.Contains(string(js), "`${base}/api/v1/events`") {
		t.Error("api.js does not name the event stream of the table")
	}

	err = fs.WalkDir(web, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path == "api.js" {
			return err
		}
		b, err := fs.ReadFile(web, path)
		if strings.Contains(string(b), "/api/") {
			t.Errorf("%s names an API path; only api.js does", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The dashboard's password fields ask for the agent's minimum (api.MinPasswordLength), the
// one rule the agent's export route and `walletsync export` apply too: every passwordPair
// takes its default, and the default is that number.
func TestPasswordPair_AsksForTheAgentsMinimum(t *testing.T) {
	js, err := fs.ReadFile(frontend.Assets(), "ui.js")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("export function passwordPair(min = %d)", api.MinPasswordLength)
	if !strings.Contains(string(js), want) {
		t.Errorf("ui.js does not declare %q", want)
	}
	err = fs.WalkDir(frontend.Assets(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		b, err := fs.ReadFile(frontend.Assets(), path)
		if m := regexp.MustCompile(`passwordPair\([^)]`).Find(b); m != nil && !strings.Contains(string(b), want) {
			t.Errorf("%s gives passwordPair a minimum of its own: %s", path, m)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
