package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"walletsync/agent/api"
	"walletsync/cli/command"
	"walletsync/wallet"
)

// cancelPoll is how often `walletsync cancel` asks whether the task has reached its safe
// stop: a page commit takes milliseconds, so a few polls a second answer at once without
// loading the agent.
const cancelPoll = 200 * time.Millisecond

// runCancel asks the agent to cancel a task, waits until the task has stopped at its next
// safe point, and says what the cancel kept (cancelledWords); --json prints the ended task.
func runCancel(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("cancel", "TASK [--data-dir D] [--json]", out)
	af := addAgentFlags(fs)
	asJSON := fs.Bool("json", false, "print the ended task as JSON")
	if err := command.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one task", command.ErrUsage)
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	t, err := c.Cancel(ctx, fs.Arg(0))
	for err == nil && !t.State.Terminal() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for task %s to stop: %w", t.ID, ctx.Err())
		case <-time.After(cancelPoll):
		}
		t, err = c.Task(ctx, t.ID)
	}
	if err != nil {
		return err
	}
	return command.Report(out, *asJSON, t, func(w io.Writer) {
		fmt.Fprintf(w, "task %s: %s %s %s\n", t.ID, t.Kind, t.Target, t.State)
		if t.State == api.TaskCancelled {
			fmt.Fprintln(w, cancelledWords(t))
		}
	})
}

// cancelledWords says what a cancelled task left behind and what its next run does, as the
// dashboard's task panel says it (frontend/web/task-panel.js): a sync keeps what it stored
// at the destination (its checkpoint, or, for a storage server's chunks, the pages it
// stored), and only a sync whose session is resumable continues from there.
func cancelledWords(t api.Task) string {
	switch t.Kind {
	case api.KindSync:
		var res api.SyncResult
		_ = json.Unmarshal(t.Result, &res) // no result: nothing was stored
		var pages, rows int64
		for _, s := range res.Sessions {
			pages, rows = pages+s.Pages, rows+s.Rows
		}
		if len(res.Sessions) == 0 {
			return "Cancelled safely. Nothing had been stored yet; the next run starts at the beginning."
		}
		last := res.Sessions[len(res.Sessions)-1]
		var kept string
		switch cp := last.Checkpoint; {
		case cp.Seq > 0:
			kept = fmt.Sprintf("Cancelled safely. Everything up to checkpoint %d (%s) is kept; ", cp.Seq, wallet.SyncOrder[min(cp.Table, len(wallet.SyncOrder)-1)].Name)
		case pages > 0:
			kept = fmt.Sprintf("Cancelled safely. %d pages (%d rows) were stored at the destination and are kept; ", pages, rows)
		default:
			return "Cancelled safely. Nothing had been stored yet; the next run starts at the beginning."
		}
		if last.Resumable {
			return kept + "the next run continues from there."
		}
		return kept + "the wallet keeps no change journal, so the next run starts again at the first table (nothing is stored twice)."
	case api.KindBackup:
		return "Cancelled. The backup file being written was discarded: no partial file is left in the folder. The next run writes a new backup file from the start."
	case api.KindBundle:
		return "Cancelled. The bundle being written was discarded: no partial bundle is left in the folder. The next run makes a new bundle."
	case api.KindImport:
		return "Cancelled. If part of the file was already merged, finish that import (the same file again) or abandon it (walletsync import --abandon)."
	}
	return "Cancelled. Nothing was changed."
}
