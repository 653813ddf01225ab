package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"walletsync/agent/api"
	"walletsync/syncer"
	"walletsync/wallet"
)

// TestCancelledWords_SayWhatWasKept: what `walletsync cancel` says a cancelled task kept is
// true: a storage server's chunk sync that stored pages without a numbered checkpoint says
// so (it never says "Nothing had been stored yet"), a page sync names its checkpoint, and
// only a sync that stored nothing says nothing was stored.
func TestCancelledWords_SayWhatWasKept(t *testing.T) {
	tests := []struct {
		name      string
		kind      api.TaskKind
		sessions  []syncer.Result
		want, not string
	}{
		{"chunks stored at a storage server", api.KindSync,
			[]syncer.Result{{Counters: syncer.Counters{Pages: 21, Rows: 17024}, Resumable: true}},
			"21 pages (17024 rows) were stored at the destination and are kept; the next run continues from there", "Nothing"},
		{"pages up to a checkpoint", api.KindSync,
			[]syncer.Result{{Counters: syncer.Counters{Pages: 4, Rows: 900}, Checkpoint: wallet.Checkpoint{Seq: 4, Table: 2}, Resumable: true}},
			"Everything up to checkpoint 4 (" + string(wallet.SyncOrder[2].Name) + ") is kept; the next run continues from there", "Nothing"},
		{"pages without a change journal", api.KindSync,
			[]syncer.Result{{Counters: syncer.Counters{Pages: 2, Rows: 10}, Checkpoint: wallet.Checkpoint{Seq: 2}}},
			"the next run starts again at the first table", "continues from there"},
		{"nothing stored", api.KindSync, []syncer.Result{{}}, "Nothing had been stored yet", "kept"},
		{"no result", api.KindSync, nil, "Nothing had been stored yet", "kept"},
		{"a backup file", api.KindBackup, nil, "discarded", "continues from there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := api.Task{Kind: tt.kind, State: api.TaskCancelled}
			if tt.sessions != nil {
				b, err := json.Marshal(api.SyncResult{Sessions: tt.sessions})
				if err != nil {
					t.Fatal(err)
				}
				task.Result = b
			}
			got := cancelledWords(task)
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
				t.Errorf("cancelledWords = %q; want %q in it, and not %q", got, tt.want, tt.not)
			}
		})
	}
}
