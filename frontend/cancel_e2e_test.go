package frontend_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/agent/api"
	"walletsync/localstore"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
)

// TestDashboard_CancelServerSyncSaysWhatWasKept: a storage server's first sync over the
// toolbox's wire, cancelled after some chunks were stored, says how many were stored and
// kept and that the next run continues (it said "Nothing had been stored yet; the next run
// starts at the beginning", since such a session has no numbered checkpoint).
func TestDashboard_CancelServerSyncSaysWhatWasKept(t *testing.T) {
	d := newDash(t)
	// walletsync serve with the toolbox's JSON-RPC only: the agent's push speaks BRC-40 chunks.
	srv, err := serve.Open(t.Context(), serve.Options{DBPath: filepath.Join(d.dir, "server.sqlite"),
		Signer: auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(80))), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls, done := make(chan serve.Listening, 1), make(chan error, 1)
	go func() { done <- srv.Run(ctx, func(at serve.Listening) { urls <- at }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	url := (<-urls).URL

	const id = "server"
	d.api(api.RouteSecretSet, map[string]string{"value": hex.EncodeToString(localstore.FixtureRootKey(1))}, nil, "storage-key-"+id)
	d.api(api.RouteDestinationAdd, api.Destination{ID: id, Name: "Storage server", Kind: api.DestinationStorageServer, Path: url,
		Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(24 * time.Hour)}, Pause: &api.Pause{}}, nil)

	d.page("destinations")
	row := `[data-destination=` + id + `]`
	d.do(chromedp.Click(byText(row+` button`, "Run now")))
	d.waitFor(`Number(document.querySelector('`+row+` .task-panel .stats dd')?.textContent.replace(/\D/g, '')) >= 2`, "two chunks stored")
	d.do(chromedp.Click(byText(row+` .task-panel button`, "Cancel")))
	d.waitFor(`document.querySelector('`+row+` .task-panel[data-state=cancelled]')`, "the cancelled state")

	task := d.newestTask(api.KindSync, id)
	var res api.ServerPushResult
	if err := json.Unmarshal(task.Result, &res); err != nil || task.State != api.TaskCancelled || len(res.Sessions) != 1 {
		t.Fatalf("the cancelled push: %s, result %s (%v)", task.State, task.Result, err)
	}
	s := res.Sessions[0]
	if s.Pages == 0 || s.Checkpoint.Seq != 0 || !s.Resumable {
		t.Fatalf("the push stored %d chunks, checkpoint %d, resumable %v: not the case under test", s.Pages, s.Checkpoint.Seq, s.Resumable)
	}
	line := d.text(row + " .state-line")
	if strings.Contains(line, "Nothing had been stored") || !strings.Contains(line, "were stored at the destination and are kept") ||
		!strings.Contains(line, "the next run continues from there") {
		t.Errorf("the panel says %q; the push stored %d chunks (%d rows)", line, s.Pages, s.Rows)
	}
	d.shot("cancelled-server-sync")
}
