package agent

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/wallet"
)

// routeConstants returns every Route constant that api/routes.go declares: the table.
func routeConstants(t *testing.T) []api.Route {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("api", "routes.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var routes []api.Route
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Route" {
				for _, v := range vs.Values {
					s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					routes = append(routes, api.Route(s))
				}
			}
		}
		return true
	})
	if len(routes) < 30 {
		t.Fatalf("found %d routes in api/routes.go", len(routes))
	}
	return routes
}

// Every route of the table is served by a running agent, under exactly its pattern.
func TestRoutes_TableIsServed(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	for _, r := range routeConstants(t) {
		args := make([]string, strings.Count(string(r), "{"))
		for i := range args {
			args[i] = "x"
		}
		req, err := http.NewRequest(r.Method(), a.srv.URL()+r.Path(args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		if pattern := a.srv.Pattern(req); pattern != string(r) {
			t.Errorf("%s is served as %q", r, pattern)
		}
	}
}

func TestAgent_WithoutDashboardServesTheAPIAlone(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ae *api.APIError
	if err := c.Call(t.Context(), api.Route("GET /"), nil, nil); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("GET / without a dashboard = %v, want 404", err)
	}
	a.Close(t.Context())

	e.opts.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`"the dashboard"`)) })
	launchAgent(t, e.opts)
	var got string
	if err := apiClient(t, e.opts.Dir).Call(t.Context(), api.Route("GET /"), nil, &got); err != nil || got != "the dashboard" {
		t.Fatalf("GET / = %q, %v; want the handler's answer", got, err)
	}
}

// The typed client against a real agent: every call reaches its route, wildcards are
// escaped, passwords travel, and the event stream resumes from a cursor.
func TestClient_AgainstARealAgent(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := waitCtx(t)
	wait := func(task api.Task, err error) api.Task {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		done, err := a.tasks.Wait(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		return done
	}

	st, err := c.Status(ctx)
	if err != nil || st.Version != "test" {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	dests, err := c.Destinations(ctx)
	if err != nil || len(dests) != 2 || dests[0].ID != "file" {
		t.Fatalf("Destinations = %+v, %v", dests, err)
	}
	run := wait(c.Run(ctx, "file"))
	if run.State != api.TaskSucceeded || run.Kind != api.KindSync {
		t.Fatalf("Run = %+v", run)
	}
	if ov, err := c.Overview(ctx); err != nil || ov.Destinations[0].LastSuccess.IsZero() {
		t.Fatalf("Overview = %+v, %v", ov, err)
	}
	if tasks, err := c.Tasks(ctx); err != nil || tasks[0].ID != run.ID {
		t.Fatalf("Tasks = %+v, %v", tasks, err)
	}

	// An id with a slash stays one path segment: the agent looks it up and does not find it,
	// where an unescaped one would reach another route or none.
	var ae *api.APIError
	if _, err := c.Run(ctx, "file/../folder"); !errors.As(err, &ae) || ae.Code != "not_found" || !strings.Contains(ae.Message, `"file/../folder"`) {
		t.Fatalf("Run(file/../folder) = %v, want the destination not found", err)
	}
	if _, err := c.Cancel(ctx, "no such/task"); !errors.As(err, &ae) || ae.Code != "not_found" || !strings.Contains(ae.Message, `"no such/task"`) {
		t.Fatalf("Cancel = %v, want the task not found", err)
	}

	// The password reaches the agent in clear: the export is readable with it.
	file := filepath.Join(e.dir, "export.brc39")
	pw := api.NewSecret(testPassword)
	if ex := wait(c.Export(ctx, api.ExportRequest{IdentityKey: e.identity, Path: file, Password: pw})); ex.State != api.TaskSucceeded {
		t.Fatalf("Export = %+v", ex)
	}
	if pre := wait(c.PreviewImport(ctx, api.ImportRequest{Path: file, Password: pw})); pre.State != api.TaskSucceeded || pre.Kind != api.KindImportPreview {
		t.Fatalf("PreviewImport = %+v", pre)
	}
	if _, err := c.Import(ctx, api.ImportRequest{Path: file, Password: pw}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("Import without confirm = %v, want 400", err)
	}
	imp := wait(c.Import(ctx, api.ImportRequest{Path: file, Password: pw, Confirm: true, Mode: wallet.ImportMerge}))
	if imp.State != api.TaskSucceeded || imp.Kind != api.KindImport {
		t.Fatalf("Import = %+v", imp)
	}

	// Events: the whole retained history, then again from a cursor in the middle: the
	// second stream starts right after it.
	collect := func(cursor string, until func(api.StreamedEvent) bool) (events []api.StreamedEvent, next string) {
		t.Helper()
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		next, opened, err := c.Events(sctx, cursor, func(ev api.StreamedEvent) {
			events = append(events, ev)
			if until(ev) {
				stop()
			}
		})
		if !opened || !errors.Is(err, context.Canceled) {
			t.Fatalf("Events = %v (opened %v), want it stopped by the handler", err, opened)
		}
		return events, next
	}
	all, _ := collect("", func(ev api.StreamedEvent) bool {
		return ev.Type == api.EventTaskFinished && strings.Contains(string(ev.Data), imp.ID)
	})
	mid := all[len(all)/2]
	rest, next := collect(a.bus.Epoch()+"-"+strconv.FormatUint(mid.Seq, 10), func(ev api.StreamedEvent) bool { return ev.Seq == all[len(all)-1].Seq })
	if rest[0].Seq != mid.Seq+1 || next != a.bus.Epoch()+"-"+strconv.FormatUint(all[len(all)-1].Seq, 10) {
		t.Fatalf("resumed at seq %d (cursor %s), want %d", rest[0].Seq, next, mid.Seq+1)
	}

	// Pauses.
	cfg, err := c.Pause(ctx, "file", time.Hour)
	if p := cfg.Destinations[0].Pause; err != nil || p == nil || p.Until.IsZero() {
		t.Fatalf("Pause = %+v, %v", cfg.Destinations[0], err)
	}
	if cfg, err = c.Resume(ctx, "file"); err != nil || cfg.Destinations[0].Pause != nil {
		t.Fatalf("Resume = %+v, %v", cfg.Destinations[0], err)
	}
	now := time.Now()
	if cfg, err = c.PauseAll(ctx, 0); err != nil || !cfg.Destinations[0].Paused(now) || !cfg.Destinations[1].Paused(now) {
		t.Fatalf("PauseAll = %+v, %v", cfg.Destinations, err)
	}
	// Last: resumed, the folder destination, which never ran, starts its backup.
	if cfg, err = c.ResumeAll(ctx); err != nil || cfg.Destinations[0].Paused(now) || cfg.Destinations[1].Paused(now) {
		t.Fatalf("ResumeAll = %+v, %v", cfg.Destinations, err)
	}

}
